"""What one head can express: kernel smoothing, the rank bound, which keys can win, rank collapse,
and the change of basis that leaves a head unchanged (cards 8, 10 and 17; the lesson's two circuits;
card 9's heads sum). Every number comes from one call into attn_core.views.one_head."""

from dataclasses import replace
from functools import partial

import streamlit as st

from attn_core.views import one_head
from attn_core.views.one_head import (
    IDENTITY_TOL,
    MAX_LAYERS,
    MAX_RANK_T,
    MAX_STACKS,
    MAX_WIDTH,
    ExpressivityInputs,
    Section,
)
from lab_ui import figures, widgets
from lab_ui import one_head_charts as charts
from lab_ui.badges import check_badges, number_table, slip_columns
from lab_ui.page import compute, header, require, run_section, section_picker, show_code

INPUTS = "the sizes and the seed in the sidebar"


# Each sidebar control: the input it sets → (widget, label, least, most, default, key).
CONTROLS = {
    "T": (widgets.slider, "T (tokens, rank study)", 2, MAX_RANK_T, 64, "oh_T"),
    "d_k": (widgets.slider, "d_k (rank study)", 1, MAX_RANK_T, 8, "oh_dk"),
    "circle_keys": (widgets.slider, "keys on the circle", 2, 36, 12, "oh_circle"),
    "layers": (widgets.slider, "layers", 1, MAX_LAYERS, 12, "oh_layers"),
    "width": (widgets.number, "width d (collapse, circuits)", 2, MAX_WIDTH, 64, "oh_width"),
    "heads": (widgets.number, "heads h (must divide d)", 1, 16, 4, "oh_heads"),
    "stacks": (widgets.slider, "random stacks", 1, MAX_STACKS, 8, "oh_stacks"),
    "seed": (widgets.number, "seed", 0, 10_000, 0, "oh_seed"),
}
TITLE = "What one head can express"
INTRO = (
    "A head returns a weighted average of its values, with weights softmax(q·k/√d_k). That makes it a "
    "**kernel smoother** (card 8) whose logits have **rank at most d_k** (card 10); stacked without "
    "residuals, heads drive every token to the same vector (card 17). What a head computes depends on W_Q "
    "W_Kᵀ and W_V W_O only: any invertible change of basis leaves it unchanged."
)
FIX = "the input marked above"


def sidebar_inputs(section: Section) -> ExpressivityInputs:
    """The sidebar shows the controls of the chosen section only (`one_head.SECTION_INPUTS`); the
    others keep the value they last had."""
    used = one_head.SECTION_INPUTS[section]
    values = {}
    for name, (widget, label, least, most, default, key) in CONTROLS.items():
        if name not in used:
            values[name] = int(widgets.kept(key, default))
        elif widget is widgets.number:
            values[name] = int(widget(label, least, most, default, key=key, step=1))
        else:
            values[name] = int(widget(label, least, most, default, key=key))
    return ExpressivityInputs(**values)


def section_inputs(section: Section, x: ExpressivityInputs) -> ExpressivityInputs:
    """The chosen section's own widgets, drawn above it (the smoother's λ and noise). They feed its
    view, so they are inputs, read before the page's one view call; a change reruns the whole page,
    not the section's fragment alone."""
    if section is not Section.KERNEL:
        return x
    c = st.columns(2)
    with c[0]:
        lam = widgets.slider("bandwidth λ", 0.0, 3.0, 0.5, key="oh_lam", step=0.05)
    with c[1]:
        noise = widgets.slider("noise sd", 0.0, 1.0, 0.3, key="oh_noise", step=0.05)
    return replace(x, bandwidth=lam, noise=noise)


def kernel(view: one_head.KernelView) -> None:
    lam, sm = view.inputs.bandwidth, view.smoothing
    curves = {
        "sin x (truth)": sm.truth,
        "Nadaraya–Watson": sm.nadaraya_watson,
        "attention + key bias": sm.with_bias,
        "✗ attention, no bias": sm.without_bias,
    }
    title = f"{one_head.NW_POINTS} noisy points of sin x, λ = {lam:g}"
    figures.show(charts.smoothing_chart(sm.x, sm.y, sm.grid, curves, title), key="oh_nw")
    m = st.columns(2)
    m[0].metric("max |NW − attention with bias|", f"{sm.bias_error:.1e}")
    m[1].metric("✗ max |NW − attention without bias|", f"{sm.no_bias_error:.3g}")
    check_badges(view.checks)
    st.caption(
        "softmax(q·k/λ² − ‖k‖²/2λ²) is the Gaussian smoother exactly: the ‖q‖² term cancels in the softmax. "
        "Drop the key bias and long keys (large x) win. The spec's 1.09 comes from its own noise draw, "
        "which it does not give; this seeded curve gives the value above. With keys of one length (on a "
        "circle) plain attention is exact."
    )


def ranks(view: one_head.RankView) -> None:
    s = view.study
    title = f"Singular values, T = {s.T}, d_k = {s.d_k} (S = QKᵀ/√d_k)"
    figures.show(charts.singular_values(s.singular_values, s.d_k, title), key="oh_sv")
    rows = [{"matrix": n, "numerical rank": s.ranks[n], "card 10's bound": s.bounds[n]} for n in s.ranks]
    number_table(rows, "one_head_ranks.csv", "oh_rank")
    check_badges(view.checks)
    st.caption(
        "Slip: 'the attention weights have rank ≤ d_k'. The logits do; P is exp of them, full rank, while "
        "log P = S − ℓ1ᵀ has rank ≤ d_k + 1. Card 10: rank 8 vs 64 at T = 64, d_k = 8."
    )


