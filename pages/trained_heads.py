"""Trained heads: a tiny transformer whose attention is attn_core.attention, trained on this
server, and what its heads learned."""

import uuid

import pandas as pd
import streamlit as st

from attn_core.views import long_heads, trained_heads
from attn_core.views.trained_heads import TASKS, Section, TaskId, TrainedView
from lab_ui import figures, trained_charts, widgets
from lab_ui.badges import oracle_badge
from lab_ui.head_maps import head_grid, one_head
from lab_ui.long_heads import long_section
from lab_ui.page import compute, header, require, run_section, section_picker
from lab_ui.trained_charts import circuit, head_scores, loss_figure, phase_caption

SHIPPED, YOURS = "shipped checkpoint", "your run"
MAX_TEXT = 200  # characters in the sequence box (a model reads at most 64 tokens of it)

TITLE = "Trained heads"
INTRO = (
    "A small decoder (token and learned position embeddings, causal self-attention, no LayerNorm) whose "
    "attention **is** `attn_core.attention`: autograd runs through the lab's own function. The page opens "
    "on a model this project trained on *repeated random letters*, where a **previous-token head** in layer "
    "0 and **induction heads** in layer 1 form suddenly (the phase change). Type a sequence to see every "
    "head; train your own under **Train**. Tokens: `^` = BOS, `|` = SEP, letters a–z."
)
FIX = "the input marked in the sidebar"


def read_heads(tv: TrainedView) -> None:
    view = compute(tv.heads, inputs="the sequence above")
    if view is None:
        st.info("Fix the sequence above; the rest of the page keeps working (see *Ablation & circuits*).")
        return
    oracle_badge(
        "attn_core.attention recomputed in float64 from the model's own q and k",
        view.check.max_abs_diff,
        view.check.tol,
    )
    st.caption(
        "The bound is float32's: 2·d·u·‖q‖‖k‖/√d + 8u with u = 2⁻²⁴, from this trace "
        f"({view.check.tol:.1e}); a wrong scale or mask is off by more than 0.01."
    )
    figures.show(
        figures.cached(
            head_grid, view.maps, view.tokens, "Every head on your sequence (row: query, column: key)"
        ),
        key="th_grid",
    )
    pick = widgets.selectbox("enlarge a head", tv.head_names, key="th_head", default=tv.best_head)
    layer, head = trained_heads.parse_head(pick)
    figures.show(one_head(view.maps[layer, head], view.tokens, f"{pick} on your sequence"), key="th_one")
    head_scores(pd.DataFrame(view.rows).round(4))
    st.caption(
        f"Probe: 64 held-out sequences ^ x₁…xₙ x₁…xₙ₋₁ of n = {view.period} distinct letters. Induction = "
        "mean weight on the token after the current token's first occurrence; previous-token = mean weight "
        "on t − 1; sink share = mean weight on token 0 (rows t ≥ 1, card 18); entropy in nats (card 17; a "
        f"uniform row over t + 1 keys has ln(t + 1)). Ablation Δloss: the held-out loss of {tv.task} "
        f"({view.base_loss:.3f} nats) with that head's output zeroed, minus the loss with every head."
    )


def ablation_and_circuits(tv: TrainedView) -> None:
    st.subheader("Ablation: zero heads, measure the loss")
    chosen = st.multiselect("heads to zero", tv.head_names, key="th_ablate")
    ab = compute(tv.ablation, chosen, inputs="the heads to zero")
    if ab is None:
        return
    m = st.columns(2)
    m[0].metric("held-out loss, all heads", f"{ab.base_loss:.4f} nats")
    m[1].metric(
        "with the chosen heads zeroed",
        f"{ab.ablated_loss:.4f} nats",
        delta=f"{ab.ablated_loss - ab.base_loss:+.4f} nats" if chosen else None,
        delta_color="inverse",
    )
    st.caption(
        f"128 held-out sequences of the {tv.task} task. On the shipped model, zeroing the previous-token "
        "head breaks every induction head at once (K-composition), while the layer-1 induction heads back "
        "each other up."
    )
    circuits(tv)


def circuits(tv: TrainedView) -> None:
    st.subheader("The two circuits of one head, over the vocabulary")
    pick = widgets.selectbox("head", tv.head_names, key="th_circ", default=tv.best_head)
    cv = compute(tv.circuits, pick, inputs="the head")
    if cv is None:
        return
    oracle_badge("the layer's own projections applied to the embeddings (float64)", cv.max_abs_diff, cv.tol)
    left, right = st.columns(2)
    with left:
        fig = circuit(cv.qk, cv.labels, f"QK: E W_Q W_Kᵀ Eᵀ / √d ({pick})", "query token", "key token")
        figures.show(fig, key="th_qk")
    with right:
        fig = circuit(cv.ov, cv.labels, f"OV: E W_V W_O W_U ({pick})", "attended token", "output logit")
        figures.show(fig, key="th_ov")
    st.caption(
        "QK: the score a query token gives a key token through this head, positions left out. OV: what "
        f"reading a token adds to each output logit. Copying: {cv.copying:.0%} of tokens raise their own "
        "logit most (a diagonal OV). In layer 1 the QK circuit alone misses the induction pattern: it "
        "reads layer 0's output, not the raw embeddings."
    )


