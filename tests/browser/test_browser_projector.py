"""Projector mode fits what the room must read: at 1,400 px wide, with the larger projector text,
no metric value and no page name in the sidebar is cut short (an ellipsis where "0.7…" should read
"0.7316").

Oracle: the browser's own layout. An element whose text is cut has a scrollWidth larger than
its clientWidth; one that fits has them equal."""

from __future__ import annotations

import pytest
from conftest import ARTIFACTS, wait_idle

pytestmark = pytest.mark.browser

# the text elements of every metric's value and label, and of the sidebar's page links
CUT = """() => {
  const sel = '[data-testid=stMetricValue], [data-testid=stMetricValue] *, [data-testid=stMetricLabel] *,'
    + ' [data-testid=stSidebarNav] a, [data-testid=stSidebarNav] a *';
  return Array.from(document.querySelectorAll(sel))
    .filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
    .map(e => `${e.getAttribute('data-testid') || e.tagName}: ${e.textContent.trim().slice(0, 40)}`
      + ` (${e.scrollWidth} > ${e.clientWidth} px)`);
}"""


@pytest.mark.parametrize("path", ["playground", "costs", "online_softmax", "one_head"])
def test_projector_mode_cuts_no_metric_value_and_no_page_name(server_url, browser, path):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        pg = ctx.new_page()
        pg.goto(f"{server_url}/{path}?projector=true")
        wait_idle(pg, 90_000)
        pg.wait_for_selector("[data-testid=stMetricValue]", timeout=60_000)
        assert pg.evaluate("() => getComputedStyle(document.documentElement).fontSize") == "22px"
        cut = pg.evaluate(CUT)
        pg.screenshot(path=str(ARTIFACTS / f"projector-{path}.png"), full_page=True)
        assert not cut, cut
    finally:
        ctx.close()
