"""A real browser (headless Debian Chromium via Playwright) opens every page of the registry,
waits for its charts, and fails on any Streamlit exception element or browser console error.
Screenshots land in test-artifacts/ to look at."""

from urllib.parse import urljoin, urlparse

import pytest
from conftest import ARTIFACTS, wait_idle
from playwright.sync_api import expect

from lab_ui.nav import HOME, PAGES

pytestmark = pytest.mark.browser
CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg'
# Pages whose first screen has no chart: Practice opens on a question, its progress chart comes
# with the first answer (an empty chart of zeros taught nothing).
NO_CHART_AT_FIRST = {"practice"}


HF_PAGE = "hf_heads"
STALL_MS = 120_000  # a model load whose progress bar has not moved for this long has hung


@pytest.fixture(scope="session")
def smollm2_cached():
    """SmolLM2's de-quantized cache folder, filled here when it is missing (the GGUF read: 20–120 s
    on a busy 2-core machine): the server's first load of the page then reads the cache."""
    from attn_core.hf import shipped

    if not all((shipped.cache_folder() / f).is_file() for f in shipped.CACHED_FILES):
        shipped.load_shipped()
    return shipped.cache_folder()


def wait_for_model(page) -> None:
    """Wait until the Hugging Face page says its model is loaded ("loaded in … s"), for as long as
    its progress bar keeps moving: each wait ends when the bar's text changes or the model is in."""
    loaded = "document.body.innerText.includes(' loaded in ')"
    bar = "[...document.querySelectorAll('[data-testid=stProgress]')].map(e => e.innerText).join('|')"
    while not page.evaluate(loaded):
        now = page.evaluate(bar)
        page.wait_for_function(f"([was]) => {loaded} || {bar} !== was", arg=[now], timeout=STALL_MS)


def open_page(page, server_url: str, info, request) -> None:
    """Open a page of the registry (home at the root) and wait until its script has run; the
    Hugging Face page first waits for its model (SmolLM2's cache filled by ``smollm2_cached``)."""
    if info.url_path == HF_PAGE:
        request.getfixturevalue("smollm2_cached")
    page.goto(f"{server_url}/{'' if info is HOME else info.url_path}")
    page.wait_for_selector("h1", timeout=60_000)
    if info.url_path == HF_PAGE:
        wait_for_model(page)  # what the page needs, however long the load takes while it moves
    wait_idle(page, 60_000)


# The pages come first: the session's server is fresh, so the first visit is a deep link.
@pytest.mark.parametrize("info", [*PAGES, HOME], ids=lambda p: p.url_path)
def test_page_renders_without_errors(server_url, page, info, request):
    open_page(page, server_url, info, request)
    if info is not HOME and info.url_path not in NO_CHART_AT_FIRST:
        page.wait_for_selector(CHART, timeout=60_000)
    assert page.locator("[data-testid=stException]").count() == 0
    assert page.get_by_text("Page not found").count() == 0
    # The sidebar lists the registry's titles: the page ran through app.py's st.navigation, even
    # as the first visit of a fresh server (see lab_ui._enter_through_app).
    nav = page.get_by_test_id("stSidebarNavLink").all_inner_texts()
    assert [t.strip().splitlines()[-1] for t in nav] == [p.title for p in (HOME, *PAGES)]  # icon, title
    page.screenshot(path=str(ARTIFACTS / f"{info.url_path}.png"), full_page=True)
    assert page.console_errors == []


def test_playground_interaction_in_browser(server_url, page):
    """Shared link → random input; moving a slider reruns and the SDPA badge stays green."""
    page.goto(
        f"{server_url}/playground?in_src=random&in_L=5&in_S=7&in_mask=causal+%28bottom-right%2C+cached+prefix%29"
    )
    wait_idle(page, 60_000)
    page.wait_for_selector(CHART, timeout=60_000)
    slider = page.get_by_role("slider", name="L (queries)")
    expect(slider).to_have_value("5")
    slider.focus()
    page.keyboard.press("ArrowLeft")
    expect(slider).to_have_value("4")
    wait_idle(page)
    expect(page.get_by_test_id("stMetricValue").first).to_have_text("4")
    assert "in_L=4" in page.url  # the view is in the address bar, ready to share
    assert page.get_by_text("matches torch SDPA (float64)").count() >= 1
    assert page.locator("[data-testid=stException]").count() == 0
    page.screenshot(path=str(ARTIFACTS / "playground-random.png"), full_page=True)
    assert page.console_errors == []


def test_slash_home_opens_the_home_page_without_a_dialog(server_url, page):
    """Streamlit serves the default page at the root only; /home (its url_path, in shared links)
    must open the home page, not a "Page not found" dialog."""
    for _ in range(2):  # the first visit of a fresh server runs before st.navigation exists
        page.goto(f"{server_url}/home")
        wait_idle(page)
        page.wait_for_timeout(1000)  # the dialog comes after the script has finished
        expect(page.get_by_role("heading", name="Attention Lab")).to_be_visible()
        expect(page.get_by_text("Page not found")).to_have_count(0)
    assert page.console_errors == []


def test_a_renamed_pages_old_link_opens_it_with_its_settings(server_url, page):
    """The Kernels page was served at /bench before its file was named for what it shows: a link
    saved then opens the Kernels page with the link's settings, not a "Page not found" dialog."""
    for _ in range(2):  # the first visit of a fresh server runs before st.navigation exists
        page.goto(f"{server_url}/bench?kb_H=2&kb_Hkv=1")
        wait_idle(page)
        page.wait_for_timeout(1000)  # the dialog comes after the script has finished
        expect(page.get_by_role("heading", name="Kernels")).to_be_visible()
        expect(page.get_by_text("Page not found")).to_have_count(0)
    assert "kb_H=2" in page.url
    assert page.console_errors == []


def test_no_request_leaves_the_machine_on_any_page(server_url, page, request):
    """An offline classroom network: every request of every page (the favicon included, which a
    material or emoji icon would fetch from a font CDN) goes to this server."""
    here = urlparse(server_url).hostname
    away: list[str] = []
    page.on("request", lambda r: None if _local(r.url, here) else away.append(r.url))
    for info in [HOME, *PAGES]:
        open_page(page, server_url, info, request)
        icon = page.locator("link[rel~='icon']").first.get_attribute("href")
        assert icon and _local(urljoin(page.url, icon), here), f"{info.url_path}: favicon at {icon}"
    assert away == []


def _local(url: str, host: str | None) -> bool:
    """Whether a request stays on this machine (the server, or a data:/blob: URL)."""
    parsed = urlparse(url)
    return parsed.scheme in ("data", "blob", "about") or parsed.hostname in (host, "127.0.0.1", "localhost")
