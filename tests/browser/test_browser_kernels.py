"""The Kernels page in a real browser: ▶ Run sweep fills the charts and the error table; ■ Stop
interrupts a running sweep without leaving the server's bench locked (a second run works)."""

import pytest
from conftest import ARTIFACTS, wait_idle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg'


def test_run_then_stop_then_run_again(server_url, page):
    page.goto(f"{server_url}/kernels?kb_H=1&kb_Hkv=1")
    wait_idle(page, 60_000)
    page.get_by_role("button", name="▶ Run sweep").click()
    expect(page.get_by_text("Time per call")).to_be_visible(timeout=90_000)
    wait_idle(page, 90_000)
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()
    assert page.locator("[data-testid=stException]").count() == 0
    assert page.get_by_text("Another visitor's sweep").count() == 0
    page.screenshot(path=str(ARTIFACTS / "bench-run.png"), full_page=True)

    # Stop as soon as the progress bar shows: the script is interrupted mid-sweep
    page.get_by_role("button", name="▶ Run sweep").click()
    page.get_by_test_id("stProgress").wait_for(timeout=30_000)
    page.get_by_role("button", name="■ Stop").click()
    wait_idle(page, 90_000)
    assert page.locator("[data-testid=stException]").count() == 0

    # the lock was released: a new run is not told that the bench is busy
    page.get_by_role("button", name="▶ Run sweep").click()
    expect(page.get_by_text("Time per call")).to_be_visible(timeout=90_000)
    wait_idle(page, 90_000)
    assert page.get_by_text("Another visitor's sweep").count() == 0
    assert page.console_errors == []
