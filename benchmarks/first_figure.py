"""Time to the first figure: how long a newcomer waits for each page's first plotly chart, beside a
minimal Streamlit page with one plotly heatmap served the same way, in the same run.

Two servers start with the same flags and the repo's .streamlit/config.toml: the lab (app.py) and
a one-file app that draws one 16 × 16 heatmap. For each page, a fresh headless-Chromium context
(empty cache: a newcomer) opens the URL; the clock runs from the navigation to the first
``.js-plotly-plot .main-svg`` in the page. Also recorded: DOMContentLoaded (the HTML and the
JavaScript bundle), the first Streamlit element drawn (the websocket is up and the script ran
far enough to send something), and the bytes the browser downloaded. Pages alternate with the
minimal page, so that load on the shared machine hits both alike; the ratio is of medians.

With ``--cold``, every visit is the first one of a fresh server instead (a newcomer on a server
just started: the page's imports and first computations included), each page's against a fresh
minimal server's first visit, alternating.

Usage: .venv/bin/python benchmarks/first_figure.py [--rounds 5] [--only PAGE] [--cold]
Prints one line per page and the minimal page, then the worst ratio. Needs /usr/bin/chromium
(``make chromium``) and Playwright; see ../shared/notes/browser-testing.md.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness.browser import CHROMIUM, CHROMIUM_ARGS  # benchmarks/harness/
from harness.server import serve
from playwright.sync_api import sync_playwright

from lab_ui.nav import PAGES  # the lab's own page list: new pages are timed too

ROOT = Path(__file__).resolve().parents[1]

FIGURE = '[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg'
ELEMENT = '[data-testid="stMainBlockContainer"] [data-testid="stElementContainer"]'
TIMEOUT_MS = 60_000
MINIMAL_APP = """import numpy as np
import plotly.graph_objects as go
import streamlit as st

st.title("One heatmap")
z = np.random.default_rng(0).random((16, 16))
st.plotly_chart(go.Figure(go.Heatmap(z=z)))
"""


def time_page(browser, url: str) -> dict[str, float]:
    """Seconds from navigation to DOMContentLoaded, the first element and the first figure; MB
    transferred. A fresh context: nothing cached, as for a newcomer."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    received = []
    page.on("response", lambda r: received.append(r))
    try:
        start = time.perf_counter()
        page.goto(url, wait_until="domcontentloaded", timeout=TIMEOUT_MS)
        dom = time.perf_counter() - start
        page.wait_for_selector(ELEMENT, timeout=TIMEOUT_MS)
        element = time.perf_counter() - start
        page.wait_for_selector(FIGURE, timeout=TIMEOUT_MS)
        figure = time.perf_counter() - start
        mb = page.evaluate(
            "performance.getEntriesByType('resource').reduce((s, e) => s + (e.transferSize || 0), 0)"
            " + (performance.getEntriesByType('navigation')[0]?.transferSize || 0)"
        )
        return {"dom": dom, "element": element, "figure": figure, "mb": mb / 1e6}
    finally:
        context.close()


def cold(pages, rounds: int, tmp: Path) -> dict[str, list[dict[str, float]]]:
    """Each page's first visit on a fresh lab server, then the minimal page's on a fresh server."""
    results: dict[str, list[dict[str, float]]] = {p.url_path: [] for p in pages} | {"minimal": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(rounds):
            for p in pages:
                with serve() as lab:
                    try:
                        results[p.url_path].append(time_page(browser, f"{lab.http}/{p.url_path}"))
                    except Exception as exc:
                        print(f"{p.url_path}: {type(exc).__name__} {str(exc).splitlines()[0]}")
                with serve(app="minimal.py", cwd=tmp) as minimal:
                    results["minimal"].append(time_page(browser, minimal.http))
        browser.close()
    return results


def warm(pages, rounds: int, tmp: Path) -> dict[str, list[dict[str, float]]]:
    """Each page's visits on one lab server whose first run of the page was not timed."""
    results: dict[str, list[dict[str, float]]] = {p.url_path: [] for p in pages} | {"minimal": []}
    with (
        serve() as lab_server,
        serve(app="minimal.py", cwd=tmp) as minimal_server,
        sync_playwright() as pw,
    ):
        lab, minimal = lab_server.http, minimal_server.http
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for p in pages:  # one visit each first: the server's own first run of a page is not timed
            with contextlib.suppress(Exception):
                time_page(browser, f"{lab}/{p.url_path}")
        time_page(browser, minimal)
        for _ in range(rounds):
            for p in pages:
                try:
                    results[p.url_path].append(time_page(browser, f"{lab}/{p.url_path}"))
                except Exception as exc:  # a page without a figure above the fold: say so
                    print(f"{p.url_path}: {type(exc).__name__} {str(exc).splitlines()[0]}")
                results["minimal"].append(time_page(browser, minimal))
        browser.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="")
    parser.add_argument("--cold", action="store_true", help="every visit the first of a fresh server")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: make chromium")
        return 2
    pages = [p for p in PAGES if args.only in p.url_path]
    tmp = Path(tempfile.mkdtemp(prefix="first_figure_"))
    shutil.copytree(ROOT / ".streamlit", tmp / ".streamlit")
    (tmp / "minimal.py").write_text(MINIMAL_APP)
    results = (cold if args.cold else warm)(pages, args.rounds, tmp)
    shutil.rmtree(tmp, ignore_errors=True)

    def med(name: str, what: str) -> float:
        return statistics.median(r[what] for r in results[name])

    base = med("minimal", "figure")
    print(f"{'page':16} {'DOM s':>6} {'element s':>9} {'figure s':>8} {'MB':>5} {'× minimal':>9}")
    ratios = []
    for name, runs in results.items():
        if not runs:
            continue
        ratio = med(name, "figure") / base
        if name != "minimal":
            ratios.append((ratio, name))
        print(
            f"{name:16} {med(name, 'dom'):6.2f} {med(name, 'element'):9.2f} {med(name, 'figure'):8.2f} "
            f"{med(name, 'mb'):5.1f} {ratio:9.2f}"
        )
    if ratios:
        worst = max(ratios)
        print(
            f"worst ratio {worst[0]:.2f} ({worst[1]}); median ratio {statistics.median(r for r, _ in ratios):.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
