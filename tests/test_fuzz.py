"""A seeded sample of benchmarks/fuzz_pages.py: every registered page takes random in-bounds
widget values and hostile text, in random order, and no run raises. The full run (1,000 states)
is a benchmark; its result is in benchmarks/RESULTS.md."""

import random

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
