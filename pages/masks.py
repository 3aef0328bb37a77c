"""Masks & leakage: what a causal mask guarantees, and every way to get it wrong (cards 6 and 7)."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from attn_core.experiments import conventions, decoding, equivariance, fully_masked, mask_slips, perturbation
from attn_core.explore import inputs
from attn_core.explore import masks as mask_gallery
from attn_core.limits import LIMITS
from attn_core.oracle import MATCH_TOL, ROUNDING_TOL
from lab_ui import figures, state
from lab_ui.page import header
from lab_ui.widgets import attempt, format_diff, oracle_badge, table

MAX_T = LIMITS.experiment_tokens
MAX_GALLERY = LIMITS.gallery_len
METHOD_COLORS = dict(
    zip(perturbation.METHODS, ("#2e7d32", "#ef6c00", "#66bb6a", "#6a1b9a", "#757575"), strict=True)
)
SECTIONS = (
    "Mask gallery",
    "Change the future",
    "Fully masked rows",
    "Cached decoding",
    "Conventions",
    "Permutations",
    "Slips",
)

header(
    "Masks & leakage",
    "A mask is a promise: **query i reads only the keys it is allowed to**. Adding −∞ to a blocked "
    "score before the softmax keeps that promise, because exp(−∞) = 0 leaves the key out of the numerator "
    "*and* the normalizer. This page tests the promise instead of trusting it, and shows the "
    "shape-compatible slips that break it. Mask convention on this page: **True / 1 = may attend**.",
)

with st.sidebar:
    st.header("Tokens for the experiments")
    st.caption(f"Seeded random q, k, v per token (float64, one head). Caps: T ≤ {MAX_T}, d ≤ 32.")
    T = state.slider("T (tokens)", 2, MAX_T, 8, key="mk_T")
    d = state.slider("d_k = d_v", 1, 32, 4, key="mk_d")
    seed = int(state.number("seed", 0, 2**31 - 1, 0, key="mk_seed", step=1))

qkv = attempt(inputs.random_qkv, T, T, d, d, 1, 1, seed)
section = state.radio("Section", SECTIONS, key="mk_section", horizontal=True, label_visibility="collapsed")


def mask_figure(allowed: torch.Tensor, title: str, offset: int = 0, key: str = "") -> None:
    """1 = may attend (dark), 0 = blocked (white); queries labelled by absolute position."""
    L, S = allowed.shape
    fig = figures.heatmap(
        allowed.to(torch.float64),
        [f"k{j}" for j in range(S)],
        [f"q{i + offset}" for i in range(L)],
        title=title,
        colorscale=[[0, "#ffffff"], [1, "#1f4e9c"]],
        zmin=0,
        zmax=1,
        value_name="may attend",
    )
    fig.update_traces(texttemplate=None, showscale=False, xgap=1, ygap=1)
    figures.show(fig, key=key)


def toy_note() -> None:
    st.caption(
        "On the spec's toy sentence (*the river bank was steep*), card 6 reports that changing *steep* "
        "moves bank's unmasked output by 0.217 and its zeroed-after-softmax output by 0.162, and that "
        "bank's zeroed weights sum to 0.583. Those numbers depend on the vectors of *was* and *steep*, "
        "which the spec does not give, so this page does not pretend to reproduce them: it runs the "
        "same experiment on the seeded tokens in the sidebar."
    )


# ------------------------------------------------------------------------------------ gallery
def gallery() -> None:
    st.subheader("Mask gallery")
    kind = state.selectbox("mask kind", mask_gallery.GALLERY_KINDS, key="mk_kind")
    L, S, window, valid, lengths, prefix, grid = 6, 6, 3, 6, (), 0, ""
    if kind == "custom painted grid":
        st.caption(
            f"Paint one row per line: 1 (or # x ■) = may attend, 0 (or . ·) = blocked. Up to "
            f"{mask_gallery.MAX_GRID} × {mask_gallery.MAX_GRID}."
        )
        default = mask_gallery.default_grid()
        grid = state.text_area("painted mask", key="mk_grid", default=default, height=170)
    else:
        c1, c2 = st.columns(2)
        with c1:
            L = state.slider("L (queries)", 1, MAX_GALLERY, 6, key="mk_gL")
        with c2:
            S = state.slider("S (keys)", 1, MAX_GALLERY, 6, key="mk_gS")
        st.caption(
            f"Caps: L, S ≤ {MAX_GALLERY}. Query i sits at absolute position i + (S − L) = i + {S - L}."
        )
        if kind == "sliding window":
            window = state.slider("window (keys each query sees)", 1, max(S, 2), min(3, S), key="mk_win")
        elif kind == "padding":
            valid = state.slider("real (non-padding) keys", 1, max(S, 2), S, key="mk_valid")
        elif kind == "document (block-diagonal)":
            text = state.text_area(
                "document lengths (must add up to S)", key="mk_docs", default="2, 3, 1", height=68
            )
            lengths = attempt(mask_gallery.parse_lengths, text)
            if lengths is None:
                return
        elif kind == "prefix-LM":
            prefix = state.slider("prefix (bidirectional) length", 0, S, min(2, S), key="mk_prefix")
    view = attempt(
        mask_gallery.gallery_mask,
        kind,
        L,
        S,
        window=window,
        valid_keys=valid,
        doc_lengths=lengths,
        prefix=prefix,
        grid_text=grid,
    )
    if view is None:
        return
    L, S = view.allowed.shape
    c = st.columns(3)
    c[0].metric("allowed pairs", f"{view.allowed_pairs:,} of {view.total_pairs:,}")
    c[1].metric("allowed fraction", f"{view.fraction:.6g}")
    c[2].metric("fully masked rows", len(view.fully_masked_rows))
    offset = 0 if kind == "custom painted grid" else S - L
    mask_figure(view.allowed, f"{kind}: {L} × {S}", offset, key="mk_gallery_fig")
    if view.fully_masked_rows:
        rows = ", ".join(f"q{r + offset}" for r in view.fully_masked_rows[:12])
        st.warning(
            f"Row(s) {rows} may attend to no key: their softmax is 0/0. See *Fully masked rows* for what "
            "each fill and each PyTorch API turns that into.",
            icon="⚠️",
        )
    if kind.startswith("causal") and L == S:
        count = decoding.causal_pair_count(S)
        st.caption(
            f"Causal T × T: T(T + 1)/2 = {count.allowed_pairs:,} of T² = {count.total_pairs:,} pairs, "
            f"(T + 1)/2T = {count.fraction:.6g}. At T = 4,096 that is "
            f"{decoding.causal_pair_count(4096).fraction:.6f}: a kernel saves about half the work only if "
            "it skips the masked blocks."
        )


# ------------------------------------------------------------------------------- the future
def change_the_future() -> None:
    st.subheader("Change the future: the test that catches every causal-mask bug")
    c1, c2, c3 = st.columns(3)
    with c1:
        kind = state.radio(
            "change", ("future", "past"), key="mk_kind_pert",
            format_func=lambda k: "tokens after t" if k == "future" else "tokens up to t (control)",
        )  # fmt: skip
    with c2:
        if T > 2:
            t = state.slider("t (0-based)", 0, T - 2, min(2, T - 2), key="mk_t")
        else:  # a slider needs two distinct ends
            t = 0
            st.caption("t = 0: with T = 2 only token 1 lies in the future.")
    with c3:
        size = state.slider("size of the change", 0.1, 10.0, 3.0, key="mk_size", step=0.1)
    report = attempt(
        perturbation.perturbation_experiment, qkv.q, qkv.k, qkv.v, t, kind=kind, magnitude=size, seed=seed + 1
    )
    if report is None:
        return
    rows = list(range(T))
    fig = figures.lines(
        rows,
        {m.method: m.row_change.tolist() for m in report.methods},
        title=f"How far each output moved when tokens {report.changed[0]}…{report.changed[-1]} changed",
        x_title="query row i",
        y_title="‖oᵢ′ − oᵢ‖∞",
    )
    fig.update_traces(mode="lines+markers")
    for trace in fig.data:
        trace.line.color = METHOD_COLORS.get(trace.name)
        trace.line.dash = "dash" if "renormalize" in trace.name else None
    if kind == "future":
        fig.add_vrect(x0=-0.5, x1=t + 0.5, fillcolor="#2e7d32", opacity=0.08, line_width=0,
                      annotation_text="rows that must not move", annotation_position="top left")  # fmt: skip
        leaks = [(i, float(m.row_change[i]), m.method) for m in report.methods if m.verdict == "leaks"
                 for i in m.leaking_rows]  # fmt: skip
        if leaks:
            fig.add_trace(go.Scatter(
                x=[x for x, _, _ in leaks], y=[y for _, y, _ in leaks], text=[n for _, _, n in leaks],
                mode="markers", marker={"symbol": "x", "size": 12, "color": "#c62828"},
                name="leak: a row that must not move did", hovertemplate="%{text}<br>row %{x}: %{y:.4g}<extra></extra>",
            ))  # fmt: skip
    figures.show(fig, key="mk_leak_fig")
    df = pd.DataFrame(
        {
            "method": [m.method for m in report.methods],
            "verdict": [m.verdict for m in report.methods] if kind == "future" else "—",
            f"max change, rows 0…{t}": [m.max_leak for m in report.methods] if kind == "future" else "—",
            "leaking rows": [", ".join(map(str, m.leaking_rows)) or "none" for m in report.methods],
            "smallest change of a row that may see it": [m.min_visible_change for m in report.methods],
            "row sum furthest from 1": [m.worst_row_sum for m in report.methods],
        }
    )  # fmt: skip
    table(df, "change_the_future.csv", key="mk_leak", hide_index=True)
    if kind == "future":
        st.caption(
            "The right mask leaves rows 0…t unchanged to the last bit (0, not 1e-16): their arithmetic "
            "never touches a changed number. Zeroing after the softmax keeps the future's scores in the "
            "normalizer, so they leak. Renormalizing cancels that normalizer algebraically; what is left "
            f"is rounding (≤ {ROUNDING_TOL:.0e}), after computing and discarding every future "
            "exponential."
        )
    else:
        st.caption(
            "Control: changing token 0 must move every row (all of them may see it). If this showed "
            "zeros, the experiment could not detect anything."
        )
    toy_note()


# --------------------------------------------------------------------------- fully masked rows
@st.cache_data(show_spinner=False)
def api_measurements() -> pd.DataFrame:
    rows = fully_masked.measure_fully_masked_apis()
    return pd.DataFrame(
        {
            "API": [r.api for r in rows],
            "dtype": [r.dtype for r in rows],
            "backend": [r.backend for r in rows],
            "returned for the fully masked row": [r.result for r in rows],
        }
    )


def fully_masked_rows() -> None:
    st.subheader("Fully masked rows: 0/0 across fills and dtypes")
    c1, c2 = st.columns(2)
    with c1:
        S = state.slider("keys S in the row", 2, 16, 5, key="mk_fmS")
    with c2:
        spread = state.selectbox("score spread", (1.0, 10.0, 30.0, 100.0), key="mk_spread")
    cases = attempt(fully_masked.fully_masked_table, S, float(spread), seed)
    if cases is None:
        return
    df = pd.DataFrame(
        {
            "dtype": [c.dtype for c in cases],
            "fill": [c.fill for c in cases],
            "applied by": [c.how for c in cases],
            "fill stored as": [c.fill_in_dtype for c in cases],
            "fully masked row becomes": [c.empty_row for c in cases],
            "its weights": [", ".join(f"{p:.4g}" for p in c.empty_row_weights) for c in cases],
            "partial row: Σ p": [c.partial_row_sum for c in cases],
            "partial row: largest blocked weight": [c.partial_blocked_weight for c in cases],
        }
    )
    table(df, "fully_masked_rows.csv", key="mk_fm", hide_index=True)
    st.caption(
        "Row 0 blocks every key; row 1 blocks all but the first two. −∞ turns the empty row into 0/0 = NaN. "
        f"A finite fill hides it: every score equals the fill, so the row becomes uniform (1/S = {1 / S:.4g}). "
        "In float16 −1e9 cannot even be stored (masked_fill refuses; a cast makes it −∞), and added "
        "to float64 scores it keeps their differences, so the 'masked' row attends as if unmasked. The "
        "safe recipe: fill with the dtype's most negative finite number and zero those rows' outputs."
    )
    st.markdown("**What the installed PyTorch returns** (measured on this server, not assumed)")
    table(api_measurements(), "pytorch_fully_masked.csv", key="mk_api", hide_index=True)
    st.caption(
        f"torch {torch.__version__} on CPU. The spec records PyTorch 2.14.1's CPU SDPA returning zeros and "
        "nn.MultiheadAttention with need_weights=True returning NaN, and warns that this has varied by "
        "version and backend — which is why the table is measured on every start."
    )


# ---------------------------------------------------------------------------- cached decoding
def cached_decoding() -> None:
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
        mask_figure(r.top_left, f"top-left: key j ≤ i ✗ ({r.discarded_pairs} valid pairs dropped)", P,
                    key="mk_tl_fig")  # fmt: skip
        oracle_badge("the full causal pass", r.diff_top_left, MATCH_TOL)
        st.caption(
            f"SDPA's is_causal=True vs this top-left mask: max |Δ| = {format_diff(r.diff_sdpa_is_causal_vs_top_left)}; "
            f"vs the full pass: {format_diff(r.diff_sdpa_is_causal_vs_full)}. For L ≠ S it aligns top-left, "
            "so with a cache pass an explicit mask (or causal_lower_right)."
        )
    st.markdown("**Token-by-token decoding with a KV cache**")
    prefill = state.slider("prefill (tokens processed as one causal block)", 1, T, 1, key="mk_prefill")
    dec = attempt(decoding.decode_with_kv_cache, qkv.q, qkv.k, qkv.v, prefill)
    if dec is None:
        return
    oracle_badge("the full causal pass", dec.max_abs_diff, MATCH_TOL)
    steps = len(dec.cache_lengths)
    st.caption(
        f"{steps} decode step(s), cache growing {dec.cache_lengths[0] if steps else prefill}→{T} keys; each "
        f"step computes only the new token's q, k, v and attends without any mask. Bitwise equal to the "
        f"full pass: {'yes' if dec.bitwise_equal else 'no (summation order only)'}. Keys and values at "
        "positions ≤ t never change when later tokens arrive — the same fact the mask proves."
    )


# ------------------------------------------------------------------------------ conventions
def conventions_section() -> None:
    st.subheader("One mask, three spellings")
    c1, c2 = st.columns(2)
    with c1:
        pattern = state.selectbox("pattern", ("causal", "sliding window (3)"), key="mk_conv_kind")
    with c2:
        pad = state.slider("padding keys at the end", 0, T - 1, 1, key="mk_conv_pad")
    attn_allowed = (
        mask_gallery.gallery_mask("causal (top-left)", T, T).allowed
        if pattern == "causal"
        else mask_gallery.gallery_mask("sliding window", T, T, window=3).allowed
    )
    valid = mask_gallery.gallery_mask("padding", 1, T, valid_keys=T - pad).allowed[0]
    r = attempt(conventions.compare_conventions, qkv.q[0, 0], qkv.k[0, 0], qkv.v[0, 0], attn_allowed, valid)
    if r is None:
        return
    worst = max(row.max_abs_diff for row in r.rows if not row.is_slip)
    oracle_badge(
        "attn_core (True = may attend) through all four correct spellings", worst, conventions.AGREE_TOL
    )
    df = pd.DataFrame(
        {
            "API": [row.api for row in r.rows],
            "argument": [row.argument for row in r.rows],
            "True / value means": [row.meaning_of_true for row in r.rows],
            "max |Δ| vs attn_core": [format_diff(row.max_abs_diff) for row in r.rows],
            "same output": ["✓" if row.agrees else "✗" for row in r.rows],
        }
    )
    table(df, "mask_conventions.csv", key="mk_conv", hide_index=True)
    cols = st.columns(3)
    with cols[0]:
        mask_figure(
            conventions.from_allowed(r.allowed, "allowed"), "SDPA bool: True = may attend", key="mk_c1"
        )
    with cols[1]:
        mask_figure(conventions.from_allowed(r.allowed, "blocked"), "MHA bool: True = blocked", key="mk_c2")
    with cols[2]:
        additive = conventions.from_allowed(r.allowed, "additive")
        fig = figures.heatmap(
            additive, [f"k{j}" for j in range(T)], [f"q{i}" for i in range(T)], title="additive: 0 / −∞",
            colorscale="Greys", zmin=-1, zmax=0,
        )  # fmt: skip
        fig.update_traces(texttemplate=None, showscale=False, xgap=1, ygap=1)
        figures.show(fig, key="mk_c3")
    st.caption(
        "The last table row is the slip: SDPA's mask handed to nn.MultiheadAttention unchanged. It is the "
        "right shape and dtype, so nothing complains — the module blocks exactly the keys you meant to keep."
    )


# ----------------------------------------------------------------------------- permutations
def permutations() -> None:
    st.subheader("Permutation equivariance, and how order leaks in")
    c1, c2 = st.columns(2)
    with c1:
        sentence = state.text_area(
            "tokens (words)", key="mk_words", default="the river bank was steep", height=68
        )
        words = sentence.split()
    with c2:
        perm_text = state.text_area(
            "new order (0-based old positions) or 'reverse'", key="mk_perm", default="reverse", height=68
        )
    c3, c4 = st.columns(2)
    with c3:
        causal = state.toggle("causal mask", key="mk_causal")
    with c4:
        positions = state.toggle("add sinusoidal positions", key="mk_pos")
    if not 1 <= len(words) <= equivariance.MAX_TOKENS:
        st.error(f"Type 1…{equivariance.MAX_TOKENS} words separated by spaces.", icon="⚠️")
        return
    perm = attempt(equivariance.parse_permutation, perm_text, len(words))
    if perm is None:
        return
    X = equivariance.embed_words(words, 8, seed)
    r = attempt(equivariance.permutation_test, X, perm, causal=causal, positions=positions, seed=seed)
    if r is None:
        return
    new_words = [words[p] for p in perm]
    m = st.columns(2)
    m[0].metric("max |Attn(ΠX) − Π Attn(X)|", format_diff(r.equivariance_error))
    m[1].metric("mean-pooled difference", format_diff(r.pooled_error))
    if r.equivariance_error <= 1e-12:
        st.success(
            "Equivariant: the outputs moved with their tokens, and pooling cannot tell the orders apart."
        )
    else:
        what = " and ".join(x for x, on in (("the causal mask", causal), ("positions", positions)) if on)
        st.warning(f"Broken by {what}: the outputs are no longer the old ones reordered.")
    left, right = st.columns(2)
    names = [f"o[{c}]" for c in range(r.outputs.shape[-1])]
    with left:
        figures.show(figures.heatmap(r.outputs_of_permuted, names, new_words, title="Attn(ΠX)",
                                     x_title="output coordinate", y_title="token", colorscale="RdBu_r", zmid=0),
                     key="mk_perm_a")  # fmt: skip
    with right:
        figures.show(figures.heatmap(r.permuted_outputs, names, new_words, title="Π Attn(X)",
                                     x_title="output coordinate", y_title="token", colorscale="RdBu_r", zmid=0),
                     key="mk_perm_b")  # fmt: skip
    st.caption(
        "Card 7 reverses its toy sentence and measures 1.1 × 10⁻¹⁶ unmasked and up to 0.426 causal; that "
        "second number needs toy vectors the spec does not give."
    )
    st.markdown("**Position from nothing: the BOS share under a causal mask**")
    n = state.slider("positions", 2, MAX_T, 8, key="mk_bosT")
    b = equivariance.bos_share(n)
    t_axis = list(range(1, n + 1))
    series = {
        "causal: o_t": b.causal.tolist(),
        "1/t": b.expected.tolist(),
        "no mask: o_t": b.unmasked.tolist(),
    }
    figures.show(figures.lines(t_axis, series, title="Equal scores, v₁ = 1, others 0: output = token 1's share",
                               x_title="position t (1 = first)", y_title="o_t"), key="mk_bos_fig")  # fmt: skip
    st.caption(
        f"With the mask, position t spreads its weight over t keys: o_t = 1/t (max |o_t − 1/t| = "
        f"{format_diff(float((b.causal - b.expected).abs().max()))}). Without it every position gets 1/T = "
        f"{1 / n:.4g}: no signal."
    )


# ----------------------------------------------------------------------------------- slips
SLIPS = (
    "mask the weights after the softmax",
    "triu(ones, 0) instead of triu(ones, 1)",
    "−1e9 hiding a fully masked row",
    "top-left alignment with a cache",
)


def slips_section() -> None:
    st.subheader("Slips")
    slip = state.selectbox("slip", SLIPS, key="mk_slip")
    if slip == SLIPS[0]:
        t = min(2, T - 2)
        r = mask_slips.zeroing_slip(qkv.q, qkv.k, qkv.v, t)
        left, right = st.columns(2)
        labels = [f"k{j}" for j in range(T)], [f"q{i}" for i in range(T)]
        with left:
            figures.show(figures.heatmap(r.right_weights, *labels, title="✓ −∞ before the softmax", zmin=0, zmax=1),
                         key="mk_s0a")  # fmt: skip
        with right:
            figures.show(figures.heatmap(r.zeroed_weights, *labels, title="✗ zeroed after the softmax", zmin=0,
                                         zmax=1), key="mk_s0b")  # fmt: skip
        st.markdown(
            f"Zeroed rows sum to {', '.join(f'{s:.3f}' for s in r.zeroed_row_sums.tolist()[:8])}"
            f"{' …' if T > 8 else ''} instead of 1, and changing tokens after t = {t} moves rows 0…{t} by up "
            f"to **{r.leak.max_leak:.3g}**: the future leaks through the normalizer."
        )
    elif slip in SLIPS[1:3]:
        r = mask_slips.triu_slip(qkv.q, qkv.k, qkv.v)
        left, right = st.columns(2)
        with left:
            mask_figure(r.wrong_allowed, "✗ blocked = triu(ones, 0): the diagonal too", key="mk_s1a")
        with right:
            mask_figure(r.right_allowed, "✓ blocked = triu(ones, 1)", key="mk_s1b")
        row0 = pd.DataFrame(
            {
                "key": [f"k{j}" for j in range(T)],
                "triu 0, fill −∞": r.row0_inf_fill,
                "triu 0, fill −1e9": r.row0_finite_fill,
                "right mask": r.row0_right,
            }
        )
        table(row0, "triu_row0.csv", key="mk_triu", hide_index=True)
        st.markdown(
            f"Row 0 is fully masked. With −∞ it is NaN — loud. With −1e9 it is a uniform 1/T = {1 / T:.4g} "
            f"over keys it should never read — quiet, and every output moves (max |Δ| = "
            f"{r.output_gap_finite_fill:.3g} against the right mask)."
        )
    else:
        P = T // 2
        r = decoding.cached_block(qkv.q, qkv.k, qkv.v, P)
        left, right = st.columns(2)
        with left:
            mask_figure(r.bottom_right, "✓ bottom-right", P, key="mk_s3a")
        with right:
            mask_figure(r.top_left, "✗ top-left", P, key="mk_s3b")
        st.markdown(
            f"With P = {P} cached keys the top-left mask drops {r.discarded_pairs} valid (query, key) pairs "
            f"and the outputs differ from the full pass by up to **{r.diff_top_left:.3g}**."
        )


if qkv is None:
    st.info("Fix the input marked above; the page updates as soon as it is valid.")
    st.stop()

{
    "Mask gallery": gallery,
    "Change the future": change_the_future,
    "Fully masked rows": fully_masked_rows,
    "Cached decoding": cached_decoding,
    "Conventions": conventions_section,
    "Permutations": permutations,
    "Slips": slips_section,
}[section]()