def train_section(tv: TrainedView) -> None:
    task_, size, steps, seed = trained_charts.train_controls()
    current = st.session_state.get("th_run")
    do = st.session_state.pop("th_do", None)
    if do == "new":
        current = compute(trained_heads.start_run, task_, size, seed, steps, inputs="the run", fresh=True)
        if current is None:
            return
        st.session_state["th_run"] = current
    if current is None:
        st.info("Press **▶ Train**: the default model passes the induction phase change in about 430 steps.")
        return
    lines = trained_heads.thresholds(current.config.task)
    title = f"Training loss: {current.config.task}"
    chart, grid = st.empty(), st.empty()
    if do is not None:
        train_live(current, tv.text, lines, title, chart, grid)
    if note := st.session_state.pop("th_note", None):
        st.success(note)
    fig = loss_figure(*trained_heads.loss_curve(current.losses), lines, current.phase_change_step, title)
    chart.plotly_chart(fig, key="th_loss", config=figures.PLOT_CONFIG)
    if current.config.task is TaskId.INDUCTION:
        st.caption(phase_caption(lines, current.phase_change_step, current.model.config.n_layer))
    if current.step:
        st.caption("Pick **your run** under *model* above to read its heads.")


def train_live(current, text: str, lines: dict, title: str, chart, grid) -> None:
    """One press of Train or Resume: the run, drawn live into ``chart`` and ``grid``."""
    st.session_state.setdefault("th_session", uuid.uuid4().hex)
    bar = st.progress(current.step / current.config.steps, text="starting…")

    def on_progress(p) -> None:
        status = f"step {p.step:,} of {p.steps:,} · loss {p.loss:.3f} nats · {p.elapsed_s:.1f} s"
        bar.progress(p.step / p.steps, text=status)
        fig = loss_figure(*trained_heads.loss_curve(current.losses), lines, p.phase_change_step, title)
        chart.plotly_chart(fig, key=f"th_live_{p.step}", config=figures.PLOT_CONFIG)
        if p.step % trained_heads.MAPS_EVERY == 0 and (live := attempt_maps()) is not None:
            fig = head_grid(live[1], live[0], f"Your model at step {p.step:,}")
            grid.plotly_chart(fig, key=f"th_live_grid_{p.step}", config=figures.PLOT_CONFIG)

    def attempt_maps():
        try:
            return trained_heads.live_maps(current.model, text)
        except ValueError:
            return None

    out = compute(
        trained_heads.run_training, current, st.session_state["th_session"], on_progress, inputs="the run"
    )
    bar.empty()
    if out is None:
        return
    if out.busy:
        st.warning(out.busy_reason)
    else:  # rerun so that the model picker above lists the run
        st.session_state["th_note"] = (
            f"Trained {current.step:,} of {current.config.steps:,} steps in {current.elapsed_s:.1f} s "
            f"({out.seconds:.1f} s this press)."
        )
        st.rerun()


def along_the_sequence(tv: TrainedView) -> None:
    st.caption(
        "Every head's scores along a sequence as long as the model's context, and where each holds: a "
        "previous-token head may do its job only up to some position, which its single average hides."
    )
    long_section(long_heads.from_trained(tv.model, tv.source), "th_long")


SHOW = {
    Section.READ: read_heads,
    Section.ABLATION: ablation_and_circuits,
    Section.LONG: along_the_sequence,
    Section.TRAIN: train_section,
}


def inputs() -> tuple:
    """((model, task, sequence, which model), section): the model row and the section row; the page
    stops when the shipped checkpoint cannot be read."""
    run = st.session_state.get("th_run")  # this session's TrainState, kept across reruns
    sources = [SHIPPED] + ([YOURS] if run is not None and run.step > 0 else [])
    c1, c2 = st.columns([2, 3])
    with c1:
        source = widgets.radio(
            "model", sources, key="th_model", horizontal=True, ids={SHIPPED: "shipped", YOURS: "yours"}
        )
        # a missing or damaged asset: say so, do not crash
        ck = compute(trained_heads.shipped, inputs="the shipped checkpoint", fresh=True)
        require(ck, fix="the server's shipped checkpoint (assets/trained/)")
        model, task = (ck.model, ck.train_config.task) if source == SHIPPED else (run.model, run.config.task)
        st.caption(
            f"{model.config.n_layer} layers × {model.config.n_head} heads, d_model "
            f"{model.config.n_embd}{', MLPs' if model.config.mlp else ', attention-only'}, trained "
            f"{len(ck.losses) if source == SHIPPED else run.step:,} steps; positions "
            f"0…{model.config.block_size - 1}; task: {TASKS[task].label}."
        )
    with c2:
        text = widgets.text_area(
            "sequence (spaces are ignored)",
            key="th_text",
            default=trained_heads.DEFAULT_TEXT,
            max_chars=MAX_TEXT,
            height=68,
        )
    return (model, task, text, source), section_picker(Section, key="th_section")


def build(ask: tuple) -> TrainedView | None:
    return compute(trained_heads.view, *ask[0], inputs="the model and the sequence", fresh=True)


def show(ask: tuple, view: TrainedView) -> None:
    run_section(SHOW[ask[1]], view, inputs="the model and the sequence above")


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
