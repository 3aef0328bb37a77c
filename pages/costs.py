"""Cost calculator: FLOPs, memory, KV cache, GQA, serving budget and decode speed (cards 9, 11–14), and
the whole model: total vs active parameters, MoE, MLA, per-layer attention types, time bounds."""

import pandas as pd
import streamlit as st

from attn_core.views import costs
from lab_ui import cost_charts, cost_check, cost_inputs, cost_verify, figures, published_runs
from lab_ui.badges import attempt, oracle_badge, table
from lab_ui.open_page import open_serving
from lab_ui.page import header, require, run_section, section_picker, show_code

INPUTS = "the model and the what-if in the sidebar"
TITLE = "Cost calculator"
INTRO = (
    "What attention costs for the model you actually run: parameters, FLOPs per layer, the KV cache "
    "(sized with the **KV-head** count H_kv, never the query-head count h), how many sequences fit on a "
    "GPU and how fast decoding can possibly go. Memory is in KiB/MiB/GiB (2¹⁰, 2²⁰, 2³⁰ bytes); GPU "
    "vendors' GB and GB/s are 10⁹ and say so. FLOPs count 2 per multiply-add."
)
FIX = "the model in the sidebar"


def sized(ask: cost_inputs.CostInputs):
    """The page's one view call, or None (each failure already explained where it happened)."""
    if ask.shape is None:
        return None
    hardware = attempt(costs.hardware, ask.gpu_name, ask.n_gpus, ask.cals)
    if hardware is None:
        return None
    return attempt(costs.view, ask.shape, ask.workload, ask.precision, hardware, ask.preset, ask.cals)


def model_card(v) -> None:
    """The model's card, its layer strip, warnings, headline metrics and conventions."""
    with st.container(border=True):
        st.markdown(v.card)
        st.caption(v.extras)
        if v.strip is not None:
            figures.show(
                cost_charts.layer_strip(v.strip, title="Attention type of each layer"), key="co_strip"
            )
    for warning in v.warnings:
        st.warning(warning)
    metric_row(v.headline)
    with st.expander("How the cards count it (vendor GB, every weight read), beside this page's count"):
        st.markdown(v.conventions)


