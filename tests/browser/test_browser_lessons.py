"""Lessons and figures for slides in a real browser: ← and → step a lesson (and leave a focused
slider alone), a room's follower moves with the presenter's step, a phone 400 px wide reads the
narration above the figure, and a figure's standalone HTML opens with the network blocked."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest
from conftest import ARTIFACTS, wait_idle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
PANEL = ".st-key-lesson_panel"


def _step_key(pg, key: str, n: int, of: int) -> None:
    """Press ``key`` on the page (focus on its title) until step ``n`` of ``of`` shows. The lesson's
    key handler is attached by the page's script after it draws: on a busy machine a press can land
    before it, and is then pressed again, only while the step has not moved."""
    target = pg.locator(PANEL).get_by_text(f"step {n} of {of}")
    for _ in range(6):
        pg.locator("h1").first.click()  # focus on the page, not on a control
        pg.keyboard.press(key)
        try:
            expect(target).to_be_visible(timeout=10_000)
        except AssertionError:
            wait_idle(pg)  # a press the page took late has drawn by now: never press twice for one step
            if target.count():
                break
            continue
        break
    expect(target).to_be_visible()
    wait_idle(pg)


def _step_shown(pg, n: int, of: int, timeout: float = 20_000) -> None:
    expect(pg.locator(PANEL).get_by_text(f"step {n} of {of}")).to_be_visible(timeout=timeout)
    wait_idle(pg)


def test_arrow_keys_step_the_lesson_and_leave_a_focused_slider_alone(server_url, page):
    page.goto(f"{server_url}/?lesson=causal-mask")
    wait_idle(page, 60_000)
    _step_shown(page, 1, 6)
    assert "/masks" in page.url and "lesson_step=1" in page.url
    _step_key(page, "ArrowRight", 2, 6)
    expect(page.locator(PANEL).get_by_text("With a cached prefix the triangle moves")).to_be_visible()
    assert "lesson_step=2" in page.url and "mk_kind=causal_bottom_right" in page.url
    _step_key(page, "ArrowRight", 3, 6)  # the Change-the-future section, with its own t slider
    slider = page.get_by_role("slider", name="t (0-based)")
    slider.focus()
    page.keyboard.press("ArrowRight")  # the slider's key, not the lesson's
    wait_idle(page)
    expect(page).to_have_url(re.compile(r"mk_t=3"), timeout=20_000)  # the slider moved from t = 2 to 3
    expect(page.locator(PANEL).get_by_text("step 3 of 6")).to_be_visible()
    _step_key(page, "ArrowLeft", 2, 6)
    page.screenshot(path=str(ARTIFACTS / "lesson-step.png"), full_page=True)
    assert page.console_errors == []


def test_a_follower_moves_with_the_presenter_and_reads_it_on_a_phone(server_url, browser):
    presenter_ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    phone_ctx = browser.new_context(viewport={"width": 400, "height": 860}, is_mobile=True, has_touch=True)
    try:
        presenter = presenter_ctx.new_page()
        presenter.goto(f"{server_url}/?lesson=scale-sqrt-dk")
        wait_idle(presenter, 60_000)
        _step_shown(presenter, 1, 6)
        presenter.get_by_text("Classroom").first.click()
        presenter.get_by_role("button", name="Start a room").click()
        link = presenter.locator("[data-testid=stCode]").first
        expect(link).to_contain_text("room=", timeout=20_000)
        student_link = re.search(r"https?://\S+room=\w+", link.inner_text()).group(0)

        phone = phone_ctx.new_page()
        phone.goto(student_link)
        wait_idle(phone, 60_000)
        _step_shown(phone, 1, 6, timeout=30_000)
        presenter.locator("h1").first.click()
        presenter.keyboard.press("ArrowRight")
        _step_shown(presenter, 2, 6)
        _step_shown(phone, 2, 6, timeout=30_000)  # pushed to the follower within a few seconds
        expect(phone.locator(PANEL).get_by_text("Divide by √d_k and the spread is back to 1")).to_be_visible()
        chart = phone.locator("[data-testid=stPlotlyChart] .js-plotly-plot .main-svg").first
        expect(chart).to_be_visible(timeout=30_000)
        phone.wait_for_timeout(500)  # let plotly settle its width
        layout = phone.evaluate(
            """() => {
              const panel = document.querySelector('.st-key-lesson_panel').getBoundingClientRect();
              const chart = document.querySelector('[data-testid=stPlotlyChart]').getBoundingClientRect();
              return {scroll: document.documentElement.scrollWidth, panelBottom: panel.bottom,
                      chartTop: chart.top, chartRight: chart.right, panelRight: panel.right};
            }"""
        )
        assert layout["scroll"] <= 400, layout  # one column: nothing wider than the screen
        assert layout["panelBottom"] <= layout["chartTop"], layout  # narration above the figure
        assert layout["chartRight"] <= 400 and layout["panelRight"] <= 400, layout
        assert phone.locator("[data-testid=stPlotlyChart] .modebar-container").first.is_hidden()
        phone.screenshot(path=str(ARTIFACTS / "lesson-phone-400.png"), full_page=False)
        chart.scroll_into_view_if_needed()  # the app scrolls inside its own container: a full-page
        phone.wait_for_timeout(300)  # shot would repeat the first screen, so show the figure's
        phone.screenshot(path=str(ARTIFACTS / "lesson-phone-400-figure.png"))
    finally:
        presenter_ctx.close()
        phone_ctx.close()


def test_a_figure_downloads_as_png_svg_and_offline_html(server_url, page, browser, tmp_path):
    page.goto(f"{server_url}/playground")
    wait_idle(page, 60_000)
    chart = page.locator("[data-testid=stPlotlyChart]").first
    chart.hover()
    with page.expect_download() as png:
        chart.locator('.modebar-btn[data-title="Download plot as a PNG"]').click()
    assert png.value.suggested_filename == "pg_scores.png"
    assert Path(png.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    chart.hover()
    chart.screenshot(path=str(ARTIFACTS / "figure-toolbar.png"))
    with page.expect_download() as svg:
        chart.locator(".modebar-btn.attn-lab-svg").click()
    assert svg.value.suggested_filename == "pg_scores.svg"
    assert Path(svg.value.path()).read_bytes()[:200].lstrip().startswith(b"<svg")

    page.get_by_role("button", name="For slides").first.click()
    button = page.get_by_role("button", name="Standalone HTML (works offline)")
    expect(button).to_be_visible(timeout=20_000)
    with page.expect_download() as html:
        button.click()
    saved = tmp_path / "figure.html"
    html.value.save_as(saved)
    assert saved.stat().st_size > 3_000_000  # plotly.js is inside

    offline = browser.new_context(offline=True, accept_downloads=True)
    requests: list[str] = []
    offline.route("http*://**/*", lambda route: (requests.append(route.request.url), route.abort()))
    try:
        pg = offline.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(saved.as_uri())
        pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=20_000)
        drawn = pg.evaluate("() => document.querySelector('.js-plotly-plot')._fullData[0].type")
        assert drawn == "heatmap" and pg.locator(".js-plotly-plot .hm image, .js-plotly-plot .hm").count() > 0
        with pg.expect_download() as svg_offline:
            pg.locator("#download-svg").click()
        assert Path(svg_offline.value.path()).read_bytes()[:200].lstrip().startswith(b"<svg")
        pg.screenshot(path=str(ARTIFACTS / "figure-offline-html.png"))
        assert requests == [] and errors == []
    finally:
        offline.close()
    assert page.console_errors == []


@pytest.mark.parametrize(("palette", "first_colour"), [("cb", "#fee838"), ("contrast", "#fde725")])
def test_a_palette_link_recolours_the_heatmaps(server_url, page, palette, first_colour):
    """Reversed cividis starts at #fee838, reversed viridis at #fde725 (the largest value darkest):
    the designed Blues would start near white."""
    page.goto(f"{server_url}/playground?palette={palette}&in_src=random&in_L=8&in_S=8")
    wait_idle(page, 60_000)
    page.wait_for_selector("[data-testid=stPlotlyChart] .js-plotly-plot .main-svg")
    scales = page.evaluate(
        """() => [...document.querySelectorAll('.js-plotly-plot')]
              .map((gd) => gd._fullData[0]).filter((t) => t.type === 'heatmap')
              .map((t) => [t.colorscale[0][1].replace(/ /g, ''), t.zmid !== undefined && t.zmid !== null])"""
    )
    sequential = [c for c, diverging in scales if not diverging]
    assert sequential and all(c == first_colour for c in sequential), scales
    assert f"palette={palette}" in page.url
    page.screenshot(path=str(ARTIFACTS / f"palette-{palette}.png"), full_page=True)
    assert page.console_errors == []


# An uploaded lesson's words, each a way to make a viewer's browser show a fake heading, follow a
# link out or fetch a remote image (one line each; a step holds at most 8).
HOSTILE_STEPS = [
    [
        "# WRONG FACT: softmax is linear",
        "Read [the answers](https://evil.example/phish) first.",
        "![pixel](https://tracker.example/md.gif)",
        "<img src=https://tracker.example/html.gif>",
        "see https://evil.example/x or www.evil.example or answers@evil.example",
        ":red[WRONG FACT] and :orange-badge[warning]",
        "math $\\href{https://evil.example}{x} \\includegraphics{https://tracker.example/k.png}$",
        "[the Scaling page](/scaling?sc_dk=64) is the lab's own",
    ],
    [
        "WRONG FACT\n===",
        "x <span style='background:url(https://tracker.example/css.gif)'>y</span>",
        "<https://evil.example/auto>",
        "\\\\[double escaped](https://evil.example/esc)",
        "`unclosed ![p](https://tracker.example/code.gif)",
        "[![pixel](https://tracker.example/nested.gif)](/scaling)",
        "http&colon;//evil.example/entity, www&period;evil.example and http\\://evil.example/escaped",
        "x_@evil.example",
    ],
    [":material/warning: icons and :smile: emoji, $\\htmlStyle{color:red}{x}$"],
]


# The app's own favicon (app.py: page_icon=":material/visibility:"): Streamlit's front end fetches a
# material icon as an SVG from Google's font host on every page, lesson or not.
FAVICON = "https://fonts.gstatic.com/s/i/short-term/release/materialsymbolsrounded/visibility/"


def _outside(url: str) -> bool:
    parsed = urlparse(url)
    lab = parsed.scheme in ("data", "blob") or parsed.hostname == "127.0.0.1"
    return not lab and not url.startswith(FAVICON)


def _panel_leaks(pg, server_url: str) -> dict:
    """What the narration panel holds that it must not: headings, images, links out of the lab."""
    return pg.evaluate(
        """(lab) => {
          const panel = document.querySelector('.st-key-lesson_panel');
          return {
            headings: [...panel.querySelectorAll('h1, h2, h3, h4, h5, h6')].map((h) => h.textContent),
            images: [...panel.querySelectorAll('img, image, picture, svg image')].map((i) => i.outerHTML),
            links: [...panel.querySelectorAll('a[href]')].map((a) => a.href).filter((h) => !h.startsWith(lab)),
            lab_links: [...panel.querySelectorAll('a[href]')].map((a) => a.href).filter((h) => h.startsWith(lab)),
          };
        }""",
        server_url + "/",
    )


def test_an_uploaded_lessons_narration_fetches_and_links_nothing_outside_the_lab(server_url, page):
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(server_url)
    wait_idle(page, 60_000)
    page.locator("[data-testid=stSidebar] [data-testid=stExpander] summary").filter(
        has_text="Lessons"
    ).click()
    steps = [
        {
            "page": "scaling",
            "state": {"sc_dk": 64},
            "title": f"Step {i + 1} [out](https://evil.example/t)",
            "narration": lines,
        }
        for i, lines in enumerate(HOSTILE_STEPS)
    ]
    lesson = {
        "id": "scale-sqrt-dk",
        "title": "Hostile ![t](https://tracker.example/title.gif)",
        "steps": steps,
    }
    uploader = page.locator("[data-testid=stSidebar] input[type=file]")
    uploader.set_input_files(
        files=[
            {"name": "hostile.json", "mimeType": "application/json", "buffer": json.dumps(lesson).encode()}
        ]
    )
    for n in range(1, len(HOSTILE_STEPS) + 1):
        _step_shown(page, n, len(HOSTILE_STEPS))
        leaks = _panel_leaks(page, server_url)
        assert leaks["headings"] == [] and leaks["images"] == [] and leaks["links"] == [], leaks
        expect(
            page.locator("[data-testid=stSidebar]").get_by_text(f"step {n} of {len(HOSTILE_STEPS)}")
        ).to_be_visible()
        if n == 1:  # the lab's own page stays a link; a directive is shown, not coloured
            assert leaks["lab_links"] == [f"{server_url}/scaling?sc_dk=64"], leaks
            expect(page.locator(PANEL).get_by_text(":red[WRONG FACT]")).to_be_visible()
            assert "lesson=up-" in page.url  # the server's id, not the file's
        if n < len(HOSTILE_STEPS):
            page.locator("h1").first.click()
            page.keyboard.press("ArrowRight")
    page.screenshot(path=str(ARTIFACTS / "lesson-hostile-upload.png"), full_page=True)
    assert [url for url in requests if _outside(url)] == []
    assert page.console_errors == []


def test_a_crafted_lesson_id_in_the_address_is_shown_not_linked(server_url, page):
    crafted = "a] [x](https://evil.example) :red[b"  # 35 characters: the note shows 40
    page.goto(f"{server_url}/?lesson={quote(crafted)}")
    wait_idle(page, 60_000)
    note = page.locator("[data-testid=stCaptionContainer]").filter(has_text="There is no lesson")
    expect(note).to_be_visible()
    assert note.locator("a").count() == 0
    expect(note.locator("code")).to_have_text(crafted)
    assert page.console_errors == []
