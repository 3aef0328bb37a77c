"""Gradients: the softmax Jacobian of one row, and the backward pass checked three ways (cards 4, 5)."""

import streamlit as st

from attn_core.views import gradient_slips, gradients
from attn_core.views.gradients import FD_CAPS, JACOBIAN_MAX_KEYS, SLIPS, Section, Upstream
from lab_ui import figures, gradient_charts, widgets
from lab_ui.badges import check_badge, check_badges, number_table, oracle_badge, slip_columns, slip_picker
from lab_ui.inputs import mask_picker, qkv_picker, scale_picker
from lab_ui.page import compute, header, require, run_section, section_picker, show_code

INPUTS = "Q, K, V, the scale, the mask and G in the sidebar"
TITLE = "Gradients"
INTRO = (
    "How the loss reaches **Q**, **K** and **V**. The softmax of one row has the Jacobian "
    "J = diag(p) − ppᵀ (card 4); the backward pass is five matrix lines, dV = Pᵀ dO, dP = dO Vᵀ, "
    "dS = P ⊙ (dP − rowsum(dO ⊙ O)), dQ = dS K·scale, dK = dSᵀ Q·scale (card 5). Every number is "
    "checked against torch autograd through SDPA and against central finite differences in float64. "
    "The loss is L = ⟨O, G⟩ for the upstream gradient G = ∂L/∂O you choose."
)
FIX = "the input marked in the sidebar"


def jacobian(ex: gradients.GradientsView) -> None:
    q_name = ex.qkv.query_tokens[ex.row]
    st.subheader(f"J = ∂p/∂s for query {q_name} at τ = {ex.temperature:g}")
    st.caption(
        "p = softmax(s/τ) over the row's allowed keys; τ = 1 is the current attention. Entry (i, j) is how "
        "fast weight i moves when score j is nudged: p_i(δ_ij − p_j)."
    )
    m = st.columns(4)
    m[0].metric("λ_max(J)", f"{ex.lambda_max:.4g}")
    m[1].metric("Gershgorin 2·max p(1−p)", f"{ex.gershgorin:.4g}")
    m[2].metric("bound for any row", "1/2")
    m[3].metric("‖J‖_F", f"{ex.frobenius:.4g}")
    spectrum(ex)
    check_badges(ex.jacobian_checks)
    saturation(ex)


def spectrum(ex: gradients.GradientsView) -> None:
    spec, row_keys = ex.spectrum, ex.row_key_names
    if spec is None:
        st.info(
            f"This row has {len(row_keys)} allowed keys: J and its full spectrum are drawn for rows of up to "
            f"{JACOBIAN_MAX_KEYS} keys (a dense eigendecomposition is O(T³)). λ_max, ‖J‖_F and the bound "
            "above "
            "are computed in O(T) without forming J."
        )
    else:
        left, right = st.columns([3, 2])
        with left:
            fig = figures.heatmap(
                spec.jacobian,
                row_keys,
                row_keys,
                title="J = diag(p) − ppᵀ",
                colorscale="RdBu_r",
                x_title="score nudged (j)",
                y_title="weight that moves (i)",
                zmid=0,
            )
            figures.show(fig, key="gr_J")
        with right:
            eig = {
                "eigenvalue": spec.eigenvalues.tolist(),
                "|cos(eigenvector, 1)|": spec.ones_alignment.tolist(),
            }
            number_table(eig, "jacobian_eigenvalues.csv", "gr_eig", "%.4g")
            st.caption(
                "The smallest eigenvalue is 0 and its eigenvector is the all-ones direction (|cos| = 1): "
                "raising every score by the same amount moves no weight."
            )


