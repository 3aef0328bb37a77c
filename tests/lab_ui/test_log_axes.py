"""Log axes label whole decades only (0.01, 0.1, 1, 10), never plotly's minor-tick digits (an
axis from 0.05 to 0.07 would otherwise read "6" for 0.06).

Oracles: the decades that contain the data, counted by hand; every log axis a page sends
(AppTest of the pages whose figures are log-scaled) and every module that builds one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from apptest_helpers import plotly_array

from lab_ui import cost_charts, figures, kernel_charts

ROOT = Path(__file__).resolve().parents[2]


def log_axes(spec: dict) -> list[dict]:
    layout = spec.get("layout", {})
    return [a for k, a in layout.items() if k.startswith(("xaxis", "yaxis")) and a.get("type") == "log"]


def decades_only(axis: dict) -> bool:
    return axis.get("dtick") == 1 and axis.get("tickformat") == "~g"


def test_the_axis_helper_labels_decades():
    assert decades_only(figures.axis("x", log=True))
    assert "dtick" not in figures.axis("x")  # a linear axis keeps plotly's own ticks


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([0.06], [-2, -1]),  # one value: the decade around it, so 0.01 and 0.1 are labelled
        ([0.05, 0.07], [-2, -1]),
        ([0.2, 0.9], [-1, 0]),
        ([1.0], [-1, 1]),  # an exact power of ten sits in the middle
        ([0.001, 50.0], None),  # spans 10^-3 … 10^1: autorange labels several decades
        ([], None),
        ([0.0, -1.0, float("nan")], None),  # nothing a log axis can draw
    ],
)
def test_a_range_short_of_two_decades_is_widened_to_whole_decades(values, expected):
    assert figures.decade_range(values) == expected


def test_every_builder_labels_decades_on_its_log_axes():
    rows = [{"contestant": "a", "L": L, "ms": 0.06, "TFLOP/s": 0.06, "FLOP/byte": 30.0} for L in (64, 128)]
    built = [
        figures.lines([1, 10, 100], {"a": [0.05, 0.06, 0.07]}, log_x=True, log_y=True),
        figures.traces_figure(
            [{"type": "scatter", "x": [1, 2], "y": [3, 4]}], "t", "x", "y", log_x=True, log_y=True
        ),
        kernel_charts.per_length(rows, "ms", "t", "ms"),
        kernel_charts.roofline(rows, 1e12, 1e11, "Roofline"),
        kernel_charts.roofline([], 6e10, 2e10, "Roofline"),  # before any run: the roof alone
        cost_charts.log_lines([1, 10], {"a": [1, 2]}, title="t", x_title="x", y_title="y"),
        cost_charts.stacked_shares([1, 10], {"a": [1, 2]}, title="t", x_title="x"),
    ]
    for fig in built:
        axes = log_axes(fig.to_plotly_json())
        assert axes and all(decades_only(a) for a in axes), fig.layout.title.text


def test_the_empty_roofline_labels_decades_not_digits():
    """CPU peak 0.06 TFLOP/s: the roof runs 0.0003 … 0.06, so the y axis must label 0.001 and 0.01
    (whole decades) rather than 6 for 0.06."""
    spec = kernel_charts.roofline([], 6e10, 2e10, "Roofline").to_plotly_json()
    y = spec["layout"]["yaxis"]
    assert decades_only(y)
    roof = plotly_array(spec["data"][-1]["y"])
    inside = [p for p in range(-6, 3) if roof.min() <= 10.0**p <= roof.max()]
    assert len(inside) >= 2 or y.get("range") is not None


def test_no_module_builds_a_log_axis_by_hand():
    """Every log axis goes through figures.axis: no other page or chart module spells type="log"."""
    pattern = re.compile(r"""["']type["']\s*:\s*["']log["']|type\s*=\s*["']log["']""")
    offenders = [
        str(p.relative_to(ROOT))
        for folder in ("lab_ui", "pages")
        for p in (ROOT / folder).rglob("*.py")
        if p.name != "figures.py" and pattern.search(p.read_text())
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("page", "query"),
    [
        ("pages/kernels.py", {}),
        ("pages/costs.py", {}),
        ("pages/scaling.py", {"sc_section": "entropy"}),
        ("pages/playground.py", {}),
    ],
)
def test_every_log_axis_a_page_sends_labels_decades(app, page, query):
    at = app(page, **query)
    assert not at.exception
    axes = [a for c in at.get("plotly_chart") for a in log_axes(json.loads(c.proto.spec))]
    assert axes, "the page should draw at least one log axis"
    assert all(decades_only(a) for a in axes), axes