def metric_row(metrics) -> None:
    """(label, value, meaning) triples as rows of metrics, at most four to a row (six in one row
    cut "274.5 MiB" to "274.5 …" on a 1,400-pixel screen)."""
    per_row = len(metrics) if len(metrics) <= 4 else -(-len(metrics) // 2)
    for start in range(0, len(metrics), per_row):
        row = metrics[start : start + per_row]
        for col, (label, value, meaning) in zip(st.columns(per_row), row, strict=False):
            col.metric(label, value, help=meaning)


def titled_table(title: str, rows, filename: str, key: str, caption: str) -> None:
    """A table under its title, with its CSV and a caption under it."""
    st.markdown(title)
    table(pd.DataFrame(rows), filename, key=key, hide_index=True)
    st.caption(caption)


def sweep_table(v, group: str, what: str) -> None:
    """The chart's numbers over T as a table with its CSV (exact integers below 2⁵³)."""
    with st.expander(f"{what} at every T of the chart (table and CSV)"):
        table(
            pd.DataFrame(v.sweep_columns(group)),
            f"{group}_vs_T.csv",
            key=f"co_sweep_{group}",
            hide_index=True,
        )


def log_chart(chart, key: str, y_title: str = "GiB") -> None:
    fig = cost_charts.log_lines(
        chart.x,
        chart.series,
        title=chart.title,
        x_title="T (tokens)",
        y_title=y_title,
        x_marks=chart.x_marks,
        y_marks=chart.y_marks,
    )
    figures.show(fig, key=key)


# -- Whole model ----------------------------------------------------------------------------------
def whole(v) -> None:
    w = v.whole
    parts, total, active = w.params_chart
    chart = cost_charts.total_vs_active(parts, total, active, title="Parameters: held vs run per token")
    figures.show(chart, key="co_params")
    table(pd.DataFrame(w.params), "parameters.csv", key="co_ptable", hide_index=True)
    for note in w.notes:
        st.markdown(note)
    st.markdown(w.ledger_title)
    table(pd.DataFrame(w.ledger), "layer_kinds.csv", key="co_ltable", hide_index=True)
    if w.memory is not None:
        grid, series, T_mark = w.memory
        figures.show(cost_charts.memory_vs_T(grid, series, T=T_mark), key="co_hybrid_mem")
    titled_table(w.prefill_title, w.prefill, "prefill_flops.csv", "co_prefill", w.prefill_note)
    titled_table(w.times_title, w.times, "time_bounds.csv", "co_times", w.times_caption)
    published_runs.cost_band(v.report)  # the range published runs attained, beside these bounds
    if w.calibrated_caption:
        st.caption(w.calibrated_caption)
    if w.calibration_hint:
        st.info(w.calibration_hint, icon=":material/speed:")
    for problem in w.calibration_problems:
        st.warning(problem)
    for oracle, diff in w.checks:
        oracle_badge(oracle, diff, 0)


# -- FLOPs ----------------------------------------------------------------------------------------
def flops(v) -> None:
    f = v.flops
    titled_table(f.title, f.table, "flops_per_layer.csv", "co_flops", f.caption)
    c = f.chart
    fig = cost_charts.stacked_shares(
        c.x, c.series, title=c.title, x_title="T (tokens)", x_marks=c.x_marks, overlay=c.overlay
    )
    figures.show(fig, key="co_stack")
    sweep_table(v, "flops", "FLOPs")
    st.caption(
        "T* is solved for this architecture from the three FLOP terms: for MHA with a gated MLP it is the "
        "card's 2d + 1.5·d_ff; GQA shrinks the projections and a plain MLP has 2 matrices, not 3."
    )


# -- KV cache & GQA -------------------------------------------------------------------------------
def kv_cache(v) -> None:
    kv = v.kv
    log_chart(kv.chart, "co_kv")
    sweep_table(v, "kv", "KV cache bytes")
    if kv.warning:
        st.warning(kv.warning)
    if kv.mla:
        st.info("MLA caches one latent per token per layer, not per-head K and V: H_kv has no meaning here.")
        return
    titled_table(
        kv.variants_title,
        kv.variants,
        "kv_heads_comparison.csv",
        "co_variants",
        "Sequences that fit keep the weights of the model as configured (card 14's cache-only "
        "comparison); a real MHA model would also have larger K and V projections.",
    )


# -- Serving & decode ----------------------------------------------------------------------------
def serving(v) -> None:
    sv = v.serving
    metric_row(sv.metrics)
    st.markdown(sv.sum)
    st.markdown(sv.verdict)
    titled_table(
        sv.gpus_title,
        sv.gpus,
        "serving_by_gpu.csv",
        "co_gpus",
        "Bounds, not predictions: real serving also holds activations and allocator slack, and real "
        "kernels reach a fraction of peak bandwidth. Multi-GPU assumes perfect sharding.",
    )


# -- Score memory ---------------------------------------------------------------------------------
def score_memory(v) -> None:
    sc = v.scores
    metric_row(sc.metrics)
    log_chart(sc.chart, "co_scores")
    sweep_table(v, "scores", "Score bytes")
    st.caption(sc.caption)


# -- How it's asked -------------------------------------------------------------------------------
def how_its_asked(v) -> None:
    for question, answer in v.how_its_asked:
        with st.container(border=True):
            st.markdown(f"**{question}**")
            st.markdown(answer)


SHOW = {
    costs.Section.WHOLE: whole,
    costs.Section.FLOPS: flops,
    costs.Section.KV: kv_cache,
    costs.Section.SERVING: serving,
    costs.Section.SCORES: score_memory,
    costs.Section.ASKED: how_its_asked,
}


def on_gpu(ask: cost_inputs.CostInputs) -> None:
    """A model only the build sizes, on the sidebar's GPUs: weights, fit and time bounds."""
    hw = attempt(costs.hardware, ask.gpu_name, ask.n_gpus, ask.cals)
    rows = (
        None
        if hw is None
        else attempt(costs.build_on_gpu, ask.config_text, hw, ask.precision, ask.workload.seq_len)
    )
    if rows:
        titled_table(
            f"**On {ask.n_gpus} × {hw.gpu.label}**",
            rows,
            "on_gpu.csv",
            "co_build_gpu",
            "From the build's counts: the cache in bf16 as transformers holds it; times are lower bounds.",
        )


def inputs() -> cost_inputs.CostInputs:
    """The sidebar: the model and the what-if (lab_ui/cost_inputs.py)."""
    return cost_inputs.sidebar()


def build(ask: cost_inputs.CostInputs) -> tuple | None:
    """(the view, the formulas' check against transformers' build of the model: drawn at once,
    finished at the page's end), or None."""
    v = sized(ask)
    T, batch = ask.workload.seq_len, ask.workload.batch
    alone = (lambda: on_gpu(ask)) if ask.shape is None else None
    pending = cost_check.show(ask.preset, ask.config_text, T, batch, alone=alone, shape=ask.shape)
    if v is None:
        cost_check.finish(pending)
        return None
    return v, pending


def show(ask: cost_inputs.CostInputs, view: tuple) -> None:
    v, pending = view
    model_card(v)
    cost_verify.check_on_this_machine(ask.shape, ask.preset, ask.config_text)
    section = section_picker(costs.Section, key=cost_inputs.SECTION_KEY, default=costs.Section.FLOPS)
    run_section(SHOW[section], v, inputs=INPUTS)
    open_serving("Simulate serving it", ask.preset, ask.config_text, ask.gpu_name)
    show_code("attn_core.cost", *costs.CODE)
    cost_check.finish(pending)


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
