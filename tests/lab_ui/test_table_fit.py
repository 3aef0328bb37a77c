"""The table fitter: a table that fits is left alone; a wide one gets widths summing to the page's
width, narrow columns whole, and rows tall enough for the grid to wrap (Streamlit wraps only above
4 rem = 64 px). The browser check of the result is tests/browser/test_browser_tables.py."""

import pandas as pd

from lab_ui import table_fit


def test_a_table_that_fits_is_left_alone():
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    assert table_fit.fit(df) == table_fit.Fit({}, None)


def test_a_wide_table_is_fitted_and_wraps():
    df = pd.DataFrame(
        {
            "n": [1, 22],
            "kernel": ["FlashAttention-3 forward, FP8, causal, head dim 256 " * 3] * 2,
            "x": [0.5, 1.5],
        }
    )
    fit = table_fit.fit(df, budget_px=600)
    assert 0 < sum(fit.widths.values()) <= 600
    assert fit.widths["n"] >= table_fit.MIN_PX and fit.widths["x"] >= table_fit.MIN_PX  # kept whole
    assert fit.widths["kernel"] == max(fit.widths.values())
    assert fit.row_height is not None and fit.row_height > 64


def test_too_many_long_headers_are_cut_alike_never_below_the_minimum():
    df = pd.DataFrame({f"a rather long column header number {i}": [i] for i in range(12)})
    fit = table_fit.fit(df, budget_px=880)
    assert sum(fit.widths.values()) <= 880
    assert min(fit.widths.values()) >= table_fit.MIN_PX
