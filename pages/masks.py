"""Masks & leakage: what a causal mask guarantees, and every way to get it wrong (cards 6 and 7)."""

import pandas as pd
import streamlit as st

from attn_core.views import masks
from attn_core.views.masks import MAX_D, MAX_T
from lab_ui import figures, mask_charts, widgets
from lab_ui.badges import format_diff, oracle_badge, table
from lab_ui.page import compute, header, require, run_section, section_picker

INPUTS = "T, d and the seed in the sidebar"
TITLE = "Masks & leakage"
INTRO = (
    "A mask is a promise: **query i reads only the keys it is allowed to**. Adding −∞ to a blocked score "
    "before the softmax keeps that promise, because exp(−∞) = 0 leaves the key out of the numerator *and* "
    "the normalizer. This page tests the promise instead of trusting it, and shows the shape-compatible "
    "slips that break it. Mask convention on this page: **True / 1 = may attend**."
)
FIX = "the input marked above"
SPELLINGS = {
    "allowed": "SDPA bool: True = may attend",
    "blocked": "MHA bool: True = blocked",
    "additive": "additive: 0 / −∞",
}


def gallery(view: masks.MasksView) -> None:
    st.subheader("Mask gallery")
    mask = mask_charts.gallery_picker()
    if mask is None:
        return
    L, S = mask.allowed.shape
    c = st.columns(3)
    c[0].metric("allowed pairs", f"{mask.allowed_pairs:,} of {mask.total_pairs:,}")
    c[1].metric("allowed fraction", f"{mask.fraction:.6g}")
    c[2].metric("fully masked rows", len(mask.fully_masked_rows))
    offset = mask.query_positions[0]
    mask_charts.mask_figure(mask.allowed, f"{mask.kind}: {L} × {S}", offset, key="mk_gallery_fig")
    if mask.fully_masked_rows:
        rows = ", ".join(f"q{r + offset}" for r in mask.fully_masked_rows[:12])
        st.warning(
            f"Row(s) {rows} may attend to no key: their softmax is 0/0. See *Fully masked rows* for what "
            "each fill and each PyTorch API turns that into.",
            icon="⚠️",
        )
    if mask.kind.startswith("causal") and L == S:
        count, big = view.pair_counts(S)
        st.caption(
            f"Causal T × T: T(T + 1)/2 = {count.allowed_pairs:,} of T² = {count.total_pairs:,} pairs, (T + "
            f"1)/2T = {count.fraction:.6g}. At T = 4,096 that is {big.fraction:.6f}: a kernel saves about "
            "half the work only if it skips the masked blocks."
        )


def change_the_future(view: masks.MasksView) -> None:
    T = view.T
    st.subheader("Change the future: the test that catches every causal-mask bug")
    c1, c2, c3 = st.columns(3)
    with c1:
        kind = widgets.radio("change", masks.Change, key="mk_kind_pert").name.lower()
    with c2:
        t = widgets.slider("t (0-based)", 0, T - 2, min(2, T - 2), key="mk_t") if T > 2 else 0
        if T == 2:  # a slider needs two distinct ends
            st.caption("t = 0: with T = 2 only token 1 lies in the future.")
    with c3:
        size = widgets.slider("size of the change", 0.1, 10.0, 3.0, key="mk_size", step=0.1)
    future = compute(view.future, t, kind, size, inputs="t and the change")
    if future is None:
        return
    figures.show(mask_charts.leak_figure(future, t), key="mk_leak_fig")
    table(pd.DataFrame(future.table), "change_the_future.csv", key="mk_leak", hide_index=True)
    right = "future_right" if kind == "future" else "future_control"  # the control's note has no numbers
    st.caption(masks.note(right, tol=masks.ROUNDING_TOL))
    st.caption(masks.TOY_NOTE)


