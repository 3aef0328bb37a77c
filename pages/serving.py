"""Serving: one model on one GPU type under a load, simulated under continuous batching; the fewest
GPUs that meet the SLOs, latency against throughput, batch and KV over time, and four attentions
side by side (attn_core/serving/)."""

import pandas as pd
import streamlit as st

from attn_core.views import costs, serving, serving_curve
from attn_core.views.serving import MAX_PAGE_OUTPUT_TOKENS, MAX_PAGE_REQUESTS, Section
from lab_ui import cost_inputs, figures, serving_charts, widgets
from lab_ui.badges import attempt, number_table, table
from lab_ui.open_page import SERVING_GPU_KEY
from lab_ui.page import compute, header, require, run_section, section_picker, show_code

INPUTS = "the model, GPU, load and SLOs in the sidebar"
TITLE = "Serving"
INTRO = (
    "One model on one GPU type under a load, simulated step by step as vLLM and SGLang batch it "
    "(continuous batching, paged KV cache, chunked prefill): the fewest GPUs (TP × replicas) that meet "
    "your p99 SLOs, latency against throughput, the batch and KV cache over time, and how MHA, GQA, MLA "
    "and a linear hybrid change the answer. Times in ms; throughput in output tok/s; memory in GiB (2³⁰ B)."
)
FIX = "the GPU cap or the model (the message above says which)"


def where_it_runs() -> tuple[str, int, costs.Precision, str, bool]:
    """The GPU type, the cap on their number, the dtypes and whether steps run as CUDA graphs."""
    st.header("Hardware")
    gpu = widgets.selectbox("GPU", serving.GPUS, key=SERVING_GPU_KEY, default="a100-80gb")
    cap = int(widgets.number("GPU cap (TP × replicas ≤)", 1, serving.MAX_PAGE_GPUS, 8, key="sv_cap", step=1))
    weights = widgets.selectbox("weights dtype", costs.WEIGHT_DTYPES, key="sv_wdtype", default="bf16")
    kv = widgets.selectbox("KV cache dtype", costs.DTYPES, key="sv_kvdtype", default="bf16")
    compute_dtype = widgets.selectbox("compute dtype", serving.COMPUTE_DTYPES, key="sv_cdtype")
    graphs = widgets.toggle(
        "CUDA graphs",
        key="sv_graphs",
        default=True,
        help="On: each step replays a captured CUDA graph (vLLM, SGLang, TensorRT-LLM's PyTorch flow). "
        "Off: an eager engine, whose host launches each layer's kernels: adds the fitted launch cost per "
        "layer per step (docs/pages.md, Serving).",
    )
    return gpu, cap, costs.Precision(kv, weights=weights, kv=kv), compute_dtype, graphs


def the_load():
    """The lengths and the load (a Load, or None after a message under these widgets)."""
    st.header("Load")
    st.caption(
        f"Caps: {MAX_PAGE_REQUESTS:,} requests, requests × output ≤ {MAX_PAGE_OUTPUT_TOKENS:,} tokens, "
        f"≤ {serving.MAX_PAGE_STEPS:,} scheduler steps per simulation (estimated before it runs)."
    )
    in_len = int(
        widgets.number("input length (tokens)", 1, serving.MAX_PAGE_IN_LEN, 1024, key="sv_in", step=256)
    )
    out_len = int(
        widgets.number("output length (tokens)", 2, serving.MAX_PAGE_OUT_LEN, 256, key="sv_out", step=64)
    )
    mode = widgets.radio("load", serving.LoadMode, key="sv_mode").kind
    rate, conc = 4.0, 16
    if mode == "rate":
        rate = float(widgets.number("rate (requests/s)", 0.01, 10_000.0, 4.0, key="sv_rate", step=1.0))
    elif mode == "concurrency":
        conc = int(
            widgets.number(
                "concurrency (requests in flight)", 1, serving.MAX_PAGE_CONCURRENCY, 16, key="sv_conc"
            )
        )
    requests = int(widgets.number("requests simulated", 1, MAX_PAGE_REQUESTS, 500, key="sv_req", step=100))
    return attempt(serving.make_load, mode, (in_len, out_len), rate, conc, requests)


def slos():
    st.header("SLOs (p99)")
    ttft = float(widgets.number("TTFT p99 (ms)", 1.0, 600_000.0, 2000.0, key="sv_ttft", step=100.0))
    tpot = float(widgets.number("TPOT p99 (ms)", 0.1, 60_000.0, 100.0, key="sv_tpot", step=10.0))
    return serving.make_slo(ttft, tpot)


