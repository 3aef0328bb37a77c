"""This screen's palette: the figures' colours as designed, colour-blind safe, or high contrast
for a projector. Kept in the URL (``?palette=cb``) like the projector mode, and applied where
every figure is shown (`figures.show`), never where it is built: built figures are shared by
every session (lab_ui/view_cache.py), so one screen's palette never reaches another's.

- *colour-blind safe*: sequential heatmaps in cividis (designed to read the same under
  red–green colour blindness), reversed so that the largest value is the darkest cell on the
  white page, diverging ones in purple–orange (ColorBrewer's PuOr, listed as
  colour-blind safe), lines and bars in the Okabe–Ito colours.
- *projector, high contrast*: viridis reversed, whose lightness runs from bright yellow (low) to
  near black (high: the largest value is the most salient, and a washed-out projector keeps the
  order), PuOr for diverging maps, black text, thicker lines and axes; the page's text darker and
  bolder.

tests/lab_ui/test_palettes.py checks each scale under simulated protanopia, deuteranopia and
tritanopia (Machado, Oliveira and Fernandes 2009) against the CIELAB lightness and colour
difference of its ends.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import plotly.colors as pc
import plotly.graph_objects as go
import streamlit as st

from lab_ui import widgets


class Palette(StrEnum):
    """The value is the label shown; a link keeps the member's name, lower-cased."""

    DESIGNED = "as designed"
    CB = "colour-blind safe"
    CONTRAST = "projector, high contrast"


KEY = "palette"  # the URL key (a room's follower keeps its own: see the README's classroom notes)
SEQUENTIAL = {Palette.CB: "Cividis_r", Palette.CONTRAST: "Viridis_r"}  # high = dark on the white page
DIVERGING = {Palette.CB: "PuOr", Palette.CONTRAST: "PuOr"}
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
COLOR_TRACES = ("heatmap", "contour", "histogram2d", "histogram2dcontour", "surface")
# The diverging scales the lab's figures are built with (a trace keeps its scale expanded, so it
# is recognised by its colours; a trace with zmid set is diverging whatever its colours).
_DIVERGING_NAMES = (
    "RdBu",
    "RdBu_r",
    "PuOr",
    "PuOr_r",
    "BrBG",
    "PiYG",
    "PRGn",
    "RdYlBu",
    "Picnic",
    "Portland",
)
PLOT_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "png", "scale": 2},  # crisp slides
}


def _stops(scale) -> tuple[tuple[float, str], ...]:
    """A colour scale's stops, comparable (a validated figure rounds 0.30000000000000004 to 0.3)."""
    return tuple((round(float(p), 6), str(c).replace(" ", "")) for p, c in scale)


def _expanded(name: str) -> tuple[tuple[float, str], ...]:
    return _stops(pc.get_colorscale(name))


_DIVERGING_SCALES = {_expanded(n) for n in _DIVERGING_NAMES}


def picker() -> Palette:
    """The sidebar's palette choice (kept in the URL); the high-contrast one also restyles text."""
    palette = widgets.selectbox(
        "Palette", Palette, key=KEY, help="Colour-blind-safe heatmaps, or high contrast for a projector."
    )
    if palette is Palette.CONTRAST:
        st.html(  # a constant: tests/test_security.py
            "<style>.stApp, .stMarkdown p, .stCaption, label, .stMetric { color: #000 !important; }"
            " .stMarkdown p { font-weight: 500; } hr { border-color: #000; }</style>"
        )
    return palette


def current() -> Palette:
    value = st.session_state.get(KEY, Palette.DESIGNED)
    return value if isinstance(value, Palette) else Palette.DESIGNED


def is_diverging(trace: dict[str, Any]) -> bool:
    """A colour trace centred on a value (zmid) or drawn in a known diverging scale."""
    if trace.get("zmid") is not None:
        return True
    scale = trace.get("colorscale")
    if isinstance(scale, str):
        return scale in _DIVERGING_NAMES
    try:
        return _stops(scale) in _DIVERGING_SCALES
    except (TypeError, ValueError):
        return False


