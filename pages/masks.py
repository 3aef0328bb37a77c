"""Masks & leakage: what a causal mask guarantees, and every way to get it wrong (cards 6 and 7)."""

import pandas as pd
import streamlit as st

from attn_core.views import masks as explore
from attn_core.views.mask_gallery import PAINTED
from attn_core.views.masks import MATCH_TOL, MAX_D, MAX_T, ROUNDING_TOL, SLIPS, Section
from lab_ui import figures, view_cache, widgets
from lab_ui.badges import attempt, format_diff, oracle_badge, table
from lab_ui.mask_charts import gallery_picker, leak_figure, mask_figure, output_heatmap, slip_panels
from lab_ui.page import compute, header, require, run_section, section_picker

header(
    "Masks & leakage",
    "A mask is a promise: **query i reads only the keys it is allowed to**. Adding −∞ to a blocked score "
    "before the softmax keeps that promise, because exp(−∞) = 0 leaves the key out of the numerator *and* "
    "the normalizer. This page tests the promise instead of trusting it, and shows the shape-compatible "
    "slips that break it. Mask convention on this page: **True / 1 = may attend**.",
)


def gallery() -> None:
    st.subheader("Mask gallery")
    view = gallery_picker()
    if view is None:
        return
    L, S = view.allowed.shape
    c = st.columns(3)
    c[0].metric("allowed pairs", f"{view.allowed_pairs:,} of {view.total_pairs:,}")
    c[1].metric("allowed fraction", f"{view.fraction:.6g}")
    c[2].metric("fully masked rows", len(view.fully_masked_rows))
    offset = 0 if view.kind == PAINTED else S - L
    mask_figure(view.allowed, f"{view.kind}: {L} × {S}", offset, key="mk_gallery_fig")
    if view.fully_masked_rows:
        rows = ", ".join(f"q{r + offset}" for r in view.fully_masked_rows[:12])
        st.warning(
            f"Row(s) {rows} may attend to no key: their softmax is 0/0. See *Fully masked rows* for what "
            "each fill and each PyTorch API turns that into.",
            icon="⚠️",
        )
    if view.kind.startswith("causal") and L == S:
        count, big = explore.causal_pair_count(S), explore.causal_pair_count(4096)
        st.caption(
            f"Causal T × T: T(T + 1)/2 = {count.allowed_pairs:,} of T² = {count.total_pairs:,} pairs, (T + "
            f"1)/2T = {count.fraction:.6g}. At T = 4,096 that is {big.fraction:.6f}: a kernel saves about "
            "half the work only if it skips the masked blocks."
        )


def change_the_future(qkv, T: int, seed: int) -> None:
    st.subheader("Change the future: the test that catches every causal-mask bug")
    c1, c2, c3 = st.columns(3)
    with c1:
        kind = widgets.radio(
            "change",
            ("future", "past"),
            key="mk_kind_pert",
            format_func=lambda k: "tokens after t" if k == "future" else "tokens up to t (control)",
        )
    with c2:
        t = widgets.slider("t (0-based)", 0, T - 2, min(2, T - 2), key="mk_t") if T > 2 else 0
        if T == 2:  # a slider needs two distinct ends
            st.caption("t = 0: with T = 2 only token 1 lies in the future.")
    with c3:
        size = widgets.slider("size of the change", 0.1, 10.0, 3.0, key="mk_size", step=0.1)
    view = attempt(view_cache.view, explore.change_the_future, qkv.q, qkv.k, qkv.v, t, kind, size, seed + 1)
    if view is None:
        return
    figures.show(leak_figure(view, t), key="mk_leak_fig")
    table(pd.DataFrame(view.table), "change_the_future.csv", key="mk_leak", hide_index=True)
    if kind == "future":
        st.caption(explore.note("future_right", tol=ROUNDING_TOL))
    else:
        st.caption(explore.note("future_control"))
    st.caption(explore.TOY_NOTE)


