"""Cost calculator: FLOPs, memory, KV cache, GQA, serving budget and decode speed (cards 9, 11–14), and
the whole model: total vs active parameters, MoE, MLA, per-layer attention types, time bounds."""

import pandas as pd
import streamlit as st

from attn_core.views import costs as cost
from lab_ui import cost_charts, cost_check, cost_verify, figures, published_runs, widgets
from lab_ui.badges import attempt, oracle_badge, table
from lab_ui.page import header, require, run_section, section_picker, show_code

SAME, SAME_KV = "same as activations", "same as KV cache"
SOURCES = ("preset", "paste or upload config.json")
IDS = {SAME: "same", SAME_KV: "same", SOURCES[1]: "config"}  # what a link carries for these choices

header(
    "Cost calculator",
    "What attention costs for the model you actually run: parameters, FLOPs per layer, the KV cache "
    "(sized with the **KV-head** count H_kv, never the query-head count h), how many sequences fit on a "
    "GPU and how fast decoding can possibly go. Memory is in KiB/MiB/GiB (2¹⁰, 2²⁰, 2³⁰ bytes); GPU "
    "vendors' GB and GB/s are 10⁹ and say so. FLOPs count 2 per multiply-add.",
)

# -- Sidebar: the model and the what-if -----------------------------------------------------------
with st.sidebar:
    st.header("Model")
    source = widgets.radio("Shape from", SOURCES, key="co_src", ids=IDS)
    shape = preset = config_text = None
    if source == SOURCES[0]:
        preset = widgets.selectbox("Preset", cost.all_presets(), key="co_model", default="llama-2-7b")
        shape = cost.shape_of_preset(preset)  # None: the formulas do not cover it (its build answers)
    else:
        st.caption("A Hugging Face config.json (≤ 1 MiB). An uploaded file wins over pasted text.")
        upload = st.file_uploader("Upload config.json", type=["json"], key="co_upload")
        pasted = widgets.text_area(
            "…or paste it", key="co_paste", default="", max_chars=cost.MAX_CONFIG_CHARS, height=160
        )
        raw = upload.getvalue() if upload is not None else pasted.strip() and pasted
        if raw:  # bytes (an upload: size and UTF-8 checked) or pasted text
            config_text = cost.config_text(raw)
            shape = attempt(cost.shape_of_config, raw)  # as transformers completes it, where it builds
        else:
            st.info("Upload or paste a config.json to size it.")

    st.header("What-if")
    caps = f"T ≤ {cost.MAX_SEQ_LEN:,} tokens, batch ≤ {cost.MAX_BATCH:,}, GPUs ≤ {cost.MAX_GPUS}"
    st.caption(f"Caps: {caps}.")
    T = int(widgets.number("T (tokens in the sequence)", 1, cost.MAX_SEQ_LEN, 4096, key="co_T", step=1024))
    batch = int(widgets.number("batch B (sequences)", 1, cost.MAX_BATCH, 1, key="co_B", step=1))
    dtype = widgets.selectbox("activations & scores dtype", cost.DTYPES, key="co_dtype")
    w_choice = widgets.selectbox("weights dtype", [SAME, *cost.WEIGHT_DTYPES], key="co_wdtype", ids=IDS)
    kv_choice = widgets.selectbox("KV cache dtype", [SAME, *cost.DTYPES], key="co_kvdtype", ids=IDS)
    st_choice = widgets.selectbox(
        "hybrids' recurrent state dtype",
        [SAME_KV, *cost.DTYPES],
        key="co_stdtype",
        ids=IDS,
        help="Linear/state layers' fixed state; transformers keeps it in fp32.",
    )
    causal = widgets.toggle(
        "causal: count only allowed pairs",
        key="co_causal",
        help="Realized only by a kernel that skips masked blocks.",
    )
    cals = cost.calibrations()  # this server's Kernels sweep and the recorded GPU runs
    gpu_name = widgets.selectbox(
        "GPU", cost.hardware_choices(cals), key="co_gpu", default="a100-80gb", ids=cost.HARDWARE_IDS
    )
    n_gpus = int(
        widgets.number("GPUs (weights and cache sharded)", 1, cost.MAX_GPUS, 1, key="co_ngpu", step=1)
    )

    st.header("Whole model: time")
    P = int(widgets.number("prompt P (tokens)", 1, cost.MAX_SEQ_LEN, 4096, key="co_P", step=1024))
    N = int(widgets.number("generated tokens N", 0, cost.MAX_GEN_LEN, 256, key="co_N", step=64))
    eff = float(
        widgets.number(
            "efficiency (fraction of peak)",
            0.01,
            1.0,
            1.0,
            key="co_eff",
            step=0.05,
            help="1 = the bounds; below 1, each bound ÷ efficiency, labelled an estimate",
        )
    )

