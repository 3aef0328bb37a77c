"""Masks & leakage: what a causal mask guarantees, and every way to get it wrong (cards 6 and 7)."""

import pandas as pd
import streamlit as st
import torch

from attn_core.experiments import decoding, equivariance
from attn_core.explore import inputs
from attn_core.explore import masks as explore
from attn_core.limits import LIMITS
from attn_core.oracle import MATCH_TOL, ROUNDING_TOL
from lab_ui import figures, state, view_cache
from lab_ui.mask_charts import gallery_picker, leak_figure, mask_figure, output_heatmap
from lab_ui.page import header, run_section
from lab_ui.widgets import attempt, format_diff, oracle_badge, table

MAX_T, MAX_D = LIMITS.experiment_tokens, LIMITS.experiment_width

header(
    "Masks & leakage",
    "A mask is a promise: **query i reads only the keys it is allowed to**. Adding −∞ to a blocked "
    "score before the softmax keeps that promise, because exp(−∞) = 0 leaves the key out of the numerator "
    "*and* the normalizer. This page tests the promise instead of trusting it, and shows the "
    "shape-compatible slips that break it. Mask convention on this page: **True / 1 = may attend**.",
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
    offset = 0 if view.kind == explore.PAINTED else S - L
    mask_figure(view.allowed, f"{view.kind}: {L} × {S}", offset, key="mk_gallery_fig")
    if view.fully_masked_rows:
        rows = ", ".join(f"q{r + offset}" for r in view.fully_masked_rows[:12])
        st.warning(f"Row(s) {rows} may attend to no key: their softmax is 0/0. See *Fully masked rows* for what "
                   "each fill and each PyTorch API turns that into.", icon="⚠️")  # fmt: skip
    if view.kind.startswith("causal") and L == S:
        count, big = decoding.causal_pair_count(S), decoding.causal_pair_count(4096)
        st.caption(f"Causal T × T: T(T + 1)/2 = {count.allowed_pairs:,} of T² = {count.total_pairs:,} pairs, "
                   f"(T + 1)/2T = {count.fraction:.6g}. At T = 4,096 that is {big.fraction:.6f}: a kernel saves "
                   "about half the work only if it skips the masked blocks.")  # fmt: skip


def change_the_future(qkv, T: int, seed: int) -> None:
    st.subheader("Change the future: the test that catches every causal-mask bug")
    c1, c2, c3 = st.columns(3)
    with c1:
        kind = state.radio("change", ("future", "past"), key="mk_kind_pert",
                           format_func=lambda k: "tokens after t" if k == "future" else "tokens up to t (control)")  # fmt: skip
    with c2:
        t = state.slider("t (0-based)", 0, T - 2, min(2, T - 2), key="mk_t") if T > 2 else 0
        if T == 2:  # a slider needs two distinct ends
            st.caption("t = 0: with T = 2 only token 1 lies in the future.")
    with c3:
        size = state.slider("size of the change", 0.1, 10.0, 3.0, key="mk_size", step=0.1)
    view = attempt(view_cache.view, explore.change_the_future, qkv.q, qkv.k, qkv.v, t, kind, size, seed + 1)
    if view is None:
        return
    figures.show(leak_figure(view, t), key="mk_leak_fig")
    table(pd.DataFrame(view.table), "change_the_future.csv", key="mk_leak", hide_index=True)
    if kind == "future":
        st.caption("The right mask leaves rows 0…t unchanged to the last bit (0, not 1e-16): their arithmetic never "
                   "touches a changed number. Zeroing after the softmax keeps the future's scores in the normalizer, "
                   "so they leak. Renormalizing cancels that normalizer algebraically; what is left is rounding "
                   f"(≤ {ROUNDING_TOL:.0e}), after computing and discarding every future exponential.")  # fmt: skip
    else:
        st.caption("Control: changing token 0 must move every row (all of them may see it). If this showed zeros, "
                   "the experiment could not detect anything.")  # fmt: skip
    st.caption(explore.TOY_NOTE)


def fully_masked_rows(seed: int) -> None:
    st.subheader("Fully masked rows: 0/0 across fills and dtypes")
    c1, c2 = st.columns(2)
    with c1:
        S = state.slider("keys S in the row", 2, 16, 5, key="mk_fmS")
    with c2:
        spread = state.selectbox("score spread", (1.0, 10.0, 30.0, 100.0), key="mk_spread")
    cases = attempt(view_cache.view, explore.fully_masked_view, S, float(spread), seed)
    if cases is None:
        return
    table(pd.DataFrame(cases), "fully_masked_rows.csv", key="mk_fm", hide_index=True)
    st.caption("Row 0 blocks every key; row 1 blocks all but the first two. −∞ turns the empty row into 0/0 = NaN. "
               f"A finite fill hides it: every score equals the fill, so the row becomes uniform (1/S = {1 / S:.4g}). "
               "In float16 −1e9 cannot even be stored (masked_fill refuses; a cast makes it −∞), and added to float64 "
               "scores it keeps their differences, so the 'masked' row attends as if unmasked. The safe recipe: fill "
               "with the dtype's most negative finite number and zero those rows' outputs.")  # fmt: skip
    st.markdown("**What the installed PyTorch returns** (measured on this server, not assumed)")
    table(pd.DataFrame(explore.api_view()), "pytorch_fully_masked.csv", key="mk_api", hide_index=True)
    st.caption(f"torch {torch.__version__} on CPU. The spec records PyTorch 2.14.1's CPU SDPA returning zeros and "
               "nn.MultiheadAttention with need_weights=True returning NaN, and warns that this has varied by version "
               "and backend — which is why the table is measured on this server.")  # fmt: skip


def cached_decoding(qkv, T: int) -> None:
    st.subheader("Cached decoding: P cached keys, L new queries")
    P = state.slider("cached prefix P", 0, T - 1, T // 2, key="mk_P")
    r = attempt(decoding.cached_block, qkv.q, qkv.k, qkv.v, P)
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
        st.caption(f"SDPA's is_causal=True vs this top-left mask: max |Δ| = {format_diff(r.diff_sdpa_is_causal_vs_top_left)}; "
                   f"vs the full pass: {format_diff(r.diff_sdpa_is_causal_vs_full)}. For L ≠ S it aligns top-left, "
                   "so with a cache pass an explicit mask (or causal_lower_right).")  # fmt: skip
    st.markdown("**Token-by-token decoding with a KV cache**")
    prefill = state.slider("prefill (tokens processed as one causal block)", 1, T, 1, key="mk_prefill")
    dec = attempt(decoding.decode_with_kv_cache, qkv.q, qkv.k, qkv.v, prefill)
    if dec is None:
        return
    oracle_badge("the full causal pass", dec.max_abs_diff, MATCH_TOL)
    st.caption(f"{len(dec.cache_lengths)} decode step(s), cache growing {dec.cache_lengths[0] if dec.cache_lengths else prefill}→{T} keys; each step "
               "computes only the new token's q, k, v and attends without any mask. Bitwise equal to the full pass: "
               f"{'yes' if dec.bitwise_equal else 'no (summation order only)'}. Keys and values at positions ≤ t never "
               "change when later tokens arrive — the same fact the mask proves.")  # fmt: skip


def conventions(qkv, T: int) -> None:
    st.subheader("One mask, three spellings")
    c1, c2 = st.columns(2)
    with c1:
        pattern = state.selectbox("pattern", ("causal", "sliding window (3)"), key="mk_conv_kind")
    with c2:
        pad = state.slider("padding keys at the end", 0, T - 1, 1, key="mk_conv_pad")
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
    st.caption("The last table row is the slip: SDPA's mask handed to nn.MultiheadAttention unchanged. It is the right "
               "shape and dtype, so nothing complains — the module blocks exactly the keys you meant to keep.")  # fmt: skip


def permutations(seed: int) -> None:
    st.subheader("Permutation equivariance, and how order leaks in")
    c1, c2 = st.columns(2)
    with c1:
        words = state.text_area(
            "tokens (words)", key="mk_words", default="the river bank was steep", height=68
        ).split()
    with c2:
        perm_text = state.text_area("new order (0-based old positions) or 'reverse'", key="mk_perm", default="reverse",
                                    height=68)  # fmt: skip
    c3, c4 = st.columns(2)
    with c3:
        causal = state.toggle("causal mask", key="mk_causal")
    with c4:
        positions = state.toggle("add sinusoidal positions", key="mk_pos")
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
    st.caption("Card 7 reverses its toy sentence and measures 1.1 × 10⁻¹⁶ unmasked and up to 0.426 causal; that "
               "second number needs toy vectors the spec does not give.")  # fmt: skip
    st.markdown("**Position from nothing: the BOS share under a causal mask**")
    n = state.slider("positions", 2, MAX_T, 8, key="mk_bosT")
    b = equivariance.bos_share(n)
    series = {
        "causal: o_t": b.causal.tolist(),
        "1/t": b.expected.tolist(),
        "no mask: o_t": b.unmasked.tolist(),
    }
    figures.show(figures.lines(list(range(1, n + 1)), series, title="Equal scores, v₁ = 1, others 0: output = token "
                               "1's share", x_title="position t (1 = first)", y_title="o_t"), key="mk_bos_fig")  # fmt: skip
    st.caption(f"With the mask, position t spreads its weight over t keys: o_t = 1/t (max |o_t − 1/t| = "
               f"{format_diff(b.max_gap)}). Without it every position gets 1/T = {1 / n:.4g}: no signal.")  # fmt: skip


def slips(qkv) -> None:
    st.subheader("Slips")
    view = explore.slip_view(state.selectbox("slip", explore.MASK_SLIPS, key="mk_slip"), qkv.q, qkv.k, qkv.v)
    for col, panel, key in zip(
        st.columns(2), (view.right, view.wrong), ("mk_s_right", "mk_s_wrong"), strict=True
    ):
        with col:
            if panel.is_mask:
                mask_figure(panel.values, panel.title, panel.offset, key=key)
            else:
                T = panel.values.shape[-1]
                labels = [f"k{j}" for j in range(T)], [f"q{i}" for i in range(T)]
                figures.show(
                    figures.heatmap(panel.values, *labels, title=panel.title, zmin=0, zmax=1), key=key
                )
    if view.table is not None:
        table(pd.DataFrame(view.table), "triu_row0.csv", key="mk_triu", hide_index=True)
    st.markdown(view.text)


# The sections, in the order of the page's radio; qkv, T and seed are read when one runs.
SHOW = {
    "Mask gallery": gallery,
    "Change the future": lambda: change_the_future(qkv, T, seed),
    "Fully masked rows": lambda: fully_masked_rows(seed),
    "Cached decoding": lambda: cached_decoding(qkv, T),
    "Conventions": lambda: conventions(qkv, T),
    "Permutations": lambda: permutations(seed),
    "Slips": lambda: slips(qkv),
}
with st.sidebar:
    st.header("Tokens for the experiments")
    st.caption(f"Seeded random q, k, v per token (float64, one head). Caps: T ≤ {MAX_T}, d ≤ {MAX_D}.")
    T = state.slider("T (tokens)", 2, MAX_T, 8, key="mk_T")
    d = state.slider("d_k = d_v", 1, MAX_D, 4, key="mk_d")
    seed = int(state.number("seed", 0, 2**31 - 1, 0, key="mk_seed", step=1))
qkv = attempt(inputs.random_qkv, T, T, d, d, 1, 1, seed)
section = state.radio("Section", list(SHOW), key="mk_section", horizontal=True, label_visibility="collapsed")
if qkv is None:
    st.info("Fix the input marked above; the page updates as soon as it is valid.")
    st.stop()
run_section(SHOW[section])
