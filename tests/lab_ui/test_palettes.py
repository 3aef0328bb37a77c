"""Palettes and figures for slides: the colour-blind-safe and high-contrast scales checked under
simulated colour blindness, applied to every heatmap without touching the shared figure, kept
in the URL; and the standalone HTML file.

Oracle for colour: the colour-deficiency simulation matrices of Machado, Oliveira and Fernandes
(2009, severity 1, linear RGB), the sRGB transfer curve, and CIELAB (D65) lightness L* and colour
difference ΔE76, written out here from their published definitions, independent of plotly's
colour code (which only supplies the scales' stops)."""

from __future__ import annotations

import numpy as np
import plotly.colors as pc
import pytest
from apptest_helpers import plotly_array

from lab_ui import figures, palettes
from lab_ui.palettes import Palette

SIMULATE = {
    "normal vision": np.eye(3),
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]
    ),
}
RGB_TO_XYZ = np.array(
    [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750], [0.0193339, 0.1191920, 0.9503041]]
)
D65 = np.array([0.95047, 1.0, 1.08883])


def lab(rgb255: np.ndarray, vision: str) -> np.ndarray:
    """CIELAB of sRGB colours (n, 3) in 0..255 as seen with ``vision``."""
    c = np.asarray(rgb255, dtype=np.float64) / 255
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    linear = np.clip(linear @ SIMULATE[vision].T, 0, 1)
    t = (linear @ RGB_TO_XYZ.T) / D65
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], axis=-1)


def stops(name: str, n: int = 11) -> np.ndarray:
    """``n`` colours evenly along a named plotly scale, (n, 3) in 0..255."""
    colours = pc.sample_colorscale(pc.get_colorscale(name), list(np.linspace(0, 1, n)), colortype="tuple")
    a = np.array(colours, dtype=np.float64)
    return a * 255 if a.max() <= 1 else a


def sequential_ok(name: str) -> bool:
    """Order survives every deficiency: L* strictly monotone along the scale, over ≥ 60 of its 100
    (a heatmap must read low → high in lightness alone, as a projector or a grey printout shows)."""
    for vision in SIMULATE:
        L = lab(stops(name), vision)[:, 0]
        if not (np.all(np.diff(L) > 0) or np.all(np.diff(L) < 0)) or abs(L[-1] - L[0]) < 60:
            return False
    return True


def worst_end_difference(name: str) -> float:
    """The smallest ΔE76 between a diverging scale's two ends over every kind of vision."""
    return min(float(np.linalg.norm(np.subtract(*lab(stops(name)[[0, -1]], v)))) for v in SIMULATE)


def diverging_ok(name: str) -> bool:
    """Both signs stay apart and zero stays the lightest: the ends differ by ΔE76 ≥ 30 under every
    deficiency (about 13 just-noticeable differences of 2.3), and L* rises to the midpoint and
    falls after it, the midpoint at least 40 above either end."""
    if worst_end_difference(name) < 30:
        return False
    for vision in SIMULATE:
        L = lab(stops(name), vision)[:, 0]
        if not (np.all(np.diff(L[:6]) > 0) and np.all(np.diff(L[5:]) < 0)) or L[5] - max(L[0], L[-1]) < 40:
            return False
    return True


def test_the_checks_fail_the_scales_known_to_be_unsafe():
    """The checks can fail: jet's lightness is not monotone, red–green's ends merge under
    deuteranopia."""
    assert not sequential_ok("Jet")
    assert not diverging_ok("RdYlGn")
    assert worst_end_difference("RdYlGn") < 20


@pytest.mark.parametrize("palette", [Palette.CB, Palette.CONTRAST])
def test_every_palette_scale_is_colour_blind_safe(palette):
    assert sequential_ok(palettes.SEQUENTIAL[palette])
    assert diverging_ok(palettes.DIVERGING[palette])
    # and the diverging one separates its ends better than the designed RdBu in the worst case
    assert worst_end_difference(palettes.DIVERGING[palette]) > worst_end_difference("RdBu")


def _heatmap_traces(spec: dict) -> list[dict]:
    return [t for t in spec["data"] if t.get("type") == "heatmap"]


