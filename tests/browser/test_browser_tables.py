"""Wide tables fit a 1,400 × 900 window: every column of each data grid shows, none is cut off
on the right (Streamlit's grid scrolls sideways when its columns are wider than the page).

Oracle: the browser's own layout: the grid's scroller is no wider inside (scrollWidth) than it
is drawn (clientWidth)."""

import pytest
from conftest import ARTIFACTS, wait_idle

pytestmark = pytest.mark.browser

GRIDS = """() => [...document.querySelectorAll('[data-testid=stDataFrame]')]
  .filter((el) => el.offsetParent !== null)
  .map((el) => {
    const s = el.querySelector('.dvn-scroller');
    return s ? {scroll: s.scrollWidth, client: s.clientWidth} : null;
  }).filter((g) => g !== null && g.client > 0)"""

PAGES = {
    "masks-future": "masks?mk_section=future",
    "masks-fully-masked": "masks?mk_section=fully_masked",
    "masks-conventions": "masks?mk_section=conventions",
    "kernels": "kernels",  # the published results and their fraction of peak
    "trained-heads": "trained_heads",
    "costs-whole": "costs?co_section=whole",  # the ledger by layer kind
    "costs-flops": "costs",
    "costs-kv": "costs?co_section=kv",
    "costs-serving": "costs?co_section=serving",
}


@pytest.mark.parametrize("path", PAGES.values(), ids=PAGES.keys())
def test_every_column_of_every_table_shows_at_1400_px(server_url, browser, path):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{server_url}/{path}")
        page.wait_for_selector("h1", timeout=90_000)
        wait_idle(page, 120_000)
        page.wait_for_selector("[data-testid=stDataFrame] .dvn-scroller", timeout=60_000)
        # the grid lays its columns out after it is attached: wait until every one has a width
        page.wait_for_function(f"({GRIDS})().length > 0", timeout=30_000)
        grids = page.evaluate(GRIDS)
        page.screenshot(path=str(ARTIFACTS / f"tables-{path.replace('?', '-')}.png"), full_page=True)
        cut = [g for g in grids if g["scroll"] > g["client"] + 1]
        assert not cut, f"{len(cut)} of {len(grids)} tables scroll sideways: {cut}"
    finally:
        context.close()