def select(view: one_head.SelectView) -> None:
    one, keys = view.one_dim, view.inputs.circle_keys
    m = st.columns(3)
    m[0].metric(
        "d_k = 1: trials where top ∈ {argmax k, argmin k}",
        f"{one.extreme_share:.1%}",
        help=f"{one.trials:,} random instances of {one.T} scalar queries and keys",
    )
    m[1].metric("most distinct top keys in a trial", f"{one.most_distinct}")
    m[2].metric("d_k = 2: keys that some query picks", f"{view.circle.selectable_2d} of {keys}")
    fig = charts.one_dim_winners(
        one.example_q, one.example_k, one.example_top, f"d_k = 1, one instance: {one.T} queries, {one.T} keys"
    )
    figures.show(fig, key="oh_one_dim")
    fig = charts.selection_bars(view.counts, f"{keys} keys on a circle, {one_head.CIRCLE_QUERIES} queries")
    figures.show(fig, key="oh_select")
    check_badges(view.checks)
    st.caption(
        "At d_k = 1 each score is q_i k_j: a positive query picks the largest key, a negative one the "
        "smallest. At d_k = 2 a query pointing at a key selects it."
    )


def collapse(view: one_head.CollapseView) -> None:
    x, cur = view.inputs, view.curves
    curves = {"pure attention": cur.pure, "with residual connections": cur.residual}
    title = f"Distance from rank 1, median of {x.stacks} random stacks (32 tokens, width {x.width})"
    figures.show(charts.collapse_chart(cur.layers, curves, title), key="oh_collapse")
    m = st.columns(3)
    m[0].metric("cubic rate: slope per decade", f"{view.cubic.slope:.3f}")
    m[1].metric("uniform head Var (T = 4,096)", f"{view.uniform.variance:.3g}", help="σ_v²/T = 2.44e-4")
    m[2].metric(f"r after {x.layers} layers with residuals", f"{float(cur.residual[-1]):.3g}")
    check_badges(view.checks)
    rows = [
        {"layer l": i, "r_l pure": float(cur.pure[i + 1]), "r_(l+1) / r_l³": float(cur.cubic_ratio[i])}
        for i in range(min(6, len(cur.cubic_ratio)))
    ]
    number_table(rows, "one_head_collapse.csv", "oh_collapse", "%.3g")
    st.caption(
        "Slip: 'residuals prevent collapse' — they slow it at random initialization. r_(l+1) ≤ C·r_l³ is a "
        "bound: here the ratios fall below 1 after the first layer (the outputs shrink, so C does). The "
        "spec's per-layer numbers (0.783 → 0.273 → 0.0126, ratios of order 1) depend on weight scales it "
        "does not give; this seeded stack uses W entries N(0, 1/d). The slope above is the cubic law "
        "measured directly: one fixed layer, inputs shrunk 10× at a time."
    )


def circuits(view: one_head.CircuitsView) -> None:
    diffs = {
        "orthogonal R": view.orthogonal.scores_right,
        "general R": view.general.scores_right,
        "W_V R, R⁻¹W_O": view.general.outputs_right,
        "heads sum": view.heads.max_abs_diff,
        "✗ same R, general": view.general.scores_slip,
    }
    figures.show(
        charts.identity_bars(diffs, IDENTITY_TOL, "Scores/outputs after each change (max |Δ|)"), key="oh_id"
    )

    right, wrong = partial(check_badges, view.checks), partial(check_badges, view.slip_checks)
    slip_columns(right, wrong, "W_Q R and W_K R (the same R on both)")
    st.caption(
        "(W_Q R)(W_K R⁻ᵀ)ᵀ = W_Q W_Kᵀ for any invertible R (here κ(R) = "
        f"{view.general.condition_number:.2f}); the same R on both sides works only when R Rᵀ = I. "
        "concat(head₁…head_h)·W_O = Σ_h head_h·W_O[h]: the output projection reads each head through its "
        "own block of rows."
    )


SHOW = {
    Section.KERNEL: kernel,
    Section.RANK: ranks,
    Section.SELECT: select,
    Section.COLLAPSE: collapse,
    Section.CIRCUITS: circuits,
}


def inputs() -> tuple[Section, ExpressivityInputs]:
    """The section, then the sidebar's sizes, checked (the page stops on one to fix)."""
    section = section_picker(Section, key="oh_section")
    with st.sidebar:
        st.header("Inputs")
        x = compute(one_head.validate, sidebar_inputs(section), inputs=INPUTS)
    require(x)
    return section, x


def build(ask: tuple[Section, ExpressivityInputs]):
    section, x = ask
    return compute(one_head.view, section, section_inputs(section, x), inputs=INPUTS)


def show(ask: tuple[Section, ExpressivityInputs], view) -> None:
    run_section(SHOW[ask[0]], view, inputs=INPUTS)
    show_code("attn_core.theory.kernel_smoothing: attention with the key bias", one_head.CODE)


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
