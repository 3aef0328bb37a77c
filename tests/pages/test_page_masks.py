"""AppTest (no browser) of the Masks & leakage page, plus one real-browser interaction.

Numbers are checked against oracles written here: torch SDPA on the page's own seeded tokens,
the spec's formulas (T(T+1)/2, (T+1)/2T, 1/t, 1/T) and direct calls of the PyTorch APIs.
"""

import base64
import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from apptest_helpers import badges, metric, ok
from conftest import ARTIFACTS, wait_idle
from playwright.sync_api import expect

from attn_core.experiments import perturbation
from attn_core.views import inputs

PAGE = "pages/masks.py"
# float64 SDPA vs the page's numbers: summation order only (~1e-15); a wrong mask is off by O(0.1).
TOL = 1e-12


def open_section(app, section, **query):
    return app(PAGE, mk_section=section, **query)


def chart(at, index):
    return json.loads(at.get("plotly_chart")[index].proto.spec)


def trace_y(trace):
    y = trace["y"]
    if isinstance(y, dict):  # plotly 7 ships arrays base64-encoded
        return np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"])
    return np.asarray(y, dtype=np.float64)


def page_tokens(T=8, d=4, seed=0):
    """The sidebar's default tokens, rebuilt independently of the page."""
    return inputs.random_qkv(T, T, d, d, 1, 1, seed)


# ------------------------------------------------------------------------------------ gallery


def test_default_gallery_counts_causal_pairs(app):
    at = app(PAGE)
    ok(at)
    assert at.title[-1].value == "Masks & leakage"
    # Causal top-left 6 × 6: T(T + 1)/2 = 21 of 36 pairs, (T + 1)/2T = 7/12.
    assert metric(at, "allowed pairs") == "21 of 36"
    assert metric(at, "allowed fraction") == f"{7 / 12:.6g}"
    assert metric(at, "fully masked rows") == "0"
    assert any("0.500122" in c.value for c in at.caption)  # spec: (T + 1)/2T at T = 4,096


@pytest.mark.parametrize(
    "kind",
    [
        "causal (bottom-right, cached prefix)",
        "sliding window",
        "padding",
        "document (block-diagonal)",
        "prefix-LM",
        "custom painted grid",
    ],
)
def test_every_gallery_kind_draws(app, kind):
    at = app(PAGE, mk_kind=kind)
    ok(at)
    assert len(at.get("plotly_chart")) == 1


def test_document_lengths_must_add_up(app):
    at = app(PAGE, mk_kind="document (block-diagonal)")
    at.text_area(key="mk_docs").set_value("2, 2").run()
    assert not at.exception
    assert any("add up to 4, not to S = 6" in e.value for e in at.error)
    at.text_area(key="mk_docs").set_value("2, four").run()
    assert any("'four' is not a whole number" in e.value for e in at.error)
    at.text_area(key="mk_docs").set_value("1, 5").run()
    ok(at)


def test_painted_grid_errors_and_empty_rows(app):
    at = app(PAGE, mk_kind="custom painted grid")
    at.text_area(key="mk_grid").set_value("10\n1?").run()
    assert not at.exception
    assert any("row 2, column 2" in e.value for e in at.error)
    at.text_area(key="mk_grid").set_value("100\n000\n111").run()
    ok(at)
    assert metric(at, "fully masked rows") == "1"
    assert any("q1 may attend to no key" in w.value for w in at.warning)


def test_bottom_right_with_more_queries_than_keys_warns(app):
    at = app(PAGE, mk_kind="causal (bottom-right, cached prefix)", mk_gL=8, mk_gS=5)
    ok(at)
    assert metric(at, "fully masked rows") == "3"


# ------------------------------------------------------------------------------ change the future


def test_change_the_future_matches_sdpa(app):
    at = open_section(app, "Change the future")
    ok(at)
    df = at.dataframe[0].value.set_index("method")
    assert df.loc[perturbation.CORRECT, "verdict"] == "no leak: exactly 0"
    assert df.loc["zero weights after softmax", "verdict"] == "leaks"
    assert df.loc["no mask", "verdict"] == "leaks"
    assert df.loc["zero weights after softmax", "row sum furthest from 1"] < 1 - 1e-6
    # Oracle: SDPA (is_causal) on the page's tokens before and after the same change (t = 2, size 3).
    qkv = page_tokens()
    changed = list(range(3, 8))
    q2, k2, v2 = perturbation.perturbed_inputs(qkv.q, qkv.k, qkv.v, changed, magnitude=3.0, seed=1)

    def sdpa(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.0)

    expected = (sdpa(q2, k2, v2) - sdpa(qkv.q, qkv.k, qkv.v)).abs().amax(-1)[0, 0].numpy()
    traces = {t["name"]: t for t in chart(at, 0)["data"]}
    correct = trace_y(traces[perturbation.CORRECT])
    assert np.all(correct[:3] == 0)
    assert np.allclose(correct, expected, atol=TOL, rtol=0)
    leak = traces["leak: a row that must not move did"]  # leaking rows are marked
    assert set(leak["text"]) == {"zero weights after softmax", "multiply scores by the 0/1 mask", "no mask"}
    assert max(leak["x"]) <= 2