def restyle(fig: go.Figure, palette: Palette | None = None) -> go.Figure | dict:
    """``fig`` in ``palette`` (default: this screen's). The figure itself is never modified (it may
    be shared); with the designed palette it is returned as is, else a restyled copy as a dict."""
    palette = current() if palette is None else palette
    if palette is Palette.DESIGNED:
        return fig
    spec = fig.to_plotly_json() if isinstance(fig, go.Figure) else dict(fig)  # a deep copy
    for trace in spec.get("data", []):
        if trace.get("type") in COLOR_TRACES:
            trace["colorscale"] = (DIVERGING if is_diverging(trace) else SEQUENTIAL)[palette]
            trace.pop("autocolorscale", None)
        if palette is Palette.CONTRAST and trace.get("type") in ("scatter", "scattergl"):
            trace["line"] = {**trace.get("line", {}), "width": 3.5}
    layout = spec.setdefault("layout", {})
    layout["colorway"] = list(OKABE_ITO)
    if palette is Palette.CONTRAST:
        layout["font"] = {**layout.get("font", {}), "color": "#000"}
        for axis in [k for k in layout if k.startswith(("xaxis", "yaxis"))] or ["xaxis", "yaxis"]:
            layout[axis] = {**layout.get(axis, {}), "linecolor": "#000", "linewidth": 2, "gridcolor": "#888"}
    return spec


def chart_theme() -> str | None:
    """Streamlit's chart theme greys the axes' text; high contrast keeps the figure's own black."""
    return None if current() is Palette.CONTRAST else "streamlit"


def plot_config(name: str) -> dict[str, Any]:
    """The toolbar of a figure: its image downloads are named after the figure's key."""
    return {**PLOT_CONFIG, "toImageButtonOptions": {**PLOT_CONFIG["toImageButtonOptions"], "filename": name}}


def svg_button() -> None:
    """Put an SVG button beside the camera (PNG) of every figure toolbar on the page (once per page
    is enough). Plotly's camera reads its format from the figure's toImageButtonOptions when
    pressed, so the SVG button sets it to "svg", presses the camera, and sets it back: plotly's
    own client-side export, nothing on the server."""
    st.html(  # a constant: tests/test_security.py
        """<style>
/* A phone follows the presenter and exports nothing: the toolbar would cover the figure's title. */
@media (max-width: 640px) {
  [data-testid="stPlotlyChart"] .modebar-container, [class*="__slides"] { display: none; }
}
</style><script>
(() => {
  if (window.__attnLabSvgButton) return;
  window.__attnLabSvgButton = true;
  const add = () => document.querySelectorAll('.js-plotly-plot').forEach((gd) => {
    const camera = gd.querySelector('.modebar-btn[data-title^="Download plot"]:not(.attn-lab-svg)');
    if (!camera || gd.querySelector('.attn-lab-svg') || !gd._context) return;
    const svg = camera.cloneNode(true);
    svg.classList.add('attn-lab-svg');
    svg.setAttribute('data-title', 'Download plot as SVG');
    svg.textContent = 'SVG';  // not a second camera: say which format it gives
    svg.style.cssText += 'font: 600 10px sans-serif; line-height: 16px; vertical-align: top;';
    svg.addEventListener('click', (event) => {
      event.preventDefault();
      event.stopPropagation();
      const options = gd._context.toImageButtonOptions;
      const before = options.format;
      options.format = 'svg';
      try { camera.click(); } finally { options.format = before; }
    });
    camera.parentNode.insertBefore(svg, camera.nextSibling);
  });
  new MutationObserver(add).observe(document.body, {childList: true, subtree: true});
  add();
})();
</script>""",
        unsafe_allow_javascript=True,
    )
