"""Attention Playground: scores, weights and outputs for your own Q, K, V (cards 1, 2 and 7)."""

import pandas as pd
import streamlit as st

from attn_core.views import playground
from lab_ui import figures, widgets
from lab_ui.badges import check_badges, oracle_badge, slip_columns, slip_picker, table
from lab_ui.inputs import mask_picker, qkv_picker, scale_picker
from lab_ui.page import compute, header, require, run_section, show_code

INPUTS = "Q, K, V, the scale and the mask in the sidebar"
TITLE = "Attention Playground"
INTRO = (
    "Choose where **Q**, **K**, **V** come from, a scale and a mask. The page computes "
    "S = QKᵀ·scale + M, P = softmax(S) row by row, and O = PV, and checks O against "
    "`torch.nn.functional.scaled_dot_product_attention`."
)
FIX = "the input marked in the sidebar"


def maps(ex: playground.PlaygroundView) -> None:
    qkv, res, head = ex.qkv, ex.result, ex.head
    oracle_badge("torch SDPA (float64)", ex.sdpa_max_abs_diff, ex.sdpa_tol)

    c = st.columns(6)
    c[0].metric("L (queries)", qkv.L)
    c[1].metric("S (keys)", qkv.S)
    c[2].metric("d_k · d_v", f"{qkv.q.shape[-1]} · {qkv.v.shape[-1]}")
    c[3].metric("heads (Q / KV)", f"{qkv.heads} / {qkv.k.shape[-3]}")
    c[4].metric("scale", f"{res.scale:.4g}")
    c[5].metric("allowed pairs", f"{100 * ex.allowed_share(head):.3g}%")

    # Drawn only once opened: a table makes the browser load its data grid before the first figure.
    with st.expander("Shapes of every intermediate", key="pg_shapes_open", on_change="rerun"):
        if st.session_state.get("pg_shapes_open"):
            shapes = pd.DataFrame(
                {"tensor": list(ex.shapes), "shape": [" × ".join(map(str, s)) for s in ex.shapes.values()]}
            )
            table(shapes, "shapes.csv", key="pg_shapes", hide_index=True)

    q_tok, k_tok = qkv.query_tokens, qkv.key_tokens
    two_maps = (
        ("pg_scores", res.scores[0, head], "Scores S = QKᵀ·scale + M", {"colorscale": "RdBu_r", "zmid": 0}),
        ("pg_weights", res.weights[0, head], "Weights P = softmax(S)", {"zmin": 0, "zmax": 1}),
    )
    for column, (key, z, title, style) in zip(st.columns(2), two_maps, strict=True):
        with column:
            figures.show_cached(figures.heatmap, z, k_tok, q_tok, title=title, key=key, **style)
    figures.show(
        figures.cached(
            figures.heatmap,
            res.output[0, head],
            list(qkv.value_names),
            q_tok,
            title="Output O = PV",
            x_title="value coordinate",
            colorscale="Viridis",
        ),
        key="pg_output",
    )


def row_peaks(ex: playground.PlaygroundView) -> None:
    st.subheader("How peaked is each row?")
    st.caption(
        "Entropy H = −Σ p ln p in nats; e^H is the effective number of keys a query reads (1 = one-hot)."
    )
    table(pd.DataFrame(ex.row_table(ex.head)), "row_statistics.csv", key="pg_stats", hide_index=True)


def temperature(ex: playground.PlaygroundView) -> None:
    qkv, shown = ex.qkv, playground.SWEEP_KEYS
    q_tok, k_tok = qkv.query_tokens, qkv.key_tokens
    st.subheader("Temperature: from one-hot to uniform")
    row = widgets.slider("query row", 0, qkv.L - 1, qkv.L - 1, key="pg_row") if qkv.L > 1 else 0
    sweep = ex.sweep(ex.head, row)
    figures.show(
        figures.cached(
            figures.lines,
            sweep.temperatures,
            {f"p({k_tok[j]})": sweep.weights[:, j] for j in range(min(qkv.S, shown))},
            title=f"softmax(s/τ) for query {q_tok[row]} (τ = 1 is the current scale)",
            x_title="temperature τ",
            y_title="weight",
            log_x=True,
        ),
        key="pg_sweep",
    )
    if shown < qkv.S:
        st.caption(f"Showing the first {shown} of {qkv.S} keys.")
    st.caption(
        f"Entropy goes from {float(sweep.entropy[0]):.3f} nats at τ = {float(sweep.temperatures[0]):.2g} "
        f"to {float(sweep.entropy[-1]):.3f} at τ = {float(sweep.temperatures[-1]):.0f}; the uniform limit is "
        f"ln(allowed keys) = {sweep.max_entropy:.3f}."
    )


def checks(ex: playground.PlaygroundView) -> None:
    qkv, head, slips = ex.qkv, ex.head, playground.SLIPS
    q_tok, k_tok = qkv.query_tokens, qkv.key_tokens
    st.subheader("Checks, and the slips that fail them")
    slip = slip_picker(slips, key="pg_slip")
    if slip is None:
        check_badges(ex.checks)
        return
    outcome = playground.slip_outcome(ex, slip, head)

    def show_right() -> None:
        figures.show(
            figures.cached(figures.heatmap, ex.result.weights[0, head], k_tok, q_tok, title="P", zmin=0),
            key="pg_slip_right",
        )
        check_badges(ex.checks)

    def show_wrong() -> None:
        if outcome.weights is not None:
            w = outcome.weights
            labels = (k_tok, q_tok) if tuple(w.shape) == (qkv.L, qkv.S) else (None, None)
            figures.show(
                figures.cached(figures.heatmap, w, *labels, title="what the slip computes", zmin=0),
                key="pg_slip_wrong",
            )
        if outcome.note:
            st.info(outcome.note)
        check_badges(outcome.checks)

    slip_columns(show_right, show_wrong, slips[slip].label)


def everything(ex: playground.PlaygroundView) -> None:
    """The page's one section: the maps, then the row statistics, the sweep and the checks."""
    maps(ex)
    row_peaks(ex)
    temperature(ex)
    checks(ex)


def inputs() -> tuple | None:
    """The sidebar: (Q, K and V, the allowed mask, the scale, the head to view), or None after a
    message there."""
    with st.sidebar:
        st.header("Inputs")
        qkv = qkv_picker()
        if qkv is None:
            return None
        scale = scale_picker(qkv.q.shape[-1])
        mask = mask_picker(qkv.L, qkv.S)
        head = widgets.slider("head to view", 0, qkv.heads - 1, 0, key="pg_head") if qkv.heads > 1 else 0
    return None if scale is None or mask is None else (qkv, mask.allowed, scale, head)


def build(ask: tuple | None) -> playground.PlaygroundView | None:
    """The view, its message (if any) in the sidebar."""
    with st.sidebar:
        return None if ask is None else compute(playground.view, *ask[:3], inputs=INPUTS)


def show(ask: tuple, view: playground.PlaygroundView) -> None:
    run_section(everything, view.at_head(ask[3]), inputs=INPUTS)
    show_code("attn_core.attention", playground.CODE)


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