def test_change_the_past_control_moves_every_row(app):
    at = open_section(app, "Change the future", mk_kind_pert="past")
    ok(at)
    smallest = at.dataframe[0].value["smallest change of a row that may see it"]
    assert (smallest > 1e-6).all()


# ---------------------------------------------------------------------------- fully masked rows


def test_fully_masked_table_and_measured_apis(app):
    at = open_section(app, "Fully masked rows")
    ok(at)
    df = at.dataframe[0].value
    row = df[(df.dtype == "float64") & (df.fill == "-inf") & (df["applied by"] == "masked_fill")].iloc[0]
    assert row["fully masked row becomes"] == "NaN"  # 0/0
    row = df[(df.dtype == "float32") & (df.fill == "-1e9") & (df["applied by"] == "masked_fill")].iloc[0]
    assert row["its weights"] == ", ".join(["0.2"] * 5)  # spec: e^{-1e9} / (5 e^{-1e9}) = 0.2
    row = df[(df.dtype == "float16") & (df.fill == "-1e9") & (df["applied by"] == "masked_fill")].iloc[0]
    assert row["fully masked row becomes"].startswith("error")  # -1e9 does not fit in float16
    # The API table reports what a direct call returns here (oracle: the call itself).
    api = at.dataframe[1].value
    q, k, v = (torch.randn(1, 1, n, 8, dtype=torch.float64) for n in (2, 5, 5))
    allowed = torch.ones(2, 5, dtype=torch.bool)
    allowed[0] = False
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=0.0)[0, 0, 0]
    direct = "NaN" if torch.isnan(o).any() else "zeros" if bool((o == 0).all()) else "other"
    measured = api[
        (api.dtype == "float64")
        & (api.backend == "default dispatch")
        & (api.API == "F.scaled_dot_product_attention, bool mask")
    ].iloc[0]["returned for the fully masked row"]
    assert measured == direct or (direct == "other" and measured.startswith("uniform"))


# ------------------------------------------------------------------------------ cached decoding


def test_cached_decoding_badges(app):
    at = open_section(app, "Cached decoding", mk_P=5)
    ok(at)
    b = badges(at)
    assert b[0].startswith(":green-badge[✓ matches the full causal pass")  # bottom-right
    assert b[1].startswith(":green-badge[✓ matches SDPA + causal_lower_right")
    assert b[2].startswith(":red-badge[✗ DIFFERS FROM the full causal pass")  # top-left
    assert b[3].startswith(":green-badge[✓ matches the full causal pass")  # KV-cache decode
    spec = chart(at, 1)
    assert "15 valid pairs dropped" in spec["layout"]["title"]["text"]  # P · L = 5 · 3


def test_no_cache_means_no_difference(app):
    at = open_section(app, "Cached decoding", mk_P=0)
    ok(at)
    assert all(b.startswith(":green-badge") for b in badges(at))


# ---------------------------------------------------------------------------------- conventions


def test_conventions_agree_and_slip_is_flagged(app):
    at = open_section(app, "Conventions")
    ok(at)
    assert badges(at)[0].startswith(":green-badge[✓ matches attn_core")
    df = at.dataframe[0].value
    assert list(df["same output"]) == ["✓", "✓", "✓", "✓", "✗"]


def test_conventions_fully_masked_row_is_reported(app):
    at = open_section(app, "Conventions", mk_conv_kind="sliding window (3)")
    at.slider(key="mk_conv_pad").set_value(7).run()  # the last row's 3 keys are all padding
    assert not at.exception
    assert any("may attend to no key" in e.value for e in at.error)


# --------------------------------------------------------------------------------- permutations


def test_permutation_equivariance_then_causal_breaks_it(app):
    at = open_section(app, "Permutations")
    ok(at)
    assert at.success.len == 1
    err = metric(at, "max |Attn(ΠX) − Π Attn(X)|")
    assert err == "0" or float(err) <= TOL
    at.toggle(key="mk_causal").set_value(True).run()
    ok(at)
    assert any("Broken by the causal mask" in w.value for w in at.warning)
    assert float(metric(at, "max |Attn(ΠX) − Π Attn(X)|")) > 1e-3


