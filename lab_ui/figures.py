"""Plotly figure builders shared by every page: readable on a projector, exact on hover.

`show` is where every page's figure reaches the screen: it applies this screen's palette
(lab_ui/palettes.py, kept in the URL like the projector mode) and offers the figure for slides,
as a standalone HTML file (plotly.js inlined, 4.6 MiB: it opens with no server and no network, and has
its own SVG and PNG buttons) and, in the figure's toolbar, as PNG or SVG (plotly's own
client-side toImage: the server renders nothing).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st

from lab_ui import palettes, view_cache

T = TypeVar("T")

BASE_FONT_SIZE = 15
PROJECTOR_FONT_SIZE = 22
CELL_TEXT_MAX = 12  # write the value inside each cell up to 12 × 12; beyond that, hover only
EXACT_MAX = 64  # send float64 (hover shows 10 digits) up to 64 × 64, float32 beyond
# Streamlit's own chart theme styles every figure in the browser, so plotly's default template
# (a ~3 KB dict deep-copied into every figure, twice) only costs CPU and bytes: half of a figure's
# server time and 70% of its JSON. Measured: 2.6 → 1.5 ms and 4.7 → 1.4 KB per small heatmap.
pio.templates.default = "none"
PLOT_CONFIG = palettes.PLOT_CONFIG  # the toolbar's settings (pages that call st.plotly_chart)


def font_size() -> int:
    return PROJECTOR_FONT_SIZE if st.session_state.get("projector") else BASE_FONT_SIZE


def use_projector_sizes() -> None:
    """Scale the page's text up for a classroom screen (figures read font_size()). What the room
    reads is never cut short at the larger size: a metric's value and label, and the sidebar's page
    names, wrap where Streamlit would end them with an ellipsis ("0.7…")."""
    st.html(_PROJECTOR_CSS)


_FITS = (  # Streamlit's elements that clip their text to one line
    '[data-testid="stMetricValue"]',
    '[data-testid="stMetricValue"] *',
    '[data-testid="stMetricLabel"]',
    '[data-testid="stMetricLabel"] *',
    '[data-testid="stSidebarNav"] a',
    '[data-testid="stSidebarNav"] a *',
)
_PROJECTOR_CSS = (
    "<style>html { font-size: 22px; } .stMarkdown p, .stCaption { font-size: 1.05rem; } "
    + ", ".join(_FITS)
    + " { white-space: normal !important; overflow: visible !important; text-overflow: clip !important;"
    " overflow-wrap: break-word; }</style>"
)


# A log axis labels whole decades only: plotly's own log ticks label the minor ticks by their
# leading digit, so an axis from 0.05 to 0.07 reads "6" for 0.06. dtick = 1 on a log axis is one
# tick per power of ten; "~g" prints them as 0.01, 0.1, 1, 10, 1000, 1e+06. Unlabelled minor ticks
# at 2…9 keep the scale readable between them.
LOG_TICKS = {"dtick": 1, "tickformat": "~g", "minor": {"ticks": "outside", "dtick": "D1", "ticklen": 4}}


def decade_range(values: Any) -> list[float] | None:
    """[floor, ceil] of log10 of the positive finite ``values`` when they hold fewer than two powers
    of ten (plotly's autorange would label one decade or none), else None (autorange labels enough).
    A single power of ten gets the decade either side."""
    a = np.asarray(values if values is not None else [], dtype=np.float64).ravel()
    a = a[np.isfinite(a) & (a > 0)]
    if a.size == 0:
        return None
    lo, hi = (round(float(np.log10(v)), 9) for v in (a.min(), a.max()))
    if math.floor(hi) - math.ceil(lo) + 1 >= 2:
        return None
    low, high = math.floor(lo), math.ceil(hi)
    return [low - 1, high + 1] if low == high else [low, high]


def axis(title: str, *, log: bool = False, values: Any = None, **extra: Any) -> dict:
    """A titled plotly axis. A log one labels decades only (`LOG_TICKS`), and when ``values`` (the
    data drawn on it) hold fewer than two powers of ten its range is widened to whole decades
    (`decade_range`) so that at least two are labelled. Every log axis of the lab is built here."""
    spec: dict[str, Any] = {"title": {"text": title}, "type": "log" if log else "linear"}
    if log:
        spec.update(LOG_TICKS)
        widened = decade_range(values)
        if widened is not None:
            spec["range"] = widened
    return {**spec, **extra}


def _as_array(z) -> np.ndarray:
    a = np.asarray(z.detach().cpu() if hasattr(z, "detach") else z, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"a heatmap needs a 2-D matrix, got shape {a.shape}")
    return a


def heatmap(
    z,
    x_labels: Sequence[str] | None = None,
    y_labels: Sequence[str] | None = None,
    *,
    title: str = "",
    x_title: str = "key",
    y_title: str = "query",
    colorscale: str = "Blues",
    zmin: float | None = None,
    zmax: float | None = None,
    zmid: float | None = None,
    value_name: str = "value",
    height: int | None = None,
) -> go.Figure:
    """A labelled heatmap of a (rows, cols) matrix; -inf/NaN cells (masked) are left blank.

    Row 0 is drawn at the top, as the matrix is written. Hover gives the exact value."""
    a = _as_array(z)
    rows, cols = a.shape
    masked = ~np.isfinite(a)
    a = np.where(masked, np.nan, a)
    a = a if rows <= EXACT_MAX and cols <= EXACT_MAX else a.astype(np.float32)
    x = list(x_labels) if x_labels is not None else [str(j) for j in range(cols)]
    y = list(y_labels) if y_labels is not None else [str(i) for i in range(rows)]
    trace = {
        "type": "heatmap",
        "z": a,
        "x": x,
        "y": y,
        "colorscale": colorscale,
        "zmin": zmin,
        "zmax": zmax,
        "zmid": zmid,
        "hoverongaps": True,
        "hovertemplate": f"{y_title} %{{y}}<br>{x_title} %{{x}}<br>{value_name} %{{z:.10g}}<extra></extra>",
        "colorbar": {"thickness": 14},
    }
    if rows <= CELL_TEXT_MAX and cols <= CELL_TEXT_MAX:
        trace.update(texttemplate="%{z:.3f}", textfont={"size": font_size()})
    note = " (blank = masked)" if masked.any() else ""
    layout = {
        **_base_layout(title + note, height or max(260, min(560, 90 + 34 * rows))),
        "xaxis": {"title": {"text": x_title}, "type": "category"},
        "yaxis": {"title": {"text": y_title}, "type": "category", "autorange": "reversed"},
    }
    # One dict → one validated Figure: ~5× faster than building a trace and then update_layout.
    return go.Figure({"data": [trace], "layout": layout})


def _base_layout(title: str, height: int) -> dict:
    return {
        "title": {"text": title},
        "font": {"size": font_size()},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
        "height": height,
    }


def lines(
    x,
    series: dict[str, Sequence[float]],
    *,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    log_x: bool = False,
    log_y: bool = False,
    height: int = 380,
) -> go.Figure:
    """One line per named series over a shared x axis."""
    x = np.asarray(x)
    traces = [
        {"type": "scatter", "x": x, "y": np.asarray(y, dtype=np.float64), "mode": "lines", "name": name}
        for name, y in series.items()
    ]
    layout = {
        **_base_layout(title, height),
        **_xy_axes(traces, x_title, y_title, log_x, log_y),
        "legend": {"orientation": "h", "y": -0.2},
    }
    return go.Figure({"data": traces, "layout": layout})


def trace_values(traces: Sequence[dict], name: str) -> list[float]:
    """Every number the traces draw along ``name`` ("x" or "y"): what a log axis's range must hold."""
    out: list[float] = []
    for trace in traces:
        values = trace.get(name)
        if values is not None:
            out.extend(np.asarray(values, dtype=np.float64).ravel().tolist())
    return out


def _xy_axes(traces: Sequence[dict], x_title: str, y_title: str, log_x: bool, log_y: bool) -> dict:
    return {
        "xaxis": axis(x_title, log=log_x, values=trace_values(traces, "x") if log_x else None),
        "yaxis": axis(y_title, log=log_y, values=trace_values(traces, "y") if log_y else None),
    }


def as_float64(x) -> np.ndarray:
    """A tensor or sequence as a float64 array (plotly sends float64 exactly)."""
    return np.asarray(x.detach() if hasattr(x, "detach") else x, dtype=np.float64)


def vline(x: float, dash: str = "dash", text: str = "", log_x: bool = False) -> tuple[dict, list[dict]]:
    """A vertical line at x and its label (plotly places annotations on a log axis by log10 x)."""
    shape = {"type": "line", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1, "line": {"dash": dash}}
    at = float(np.log10(x)) if log_x else x
    notes = (
        [{"x": at, "y": 1, "yref": "paper", "text": text, "showarrow": False, "yanchor": "bottom"}]
        if text
        else []
    )
    return shape, notes


def traces_figure(
    traces: list[dict],
    title: str,
    x_title: str,
    y_title: str,
    *,
    log_x=False,
    log_y=False,
    height=400,
    shapes=(),
    annotations=(),
) -> go.Figure:
    """One figure of ``traces`` (plotly trace dicts) with the lab's layout: titled axes, linear or
    log, the legend under the plot, optional shapes and annotations (`vline`)."""
    layout = {
        **_base_layout(title, height),
        **_xy_axes(traces, x_title, y_title, log_x, log_y),
        "legend": {"orientation": "h", "y": -0.25},
        "shapes": list(shapes),
        "annotations": list(annotations),
    }
    return go.Figure({"data": traces, "layout": layout})


def bars(
    categories: Sequence[str],
    series: dict[str, Sequence[float]],
    *,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    height: int = 340,
) -> go.Figure:
    """Grouped bars: one bar per named series in each category."""
    traces = [
        {"type": "bar", "x": list(categories), "y": np.asarray(y, dtype=np.float64), "name": name}
        for name, y in series.items()
    ]
    layout = {
        **_base_layout(title, height),
        "barmode": "group",
        "xaxis": {"title": {"text": x_title}, "type": "category"},
        "yaxis": {"title": {"text": y_title}},
        "legend": {"orientation": "h", "y": -0.25},
    }
    return go.Figure({"data": traces, "layout": layout})


# The standalone file's own buttons: plotly.js is in the file, so Plotly.downloadImage works
# offline. `{plot_id}` is the figure's div (plotly.io.to_html fills it in).
_STANDALONE_BUTTONS = """
const gd = document.getElementById('{plot_id}');
const bar = document.createElement('p');
bar.style.fontFamily = 'sans-serif';
for (const format of ['svg', 'png']) {
  const b = document.createElement('button');
  b.textContent = 'Download ' + format.toUpperCase();
  b.id = 'download-' + format;
  b.style.marginRight = '0.5em';
  b.onclick = () => Plotly.downloadImage(gd, {format: format, scale: format === 'png' ? 2 : 1,
                                              filename: document.title});
  bar.appendChild(b);
}
gd.parentNode.appendChild(bar);
"""


def standalone_html(fig: go.Figure | dict, title: str = "Attention Lab figure") -> str:
    """The figure as one HTML file with plotly.js inlined: it opens from disk, with no
    server and no network, and keeps hover, zoom and its SVG/PNG buttons (4.6 MiB for a small
    figure, 6.3 MiB for a 512 × 512 heatmap: benchmarks/slides_export.py)."""
    html = pio.to_html(
        fig,
        include_plotlyjs=True,
        full_html=True,
        config={"displaylogo": False, "toImageButtonOptions": {"format": "svg", "filename": title}},
        post_script=_STANDALONE_BUTTONS,
        default_width="100%",
        default_height="90vh",
    )
    safe = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return html.replace("<head>", f"<head><title>{safe}</title>", 1)


def cached(builder: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``builder(*args, **kwargs)``, a figure built from a view, from the server's shared cache
    (lab_ui.view_cache, which never imports this module): hand it straight to ``show`` and never
    modify it. The key includes this session's font size, which builders read (projector mode)."""
    key = view_cache.fingerprint(font_size(), *args, **kwargs)
    return view_cache.CACHE.get(
        f"figure:{builder.__module__}.{builder.__qualname__}", key, lambda: builder(*args, **kwargs)
    )


def show_cached(builder: Callable[..., go.Figure], *args: Any, key: str, **kwargs: Any) -> None:
    """``show`` the figure ``builder(*args, **kwargs)`` (``heatmap``, ``lines``, …) built from a
    view, taken from the shared figure cache (`cached`: never modified here)."""
    show(cached(builder, *args, **kwargs), key=key)


def show(fig: go.Figure, key: str) -> None:
    """Render a figure full-width in this screen's palette, with PNG and SVG in its toolbar and,
    under it, a "For slides" popover whose standalone HTML download is built only when pressed
    (the popover's contents are sent only once it is opened, like `page.show_code`)."""
    styled = palettes.restyle(fig)
    st.plotly_chart(styled, key=key, config=palettes.plot_config(key), theme=palettes.chart_theme())
    slides = f"{key}__slides"
    with st.popover(
        "For slides", icon=":material/slideshow:", type="tertiary", key=slides, on_change="rerun"
    ):
        if st.session_state.get(slides):
            st.download_button(
                "Standalone HTML (works offline)",
                lambda: standalone_html(styled, _title(styled) or key),
                file_name=f"{key}.html",
                mime="text/html",
                key=f"{key}__html",
                icon=":material/download:",
                on_click="ignore",
            )
            st.caption(
                "One file with plotly.js inside: it opens in any browser with no network, keeps "
                "hover and zoom, and has its own SVG and PNG buttons. PNG and SVG of this view: the "
                "camera icons in the figure's toolbar."
            )


def _title(fig: go.Figure | dict) -> str:
    layout = fig.get("layout", {}) if isinstance(fig, dict) else fig.to_plotly_json().get("layout", {})
    title = layout.get("title", {})
    return str(title.get("text", "") if isinstance(title, dict) else title)[:80]