def fully_masked_rows(seed: int) -> None:
    st.subheader("Fully masked rows: 0/0 across fills and dtypes")
    c1, c2 = st.columns(2)
    with c1:
        S = widgets.slider("keys S in the row", 2, 16, 5, key="mk_fmS")
    with c2:
        spread = widgets.selectbox("score spread", (1.0, 10.0, 30.0, 100.0), key="mk_spread")
    cases = attempt(view_cache.view, explore.fully_masked_view, S, float(spread), seed)
    if cases is None:
        return
    table(pd.DataFrame(cases), "fully_masked_rows.csv", key="mk_fm", hide_index=True)
    st.caption(explore.note("fully_masked", uniform=1 / S))
    st.markdown("**What the installed PyTorch returns** (measured on this server, not assumed)")
    table(pd.DataFrame(explore.api_view()), "pytorch_fully_masked.csv", key="mk_api", hide_index=True)
    st.caption(explore.note("measured_here", torch=explore.TORCH_VERSION))


def cached_decoding(qkv, T: int) -> None:
    st.subheader("Cached decoding: P cached keys, L new queries")
    P = widgets.slider("cached prefix P", 0, T - 1, T // 2, key="mk_P")
    r = attempt(explore.cached_block, qkv.q, qkv.k, qkv.v, P)
    if r is None:
        return
    left, right = st.columns(2)
    with left:
        mask_figure(r.bottom_right, "bottom-right: key j ≤ P + i ✓", P, key="mk_br_fig")
        oracle_badge("the full causal pass", r.diff_bottom_right, MATCH_TOL)
        oracle_badge("SDPA + causal_lower_right", r.diff_sdpa_lower_right, MATCH_TOL)
    with right:
        mask_figure(
            r.top_left, f"top-left: key j ≤ i ✗ ({r.discarded_pairs} valid pairs dropped)", P, key="mk_tl_fig"
        )
        oracle_badge("the full causal pass", r.diff_top_left, MATCH_TOL)
        st.caption(
            "SDPA's is_causal=True vs this top-left mask: max |Δ| = "
            f"{format_diff(r.diff_sdpa_is_causal_vs_top_left)}; vs the full pass: "
            f"{format_diff(r.diff_sdpa_is_causal_vs_full)}. For L ≠ S it aligns top-left, so with a cache "
            "pass an explicit mask (or causal_lower_right)."
        )
    st.markdown("**Token-by-token decoding with a KV cache**")
    prefill = widgets.slider("prefill (tokens processed as one causal block)", 1, T, 1, key="mk_prefill")
    dec = attempt(explore.decode_with_kv_cache, qkv.q, qkv.k, qkv.v, prefill)
    if dec is None:
        return
    oracle_badge("the full causal pass", dec.max_abs_diff, MATCH_TOL)
    bitwise = "yes" if dec.bitwise_equal else "no (summation order only)"
    first = dec.cache_lengths[0] if dec.cache_lengths else prefill
    st.caption(explore.note("kv_decoding", steps=len(dec.cache_lengths), first=first, T=T, bitwise=bitwise))


def conventions(qkv, T: int) -> None:
    st.subheader("One mask, three spellings")
    c1, c2 = st.columns(2)
    with c1:
        pattern = widgets.selectbox("pattern", explore.PATTERNS, key="mk_conv_kind", ids=explore.PATTERN_IDS)
    with c2:
        pad = widgets.slider("padding keys at the end", 0, T - 1, 1, key="mk_conv_pad")
    view = attempt(explore.conventions_view, qkv.q[0, 0], qkv.k[0, 0], qkv.v[0, 0], pattern, pad)
    if view is None:
        return
    oracle_badge(
        "attn_core (True = may attend) through all four correct spellings", view.worst_correct, view.tol
    )
    df = pd.DataFrame(view.table)
    df["max |Δ| vs attn_core"] = df["max |Δ| vs attn_core"].map(format_diff)
    table(df, "mask_conventions.csv", key="mk_conv", hide_index=True)
    cols = st.columns(3)
    with cols[0]:
        mask_figure(view.masks["allowed"], "SDPA bool: True = may attend", key="mk_c1")
    with cols[1]:
        mask_figure(view.masks["blocked"], "MHA bool: True = blocked", key="mk_c2")
    with cols[2]:
        mask_figure(view.masks["additive"], "additive: 0 / −∞", key="mk_c3", additive=True)
    st.caption(explore.note("conventions_slip"))


def permutations(seed: int) -> None:
    st.subheader("Permutation equivariance, and how order leaks in")
    c1, c2 = st.columns(2)
    with c1:
        words = widgets.text_area(
            "tokens (words)", key="mk_words", default="the river bank was steep", height=68
        ).split()
    with c2:
        perm_text = widgets.text_area(
            "new order (0-based old positions) or 'reverse'", key="mk_perm", default="reverse", height=68
        )
    c3, c4 = st.columns(2)
    with c3:
        causal = widgets.toggle("causal mask", key="mk_causal")
    with c4:
        positions = widgets.toggle("add sinusoidal positions", key="mk_pos")
    view = attempt(view_cache.view, explore.permutations_view, words, perm_text, causal, positions, seed)
    if view is None:
        return
    r = view.report
    m = st.columns(2)
    m[0].metric("max |Attn(ΠX) − Π Attn(X)|", format_diff(r.equivariance_error))
    m[1].metric("mean-pooled difference", format_diff(r.pooled_error))
    if view.equivariant:
        st.success(
            "Equivariant: the outputs moved with their tokens, and pooling cannot tell the orders apart."
        )
    else:
        st.warning(f"Broken by {view.broken_by}: the outputs are no longer the old ones reordered.")
    left, right = st.columns(2)
    with left:
        output_heatmap(r.outputs_of_permuted, view.permuted_words, "Attn(ΠX)", key="mk_perm_a")
    with right:
        output_heatmap(r.permuted_outputs, view.permuted_words, "Π Attn(X)", key="mk_perm_b")
    st.caption(explore.note("card7"))
    st.markdown("**Position from nothing: the BOS share under a causal mask**")
    n = widgets.slider("positions", 2, MAX_T, 8, key="mk_bosT")
    b = explore.bos_share(n)
    series = {
        "causal: o_t": b.causal.tolist(),
        "1/t": b.expected.tolist(),
        "no mask: o_t": b.unmasked.tolist(),
    }
    figures.show(
        figures.lines(
            list(range(1, n + 1)),
            series,
            title="Equal scores, v₁ = 1, others 0: output = token 1's share",
            x_title="position t (1 = first)",
            y_title="o_t",
        ),
        key="mk_bos_fig",
    )
    st.caption(
        "With the mask, position t spreads its weight over t keys: o_t = 1/t (max |o_t − 1/t| = "
        f"{format_diff(b.max_gap)}). Without it every position gets 1/T = {1 / n:.4g}: no signal."
    )


def slips(qkv) -> None:
    st.subheader("Slips")
    slip = widgets.selectbox(
        "slip", list(SLIPS), key="mk_slip", format_func=lambda i: SLIPS[i].label, aliases=explore.SLIP_ALIASES
    )
    st.caption(SLIPS[slip].note)
    view = explore.slip_view(slip, qkv.q, qkv.k, qkv.v)
    slip_panels(view, keys=("mk_s_right", "mk_s_wrong"))
    if view.table is not None:
        table(pd.DataFrame(view.table), "triu_row0.csv", key="mk_triu", hide_index=True)
    st.markdown(view.text)


with st.sidebar:
    st.header("Tokens for the experiments")
    st.caption(f"Seeded random q, k, v per token (float64, one head). Caps: T ≤ {MAX_T}, d ≤ {MAX_D}.")
    T = widgets.slider("T (tokens)", 2, MAX_T, 8, key="mk_T")
    d = widgets.slider("d_k = d_v", 1, MAX_D, 4, key="mk_d")
    seed = int(widgets.number("seed", 0, 2**31 - 1, 0, key="mk_seed", step=1))
INPUTS = "T, d and the seed in the sidebar"
qkv = compute(explore.tokens, T, T, d, d, 1, 1, seed, inputs=INPUTS)
section = section_picker(Section, key="mk_section")
require(qkv, fix="the input marked above")
SHOW = {
    Section.GALLERY: gallery,
    Section.FUTURE: lambda: change_the_future(qkv, T, seed),
    Section.FULLY_MASKED: lambda: fully_masked_rows(seed),
    Section.DECODING: lambda: cached_decoding(qkv, T),
    Section.CONVENTIONS: lambda: conventions(qkv, T),
    Section.PERMUTATIONS: lambda: permutations(seed),
    Section.SLIPS: lambda: slips(qkv),
}
run_section(SHOW[section], inputs=INPUTS)