def inputs() -> serving.Ask:
    """Draw the sidebar; the page's question (without a model or a load the page stops: what to fix
    is already said there)."""
    with st.sidebar:
        shape, _, _ = cost_inputs.model_source()
        gpu, cap, precision, compute_dtype, graphs = where_it_runs()
        load = the_load()
        slo = slos()
    ask = (
        None
        if shape is None or load is None
        else serving.Ask(shape, gpu, cap, precision, compute_dtype, load, slo, graphs)
    )
    require(ask)
    return ask


def plan_summary(v: serving.ServingView) -> None:
    """The deployment, its throughput per GPU and what limits it, always above the sections."""
    (st.success if v.met else st.error)(
        v.verdict, icon=":material/check_circle:" if v.met else ":material/warning:"
    )
    c = st.columns(4)
    c[0].metric("GPUs", f"{v.gpus} = {v.tp} × {v.replicas}", help="TP (GPUs per replica) × replicas")
    c[1].metric(
        "output tok/s per GPU", f"{v.per_gpu.estimate:,.0f}", help="estimate at the fitted time model"
    )
    c[2].metric("limited by", v.limit)
    c[3].metric(
        "sequences per replica", f"{v.max_concurrency:,}", help="of in + out tokens, that memory holds"
    )
    st.markdown(
        f"Output throughput: {v.throughput.text('tok/s')} in all; per GPU {v.per_gpu.text('tok/s')}. "
        f"TTFT p99 {v.ttft_p99.text('ms')}; TPOT p99 {v.tpot_p99.text('ms')}."
    )
    st.caption(
        f"Every time: the estimate at the fitted time model ({v.time_model}), its calibrated 80% interval "
        f"(low–high) and the roofline bound (a time is never below it). {v.ask.load.requests:,} requests "
        f"simulated; {v.preemptions:,} preemptions."
    )


def plan_and_latency(v: serving.ServingView) -> None:
    st.subheader("Latency percentiles over requests")
    number_table(v.percentiles, "serving_latency.csv", key="sv_pct", fmt="%.2f")
    st.caption(
        "TTFT: arrival → first token; TPOT: (finish − first token) / (output − 1); latency: arrival → finish."
    )


def curve(v: serving.ServingView) -> None:
    c = compute(serving_curve.curve_view, v.ask, v.tp, inputs=INPUTS)
    if c is None:
        return
    for which in ("TTFT", "TPOT"):
        figures.show(serving_charts.latency_vs_throughput(c, which), key=f"sv_curve_{which.lower()}")
    st.caption(
        "One replica at each concurrency (a closed loop), estimate with its 80% interval as bars, and the "
        f"roofline bound dotted. {serving_charts.OTHERS.capitalize()}, as published (their conditions "
        "below): a grey line is a latency alone, a cross a batch-1 decode (its TPOT is 1 / its tok/s), "
        "a grey triangle on the x axis a throughput alone."
    )
    number_table(c.rows, "serving_curve.csv", key="sv_curve", fmt="%.2f")
    st.markdown(f"**{serving_charts.OTHERS.capitalize()}** (assets/published/runs.json)")
    if c.published.rows:
        table(pd.DataFrame(c.published.rows), "published_runs.csv", key="sv_pub", hide_index=True)
    else:
        st.caption("None published for this model on this GPU.")


def timeline(v: serving.ServingView) -> None:
    figures.show(serving_charts.timeline(v.timeline), key="sv_timeline")
    number_table(v.timeline, "serving_timeline.csv", key="sv_time", fmt="%.3f")


def variants(v: serving.ServingView) -> None:
    rows = compute(serving_curve.variants_view, v.ask, inputs=INPUTS)
    if rows is None:
        return
    st.caption(
        "The same widths and depth with each attention; the fewest GPUs meeting the SLOs for the same load."
    )
    number_table(rows, "serving_attention_variants.csv", key="sv_var", fmt="%.1f")


SHOW = {
    Section.PLAN: plan_and_latency,
    Section.CURVE: curve,
    Section.TIMELINE: timeline,
    Section.VARIANTS: variants,
}


def build(ask: serving.Ask) -> serving.ServingView | None:
    """The simulation (None after a message)."""
    return compute(serving.serving_view, ask, inputs=INPUTS)


def show(ask: serving.Ask, view: serving.ServingView) -> None:
    """The plan above the chosen section, then the code."""
    plan_summary(view)
    section = section_picker(Section, key="sv_section", default=Section.CURVE)
    run_section(SHOW[section], view, inputs=INPUTS)
    show_code("attn_core.serving", serving.serving_view, serving_curve.curve_view)


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
