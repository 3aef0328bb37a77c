"""A seeded sample of benchmarks/fuzz_pages.py: every registered page takes random in-bounds
widget values and hostile text, in random order, and no run raises. The full run (1,000 states)
is a benchmark; its result is in benchmarks/RESULTS.md."""

import random
import subprocess
import sys

import pytest
from conftest import load_benchmark

from lab_ui.nav import HOME, PAGES

fuzz = load_benchmark("fuzz_pages")


@pytest.mark.parametrize("info", [HOME, *PAGES], ids=lambda p: p.url_path)
def test_random_widget_states_never_raise(info):
    report = fuzz.Report()
    rng = random.Random(f"fuzz-{info.url_path}")  # seeded per page: a failure replays exactly
    for _ in range(2):
        fuzz.fuzz_page(info.path, rng, 6, report)
    assert report.failures == []
    assert report.states >= (0 if info is HOME else 6)  # the sample really changed widgets


def test_the_fuzzer_would_catch_an_exception(tmp_path, monkeypatch):
    """The harness itself: a page that raises on some value is reported, with its trail."""
    page = tmp_path / "boom.py"
    page.write_text(
        "import streamlit as st\n"
        "x = st.slider('x', 0, 10, 0, key='x')\n"
        "if x > 5:\n    raise ZeroDivisionError('x too big')\n"
    )
    monkeypatch.setattr(fuzz, "ROOT", tmp_path)
    (tmp_path / "app.py").write_text(
        "import streamlit as st\nst.navigation([st.Page('boom.py', default=True)]).run()\n"
    )
    report = fuzz.Report()
    fuzz.fuzz_page("boom.py", random.Random(3), 20, report)
    assert len(report.failures) == 1 and "x too big" in report.failures[0] and "x=" in report.failures[0]


NOT_COST = [p for p in (HOME, *PAGES) if p.url_path != "costs"]


@pytest.mark.parametrize("query", fuzz.HOSTILE_QUERIES, ids=lambda q: str(q)[:30])
def test_every_page_opened_from_a_hostile_link(app, query):
    """Numbers beyond float range, markdown in a label, a typed 1e308, the Online page's own caps:
    no page raises or needs its safety net. (The Cost page's hostile configs run below.)"""
    for info in NOT_COST:
        at = app(info.path, **query)
        report = fuzz.Report()
        assert not fuzz._failed(at, info.path, [str(query)], report), report.failures


@pytest.mark.parametrize("upload", fuzz.HOSTILE_UPLOADS, ids=lambda u: u[0])
def test_practice_takes_every_hostile_upload(app, upload):
    at = app("pages/practice.py")
    name, content = upload[0].rsplit(".", 1)[0] + ".csv", upload[1]  # the box accepts .csv names only
    at.file_uploader(key="pr_upload").set_value((name, content, "text/csv")).run()
    report = fuzz.Report()
    assert not fuzz._failed(at, "pages/practice.py", [name], report), report.failures
    assert name.startswith("formulas") or any("not a practice log" in e.value for e in at.error)


def test_cost_page_takes_every_hostile_config():
    """Pasted and uploaded configs that declare 2²⁴ layers, objects as layer types, a lone
    surrogate. Run in a child process with a time limit: a config whose work grows with the layer
    count would otherwise hold a thread of this test session for days."""
    sample = [
        sys.executable,
        str(fuzz.ROOT / "benchmarks" / "fuzz_pages.py"),
        "--pages",
        "costs",
        "--states",
        "24",
        "--seed",
        "7",
        "--hostile-configs",
    ]
    try:
        done = subprocess.run(sample, capture_output=True, text=True, timeout=300, cwd=fuzz.ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail("the Cost page did not answer the hostile configs within 300 s")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "exceptions 0" in done.stdout