v = None
if shape is not None:
    workload = cost.Workload(T, batch, P, N, causal, eff)
    precision = cost.Precision(
        dtype,
        weights=None if w_choice == SAME else w_choice,
        kv=None if kv_choice == SAME else kv_choice,
        state=None if st_choice == SAME_KV else st_choice,
    )
    hardware = attempt(cost.hardware, gpu_name, n_gpus, cals)
    v = None if hardware is None else attempt(cost.view, shape, workload, precision, hardware, preset, cals)
cost_check.show(preset, config_text, T, batch, alone=shape is None)  # formulas vs transformers' build
require(v, fix="the model in the sidebar")

with st.container(border=True):
    st.markdown(v.card)
    st.caption(v.extras)
    if v.strip is not None:
        figures.show(cost_charts.layer_strip(v.strip, title="Attention type of each layer"), key="co_strip")
for warning in v.warnings:
    st.warning(warning)
for col, (label, value, meaning) in zip(st.columns(6), v.headline, strict=True):
    col.metric(label, value, help=meaning)
st.caption(v.conventions)
cost_verify.check_on_this_machine(shape)

section = section_picker(cost.Section, key="co_section", default=cost.Section.FLOPS)


def sweep_table(group: str, what: str) -> None:
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
def show_whole() -> None:
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
    st.markdown(w.prefill_title)
    table(pd.DataFrame(w.prefill), "prefill_flops.csv", key="co_prefill", hide_index=True)
    st.caption(w.prefill_note)
    st.markdown(w.times_title)
    table(pd.DataFrame(w.times), "time_bounds.csv", key="co_times", hide_index=True)
    st.caption(w.times_caption)
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
def show_flops() -> None:
    f = v.flops
    st.markdown(f.title)
    table(pd.DataFrame(f.table), "flops_per_layer.csv", key="co_flops", hide_index=True)
    st.caption(f.caption)
    c = f.chart
    fig = cost_charts.stacked_shares(
        c.x, c.series, title=c.title, x_title="T (tokens)", x_marks=c.x_marks, overlay=c.overlay
    )
    figures.show(fig, key="co_stack")
    sweep_table("flops", "FLOPs")
    st.caption(
        "T* is solved for this architecture from the three FLOP terms: for MHA with a gated MLP it is the "
        "card's 2d + 1.5·d_ff; GQA shrinks the projections and a plain MLP has 2 matrices, not 3."
    )


# -- KV cache & GQA -------------------------------------------------------------------------------
def show_kv_cache() -> None:
    kv = v.kv
    log_chart(kv.chart, "co_kv")
    sweep_table("kv", "KV cache bytes")
    if kv.warning:
        st.warning(kv.warning)
    if kv.mla:
        st.info("MLA caches one latent per token per layer, not per-head K and V: H_kv has no meaning here.")
        return
    st.markdown(kv.variants_title)
    table(pd.DataFrame(kv.variants), "kv_heads_comparison.csv", key="co_variants", hide_index=True)
    st.caption(
        "Sequences that fit keep the weights of the model as configured (card 14's cache-only "
        "comparison); a real MHA model would also have larger K and V projections."
    )


# -- Serving & decode ----------------------------------------------------------------------------
def show_serving() -> None:
    sv = v.serving
    for col, (label, value, meaning) in zip(st.columns(4), sv.metrics, strict=True):
        col.metric(label, value, help=meaning)
    st.markdown(sv.sum)
    st.markdown(sv.verdict)
    st.markdown(sv.gpus_title)
    table(pd.DataFrame(sv.gpus), "serving_by_gpu.csv", key="co_gpus", hide_index=True)
    st.caption(
        "Bounds, not predictions: real serving also holds activations and allocator slack, and real "
        "kernels reach a fraction of peak bandwidth. Multi-GPU assumes perfect sharding."
    )


# -- Score memory ---------------------------------------------------------------------------------
def show_score_memory() -> None:
    sc = v.scores
    for col, (label, value, meaning) in zip(st.columns(5), sc.metrics, strict=True):
        col.metric(label, value, help=meaning)
    log_chart(sc.chart, "co_scores")
    sweep_table("scores", "Score bytes")
    st.caption(sc.caption)


# -- How it's asked -------------------------------------------------------------------------------
def show_how_its_asked() -> None:
    for question, answer in v.how_its_asked:
        with st.container(border=True):
            st.markdown(f"**{question}**")
            st.markdown(answer)


SHOW = {
    cost.Section.WHOLE: show_whole,
    cost.Section.FLOPS: show_flops,
    cost.Section.KV: show_kv_cache,
    cost.Section.SERVING: show_serving,
    cost.Section.SCORES: show_score_memory,
    cost.Section.ASKED: show_how_its_asked,
}
run_section(SHOW[section], inputs="the model and the what-if in the sidebar")
show_code("attn_core.cost", *cost.CODE)
