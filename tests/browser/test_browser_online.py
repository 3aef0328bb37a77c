"""The Online-softmax page in a real browser: ▶ Play walks bank's row block by block (card 15)."""

import pytest
from conftest import ARTIFACTS, wait_idle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg'


def metric_value(page, label: str):
    return page.get_by_test_id("stMetric").filter(has_text=label).get_by_test_id("stMetricValue")


def test_play_walks_bank_row(server_url, page):
    page.goto(f"{server_url}/online_softmax")
    wait_idle(page, 60_000)
    page.wait_for_selector(CHART, timeout=60_000)
    step = page.get_by_role("slider", name="blocks processed")
    expect(step).to_have_value("3")  # opens on the finished walk
    expect(metric_value(page, "ℓ (normalizer)")).to_have_text("1.736")

    page.get_by_role("button", name="▶ Play").click()
    # the walk restarts at block 0 and ends on the last one, one block per 0.8 s tick; the numbers
    # of a middle block are checked after it, so a busy machine that draws a tick late cannot race
    # the check
    expect(step).to_have_value("0", timeout=60_000)
    expect(step).to_have_value("3", timeout=60_000)
    wait_idle(page)
    expect(metric_value(page, "ℓ (normalizer)")).to_have_text("1.736")
    # the spec's numbers at block 2 (card 15): one step back from the end
    step.focus()
    page.keyboard.press("ArrowLeft")
    expect(step).to_have_value("2", timeout=30_000)
    expect(metric_value(page, "rescale e^(m_old − m_new)")).to_have_text("0.243", timeout=30_000)
    expect(metric_value(page, "ℓ (normalizer)")).to_have_text("1.243", timeout=30_000)
    page.keyboard.press("ArrowRight")
    expect(step).to_have_value("3", timeout=30_000)
    wait_idle(page)
    expect(page.get_by_text("matches torch SDPA (float64) for this row").first).to_be_visible()
    assert page.locator("[data-testid=stException]").count() == 0
    page.screenshot(path=str(ARTIFACTS / "online-softmax-played.png"), full_page=True)

    assert page.console_errors == []