def saturation(ex: gradients.GradientsView) -> None:
    sweep, row_keys = ex.sweep, ex.row_key_names
    series = {"λ_max(J)": sweep.lambda_max, "‖J‖_F": sweep.frobenius, "max weight": sweep.max_weight}
    fig = gradient_charts.saturation(
        sweep.temperatures,
        series,
        current=ex.temperature,
        title="Saturation: as τ → 0 the row turns one-hot and J → 0",
    )
    figures.show(fig, key="gr_sweep")
    st.caption(
        f"At τ = {float(sweep.temperatures[0]):g}: λ_max = {float(sweep.lambda_max[0]):.3g}; at "
        f"τ = {float(sweep.temperatures[-1]):g}: λ_max = {float(sweep.lambda_max[-1]):.4g} (uniform over T "
        "keys "
        f"gives 1/T = {1 / len(row_keys):.4g}). A saturated row passes almost no gradient to its scores."
    )


def backward_pass(ex: gradients.GradientsView) -> None:
    st.subheader("Manual backward vs autograd vs finite differences")
    auto = ex.agreement[0]
    oracle_badge("torch autograd through SDPA (float64)", auto.worst, auto.tolerance)
    number_table(ex.agreement_table(), "gradient_agreement.csv", "gr_agree", "%.1e")
    if ex.finite is not None:
        st.caption(
            f"Finite differences: (L(θ+ε) − L(θ−ε))/2ε for each of the {ex.coordinates:,} coordinates and "
            f"each ε, {ex.finite.forward_passes:,} forward passes. Their tolerance is the predicted error "
            "10·ε²/6·|∂³L| (truncation, shrinks with ε) + 2δ/ε (rounding of each loss, grows as ε shrinks), "
            "with |∂³L| estimated from the two largest ε."
        )
    else:
        st.warning(
            f"{ex.finite_note} Cap: {FD_CAPS[0]:,} coordinates in Q, K, V and {FD_CAPS[1]:,} "
            "score entries × coordinates (2 forward passes per coordinate and ε)."
        )
    check_badges(ex.checks)
    gradient_charts.backward_heatmaps(ex.backward, ex.qkv, ex.head)
    show_code("attn_core.attention_backward", gradients.CODE)


def one_row(ex: gradients.GradientsView) -> None:
    q_name, s = ex.qkv.query_tokens[ex.row], ex.step
    st.subheader(f"∂L/∂s_j = p_j (gᵀv_j − gᵀo) for query {q_name}")
    st.caption(
        "g is this row's upstream gradient, o its output. A key's score gradient is its weight times how "
        "much "
        "its value beats the row's average output: it is large only where the key has weight and its value "
        "differs from the average. The entries sum to 0."
    )
    number_table(ex.reading_table(), "score_gradient_by_key.csv", "gr_reading", "%.4f")
    check_badge(ex.reading_check)
    st.subheader(f"One gradient-descent step on q_{q_name} (η = {s.lr:g})")
    st.caption(
        "q ← q − η ∂L/∂q with the keys held fixed. Descent moves each score against its gradient: a key with "
        "∂L/∂s_j < 0 gains score, one with ∂L/∂s_j > 0 loses it (not the other way round)."
    )
    number_table(ex.step_table(), "descent_step.csv", "gr_step", "%.4f")
    m = st.columns(3)
    m[0].metric("∂L/∂q", ", ".join(f"{x:.3f}" for x in ex.backward.dq[0, ex.head, ex.row].tolist()))
    m[1].metric("row loss gᵀo before", f"{s.loss_before:.6g}")
    m[2].metric(
        "after the step",
        f"{s.loss_after:.6g}",
        delta=f"{s.loss_after - s.loss_before:.3g}",
        delta_color="inverse",
    )
    if ex.toy_lesson:
        st.caption(
            "Toy, g = (−1, 0): the loss falls as bank reads more geography. River's score gradient is "
            "negative, so the step raises river's score and lowers bank's own; bank's output moves towards "
            "river's value (1, 0)."
        )


