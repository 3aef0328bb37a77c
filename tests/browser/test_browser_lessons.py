"""Lessons and figures for slides in a real browser: ← and → step a lesson (and leave a focused
slider alone), a room's follower moves with the presenter's step, a phone 400 px wide reads the
narration above the figure, and a figure's standalone HTML opens with the network blocked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ARTIFACTS, wait_idle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
PANEL = ".st-key-lesson_panel"


def _step_shown(pg, n: int, of: int, timeout: float = 20_000) -> None:
    expect(pg.locator(PANEL).get_by_text(f"step {n} of {of}")).to_be_visible(timeout=timeout)
    wait_idle(pg)


def test_arrow_keys_step_the_lesson_and_leave_a_focused_slider_alone(server_url, page):
    page.goto(f"{server_url}/?lesson=causal-mask")
    wait_idle(page, 60_000)
    _step_shown(page, 1, 6)
    assert "/masks" in page.url and "lesson_step=1" in page.url
    page.locator("h1").first.click()  # focus on the page, not on a control
    page.keyboard.press("ArrowRight")
    _step_shown(page, 2, 6)
    expect(page.locator(PANEL).get_by_text("With a cached prefix the triangle moves")).to_be_visible()
    assert "lesson_step=2" in page.url and "mk_kind=causal_bottom_right" in page.url
    page.keyboard.press("ArrowRight")
    _step_shown(page, 3, 6)  # the Change-the-future section, with its own t slider
    slider = page.get_by_role("slider", name="t (0-based)")
    slider.focus()
    page.keyboard.press("ArrowRight")  # the slider's key, not the lesson's
    wait_idle(page)
    expect(page).to_have_url(re.compile(r"mk_t=3"), timeout=20_000)  # the slider moved from t = 2 to 3
    expect(page.locator(PANEL).get_by_text("step 3 of 6")).to_be_visible()
    page.locator("h1").first.click()
    page.keyboard.press("ArrowLeft")
    _step_shown(page, 2, 6)
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