def test_restyle_recolours_every_heatmap_and_never_the_shared_figure():
    seq = figures.heatmap(np.arange(9.0).reshape(3, 3), title="P")
    div = figures.heatmap(np.arange(9.0).reshape(3, 3) - 4, colorscale="RdBu_r", zmid=0)
    before = seq.to_plotly_json()
    assert palettes.restyle(seq, Palette.DESIGNED) is seq
    for palette in (Palette.CB, Palette.CONTRAST):
        assert (
            _heatmap_traces(palettes.restyle(seq, palette))[0]["colorscale"] == palettes.SEQUENTIAL[palette]
        )
        assert _heatmap_traces(palettes.restyle(div, palette))[0]["colorscale"] == palettes.DIVERGING[palette]
    assert seq.to_plotly_json() == before  # the cached figure is untouched
    lines = figures.lines([1, 2], {"a": [1, 2]})
    assert palettes.restyle(lines, Palette.CONTRAST)["data"][0]["line"]["width"] == 3.5


def _colour_scales(at) -> list:
    import json

    return [
        t["colorscale"] for c in at.get("plotly_chart") for t in _heatmap_traces(json.loads(c.proto.spec))
    ]


def test_the_palette_is_kept_in_the_url_and_reaches_every_heatmap(app):
    cividis, puor = palettes._expanded("Cividis_r"), palettes._expanded("PuOr")
    at = app("pages/playground.py", palette="cb")
    assert at.selectbox(key="palette").value is Palette.CB and not at.exception
    scales = {palettes._stops(s) for s in _colour_scales(at)}
    assert scales and scales <= {cividis, puor} and puor in scales  # S is diverging, P and O are not
    at.selectbox(key="palette").set_value(Palette.CONTRAST).run()
    assert at.query_params["palette"] == "contrast"
    at.switch_page("pages/masks.py").run()  # kept on another page, as the projector mode is
    assert at.query_params["palette"] == "contrast" and not at.exception
    at.selectbox(key="palette").set_value(Palette.DESIGNED).run()
    assert "palette" not in at.query_params  # the default leaves the link clean
    refused = app(palette="neon")
    assert any("`neon` is not allowed here" in c.value for c in refused.caption)


def test_every_figure_offers_a_standalone_html_download(app):
    at = app("pages/playground.py")
    charts = at.get("plotly_chart")
    assert not [d for d in at.get("download_button") if "__html" in d.proto.id]  # sent once opened
    for chart in charts:
        at.session_state[f"{chart.proto.id.rsplit('-', 1)[-1]}__slides"] = True  # open every popover
    at.run()
    downloads = [d for d in at.get("download_button") if "__html" in d.proto.id]
    assert len(charts) == len(downloads) > 0 and not at.exception


def test_standalone_html_inlines_plotly_and_the_data():
    z = np.array([[0.125, 0.875], [0.5, 0.5]])
    html = figures.standalone_html(palettes.restyle(figures.heatmap(z, title="P <i>"), Palette.CB), "P <i>")
    assert html.startswith("<!doctype html>") and "<title>P &lt;i&gt;</title>" in html
    # that it fetches nothing is checked where it counts: in Chromium with the network blocked
    assert len(html) > 3_000_000  # plotly.js itself (4.6 MiB) is in the file
    assert "Plotly.downloadImage" in html  # its own SVG and PNG buttons
    import json
    import re

    spec = json.loads(re.search(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*\{", html, re.S).group(1))
    assert np.array_equal(plotly_array(spec[0]["z"]), z) and spec[0]["colorscale"]


PAGE_BACKGROUND = np.array([[255.0, 255.0, 255.0]])  # Streamlit's light theme: the figures sit on white


@pytest.mark.parametrize("palette", [Palette.CB, Palette.CONTRAST])
def test_the_largest_value_is_the_most_salient_cell(palette):
    """On the white page the largest weight must stand out most: its lightness contrast with the
    background (L* of white minus L* of the cell) grows along the sequential scale under every kind
    of vision; with normal vision the top stop is also the one furthest from white in colour
    (ΔE76). Pale yellow is far from white in hue, so ΔE is not monotone (under protanopia cividis's
    two ends are 0.5 apart in ΔE); lightness is what a projector and a grey printout keep."""
    name = palettes.SEQUENTIAL[palette]
    for vision in SIMULATE:
        background = lab(PAGE_BACKGROUND, vision)[0]
        colours = lab(stops(name), vision)
        lightness_contrast = background[0] - colours[:, 0]
        assert np.all(np.diff(lightness_contrast) > 0), (vision, lightness_contrast.round(1))
        assert lightness_contrast[-1] - lightness_contrast[0] > 60
    normal = lab(stops(name), "normal vision")
    difference = np.linalg.norm(normal - lab(PAGE_BACKGROUND, "normal vision")[0], axis=-1)
    assert difference.argmax() == len(difference) - 1, difference.round(1)