def slips(ex: gradients.GradientsView) -> None:
    st.subheader("Slips in the backward pass, each failing its check")
    slip = slip_picker(SLIPS, key="gr_slip")
    if slip is None:
        st.caption("Turn on the toggle to put a slip beside the right answer.")
        check_badges(ex.checks)
        return
    outcome = compute(gradient_slips.gradient_slip_outcome, ex, slip, inputs="the slip")
    if outcome is None:
        return
    q_tok, k_tok, head = ex.qkv.query_tokens, ex.qkv.key_tokens, ex.head

    def side(dscores, title: str, checks, key: str):
        def show() -> None:
            fig = figures.heatmap(dscores[0, head], k_tok, q_tok, title=title, colorscale="RdBu_r", zmid=0)
            figures.show(fig, key=key)
            check_badges(checks)

        return show

    slip_columns(
        side(ex.backward.dscores, "dS", (ex.checks[1], *ex.autograd_checks), "gr_slip_right"),
        side(outcome.dscores, "the slip's dS", outcome.checks, "gr_slip_wrong"),
        SLIPS[slip].label,
    )
    if outcome.hidden:
        st.warning(f"Every check passes here. {outcome.hidden}")


def summary(ex: gradients.GradientsView) -> None:
    """The numbers above every section."""
    c = st.columns(5)
    c[0].metric("query row", ex.qkv.query_tokens[ex.row])
    c[1].metric("allowed keys T", len(ex.reading.keys))
    c[2].metric("loss L = ⟨O, G⟩", f"{ex.loss:.6g}")
    c[3].metric("scale", f"{ex.backward.forward.scale:.6g}")
    c[4].metric("Q, K, V coordinates", f"{ex.coordinates:,}")


SHOW = {
    Section.JACOBIAN: jacobian,
    Section.BACKWARD: backward_pass,
    Section.ONE_ROW: one_row,
    Section.SLIPS: slips,
}


def inputs() -> tuple | None:
    """(section, the view's arguments, its options) from the section row and the sidebar, or None."""
    section = section_picker(Section, key="gr_section")
    with st.sidebar:
        st.header("Inputs (shared with the Playground)")
        qkv = qkv_picker()
        if qkv is None:
            return None
        scale = scale_picker(qkv.q.shape[-1])
        mask = mask_picker(qkv.L, qkv.S)
        st.header("Gradient")
        head = widgets.slider("head", 0, qkv.heads - 1, 0, key="gr_head") if qkv.heads > 1 else 0
        row = widgets.slider("query row", 0, qkv.L - 1, qkv.L - 1, key="gr_row") if qkv.L > 1 else 0
        kind = widgets.selectbox("upstream gradient G = ∂L/∂O", Upstream, key="gr_G")
        seed, text = 0, ""
        if kind == Upstream.RANDOM:
            seed = int(widgets.number("G seed", 0, 2**31 - 1, 0, key="gr_seed", step=1))
        elif kind == Upstream.TYPED:
            st.caption(f"L × d_v = {qkv.L} × {qkv.v.shape[-1]}: one row per query, used for every head.")
            text = widgets.text_area("G", key="gr_Gtext", default="-1, 0", height=90)
        shape = (1, qkv.heads, qkv.L, qkv.v.shape[-1])
        G = compute(gradients.build_upstream, kind, shape, seed=seed, text=text, inputs="G")
        tau = widgets.slider(
            "temperature τ for the Jacobian (p = softmax(s/τ))", 0.02, 20.0, 1.0, key="gr_tau", step=0.01
        )
        lr = widgets.slider("descent step size η", 0.05, 5.0, 1.0, key="gr_lr", step=0.05)
    at = {
        "head": head,
        "row": row,
        "temperature": tau,
        "lr": lr,
        "run_finite_differences": section is Section.BACKWARD,  # 2 passes per coordinate and ε: where shown
        "upstream": kind,
    }
    if scale is None or mask is None or G is None:
        return None
    return section, (qkv, mask.allowed, scale, G), at


def build(ask: tuple | None) -> gradients.GradientsView | None:
    with st.sidebar:  # its message, if any, under the inputs
        return None if ask is None else compute(gradients.gradients_view, *ask[1], inputs=INPUTS, **ask[2])


def show(ask: tuple, view: gradients.GradientsView) -> None:
    summary(view)
    run_section(SHOW[ask[0]], view, inputs=INPUTS)


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