def test_bos_share_is_one_over_t(app):
    at = open_section(app, "Permutations", mk_bosT=12)
    ok(at)
    traces = {t["name"]: t for t in chart(at, 2)["data"]}
    t = np.arange(1, 13)
    assert np.allclose(trace_y(traces["causal: o_t"]), 1 / t, atol=0, rtol=4 * 2**-52)
    assert np.allclose(trace_y(traces["no mask: o_t"]), 1 / 12, atol=0, rtol=4 * 2**-52)


@pytest.mark.parametrize(("text", "message"), [("0 1", "needs 5"), ("0 0 1 2 3", "missing"), ("x", "whole")])
def test_bad_permutation_is_reported(app, text, message):
    at = open_section(app, "Permutations")
    at.text_area(key="mk_perm").set_value(text).run()
    assert not at.exception
    assert any(message in e.value for e in at.error)


# ----------------------------------------------------------------------------------------- slips


def test_triu_slip_row_zero(app):
    at = open_section(app, "Slips", mk_slip="triu(ones, 0) instead of triu(ones, 1)")
    ok(at)
    df = at.dataframe[0].value
    assert df["triu 0, fill −∞"].isna().all()  # 0/0
    assert np.allclose(df["triu 0, fill −1e9"], 1 / 8, atol=1e-15)  # uniform 1/T at T = 8
    assert list(df["right mask"]) == [1.0] + [0.0] * 7


@pytest.mark.parametrize(
    "slip",
    [
        "mask the weights after the softmax",
        "−1e9 hiding a fully masked row",
        "top-left alignment with a cache",
    ],
)
def test_each_slip_renders(app, slip):
    at = open_section(app, "Slips", mk_slip=slip)
    ok(at)
    assert len(at.get("plotly_chart")) == 2


# ------------------------------------------------------------------------------ links and caps


def test_shared_link_restores_view_and_caps_hold(app):
    at = app(PAGE, mk_section="Cached decoding", mk_T=12, mk_P=7, mk_seed=3)
    ok(at)
    assert at.slider(key="mk_P").value == 7
    assert at.number_input(key="mk_seed").value == 3
    at = app(PAGE, mk_T=100000, mk_section="nonsense")
    ok(at)
    assert at.slider(key="mk_T").value == 8  # beyond the cap: back to the default
    assert at.radio(key="mk_section").value == "Mask gallery"


@pytest.mark.parametrize(("T", "d"), [(64, 32), (2, 1)])  # the largest and the smallest allowed
def test_extreme_sizes_render(app, T, d):
    for section in (
        "Change the future",
        "Fully masked rows",
        "Cached decoding",
        "Conventions",
        "Permutations",
        "Slips",
    ):
        at = app(PAGE, mk_section=section, mk_T=T, mk_d=d)
        ok(at)
        assert at.slider(key="mk_T").value == T


# ------------------------------------------------------------------------------------- browser


@pytest.mark.browser
def test_masks_page_in_browser(server_url, page):
    """Shared link to the cached-decoding section; moving P reruns, badges stay as they should."""
    page.goto(f"{server_url}/masks?mk_section=Cached+decoding&mk_P=3")
    wait_idle(page, 60_000)
    page.wait_for_selector('[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg', timeout=60_000)
    slider = page.get_by_role("slider", name="cached prefix P")
    expect(slider).to_have_value("3")
    slider.focus()
    page.keyboard.press("ArrowLeft")
    expect(slider).to_have_value("2")
    # The rerun starts after the slider's debounce: wait for its effect, not just for idle.
    page.wait_for_function("location.search.includes('mk_P=2')")
    wait_idle(page)
    assert "mk_P=2" in page.url  # the view is in the address bar (P = 4 would be the default, dropped)
    assert page.get_by_text("12 valid pairs dropped").count() >= 1  # P · L = 2 · 6
    assert page.locator("[data-testid=stException]").count() == 0
    page.screenshot(path=str(ARTIFACTS / "masks-cached.png"), full_page=True)
    assert page.console_errors == []


def test_top_left_rows_are_labelled_from_zero(app):
    """Top-left (SDPA is_causal) with more queries than keys: query i is position i, so the rows read
    q0…q7 and the last rows see every key; no negative positions."""
    at = app(PAGE, mk_kind="causal (top-left)", mk_gL=8, mk_gS=5)
    ok(at)
    assert chart(at, 0)["data"][0]["y"] == [f"q{i}" for i in range(8)]
    assert any("query i sits at position i" in c.value.lower() for c in at.caption)