def fully_masked_rows(view: masks.MasksView) -> None:
    st.subheader("Fully masked rows: 0/0 across fills and dtypes")
    c1, c2 = st.columns(2)
    with c1:
        S = widgets.slider("keys S in the row", 2, 16, 5, key="mk_fmS")
    with c2:
        spread = widgets.selectbox("score spread", (1.0, 10.0, 30.0, 100.0), key="mk_spread")
    cases = compute(view.fully_masked, S, float(spread), inputs="S and the score spread")
    if cases is None:
        return
    table(pd.DataFrame(cases), "fully_masked_rows.csv", key="mk_fm", hide_index=True)
    st.caption(masks.note("fully_masked", uniform=1 / S))
    st.markdown("**What the installed PyTorch returns** (measured on this server, not assumed)")
    apis = compute(view.apis, inputs="the installed PyTorch")
    if apis is not None:
        table(pd.DataFrame(apis), "pytorch_fully_masked.csv", key="mk_api", hide_index=True)
    st.caption(masks.note("measured_here", torch=masks.TORCH_VERSION))


def cached_decoding(view: masks.MasksView) -> None:
    T = view.T
    st.subheader("Cached decoding: P cached keys, L new queries")
    P = widgets.slider("cached prefix P", 0, T - 1, T // 2, key="mk_P")
    r = compute(view.block, P, inputs="the cached prefix P")
    if r is None:
        return
    left, right = st.columns(2)
    with left:
        mask_charts.mask_figure(r.bottom_right, "bottom-right: key j ≤ P + i ✓", P, key="mk_br_fig")
        oracle_badge("the full causal pass", r.diff_bottom_right, masks.MATCH_TOL)
        oracle_badge("SDPA + causal_lower_right", r.diff_sdpa_lower_right, masks.MATCH_TOL)
    with right:
        mask_charts.mask_figure(
            r.top_left, f"top-left: key j ≤ i ✗ ({r.discarded_pairs} valid pairs dropped)", P, key="mk_tl_fig"
        )
        oracle_badge("the full causal pass", r.diff_top_left, masks.MATCH_TOL)
        st.caption(
            "SDPA's is_causal=True vs this top-left mask: max |Δ| = "
            f"{format_diff(r.diff_sdpa_is_causal_vs_top_left)}; vs the full pass: "
            f"{format_diff(r.diff_sdpa_is_causal_vs_full)}. For L ≠ S it aligns top-left, so with a cache "
            "pass an explicit mask (or causal_lower_right)."
        )
    st.markdown("**Token-by-token decoding with a KV cache**")
    prefill = widgets.slider("prefill (tokens processed as one causal block)", 1, T, 1, key="mk_prefill")
    dec = compute(view.decode, prefill, inputs="the prefill")
    if dec is None:
        return
    oracle_badge("the full causal pass", dec.max_abs_diff, masks.MATCH_TOL)
    bitwise = "yes" if dec.bitwise_equal else "no (summation order only)"
    first = dec.cache_lengths[0] if dec.cache_lengths else prefill
    st.caption(masks.note("kv_decoding", steps=len(dec.cache_lengths), first=first, T=T, bitwise=bitwise))


def conventions(view: masks.MasksView) -> None:
    st.subheader("One mask, three spellings")
    c1, c2 = st.columns(2)
    with c1:
        pattern = widgets.selectbox("pattern", masks.PATTERNS, key="mk_conv_kind", ids=masks.PATTERN_IDS)
    with c2:
        pad = widgets.slider("padding keys at the end", 0, view.T - 1, 1, key="mk_conv_pad")
    conv = compute(view.conventions, pattern, pad, inputs="the pattern and the padding")
    if conv is None:
        return
    oracle_badge(
        "attn_core (True = may attend) through all four correct spellings", conv.worst_correct, conv.tol
    )
    df = pd.DataFrame(conv.table)
    df["max |Δ| vs attn_core"] = df["max |Δ| vs attn_core"].map(format_diff)
    table(df, "mask_conventions.csv", key="mk_conv", hide_index=True)
    for n, (col, (which, title)) in enumerate(zip(st.columns(3), SPELLINGS.items(), strict=True), 1):
        with col:
            mask_charts.mask_figure(conv.masks[which], title, key=f"mk_c{n}", additive=which == "additive")
    st.caption(masks.note("conventions_slip"))


def permutations(view: masks.MasksView) -> None:
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
    perm = compute(view.permutations, words, perm_text, causal, positions, inputs="the tokens and the order")
    if perm is None:
        return
    r = perm.report
    m = st.columns(2)
    m[0].metric("max |Attn(ΠX) − Π Attn(X)|", format_diff(r.equivariance_error))
    m[1].metric("mean-pooled difference", format_diff(r.pooled_error))
    if perm.equivariant:
        st.success(
            "Equivariant: the outputs moved with their tokens, and pooling cannot tell the orders apart."
        )
    else:
        st.warning(f"Broken by {perm.broken_by}: the outputs are no longer the old ones reordered.")
    left, right = st.columns(2)
    with left:
        mask_charts.output_heatmap(r.outputs_of_permuted, perm.permuted_words, "Attn(ΠX)", key="mk_perm_a")
    with right:
        mask_charts.output_heatmap(r.permuted_outputs, perm.permuted_words, "Π Attn(X)", key="mk_perm_b")
    st.caption(masks.note("card7"))
    st.markdown("**Position from nothing: the BOS share under a causal mask**")
    n = widgets.slider("positions", 2, MAX_T, 8, key="mk_bosT")
    b = compute(view.bos, n, inputs="the positions")
    if b is None:
        return
    figures.show(mask_charts.bos_figure(b), key="mk_bos_fig")
    st.caption(
        "With the mask, position t spreads its weight over t keys: o_t = 1/t (max |o_t − 1/t| = "
        f"{format_diff(b.max_gap)}). Without it every position gets 1/T = {1 / n:.4g}: no signal."
    )


def slips(view: masks.MasksView) -> None:
    st.subheader("Slips")
    slip = mask_charts.slip_picker()
    st.caption(masks.SLIPS[slip].note)
    panels = compute(view.slip, slip, inputs="the slip")
    if panels is None:
        return
    mask_charts.slip_panels(panels, keys=("mk_s_right", "mk_s_wrong"))
    if panels.table is not None:
        table(pd.DataFrame(panels.table), "triu_row0.csv", key="mk_triu", hide_index=True)
    st.markdown(panels.text)


SHOW = {
    masks.Section.GALLERY: gallery,
    masks.Section.FUTURE: change_the_future,
    masks.Section.FULLY_MASKED: fully_masked_rows,
    masks.Section.DECODING: cached_decoding,
    masks.Section.CONVENTIONS: conventions,
    masks.Section.PERMUTATIONS: permutations,
    masks.Section.SLIPS: slips,
}


def inputs() -> tuple[int, int, int, masks.Section]:
    """The tokens for the experiments (T, d, seed) in the sidebar, and the section."""
    with st.sidebar:
        st.header("Tokens for the experiments")
        st.caption(f"Seeded random q, k, v per token (float64, one head). Caps: T ≤ {MAX_T}, d ≤ {MAX_D}.")
        T = widgets.slider("T (tokens)", 2, MAX_T, 8, key="mk_T")
        d = widgets.slider("d_k = d_v", 1, MAX_D, 4, key="mk_d")
        seed = int(widgets.number("seed", 0, 2**31 - 1, 0, key="mk_seed", step=1))
    return T, d, seed, section_picker(masks.Section, key="mk_section")


def build(ask: tuple[int, int, int, masks.Section]) -> masks.MasksView | None:
    return compute(masks.view, *ask[:3], inputs=INPUTS)  # T, d, seed


def show(ask: tuple[int, int, int, masks.Section], view: masks.MasksView) -> None:
    run_section(SHOW[ask[-1]], view, inputs=INPUTS)


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
