"""Kernels: naive vs every SDPA backend vs FlexAttention vs our online softmax and Triton kernel,
timed and checked on this server's hardware."""

import pandas as pd
import streamlit as st

from attn_core.views import kernels
from attn_core.views.kernels import CONTESTANTS
from lab_ui import figures, kernel_charts, kernel_rates, published_runs, widgets
from lab_ui.badges import error_table, table
from lab_ui.page import compute, header, require, run_section

INPUTS = "the sweep's lengths, dtype, head sizes and contestants"
TITLE = "Kernels"
INTRO = (
    "The same attention forward, computed by every kernel this lab knows: the **naive** L × S matrix, "
    "PyTorch's **SDPA** (its own choice and each backend forced), **FlexAttention**, our **online softmax** "
    "and our **Triton** kernel. Each is timed on *this server's* hardware and checked against a float64 "
    "reference: it passes when its error is at most twice that of plain PyTorch at the same precision "
    "(flash-attention's rule). FLOPs are counted as the FlashAttention papers do: 4·B·H·L·S·D, halved when "
    "causal."
)
FIX = "the sweep's settings"


def sweep_request() -> kernels.BenchRequest:
    """The sweep's controls."""
    st.subheader("Sweep")
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        seq_lens = st.multiselect(
            "sequence lengths L = S", kernels.SEQ_LEN_CHOICES, default=kernels.DEFAULT_SEQ_LENS, key="kb_L"
        )
        dtype = widgets.selectbox("dtype", ["fp32", "fp16", "bf16"], key="kb_dtype")
    with c2:
        head_dim = widgets.selectbox("head dim D", list(kernels.HEAD_DIMS), key="kb_d", default=64)
        causal = widgets.toggle("causal (bottom-right)", key="kb_causal")
    with c3:
        heads = widgets.slider("query heads H", 1, kernels.MAX_HEADS, 4, key="kb_H")
        kv_choices = [n for n in range(1, heads + 1) if heads % n == 0]
        kv_heads = widgets.selectbox("KV heads (GQA when fewer)", kv_choices, key="kb_Hkv", default=heads)
    with c4:
        budget = widgets.slider(
            "time cap (s)", 1, kernels.MAX_BUDGET_S, kernels.DEFAULT_BUDGET_S, key="kb_budget"
        )
    impls = st.multiselect(
        "contestants",
        kernels.PAGE_IMPLS,
        default=kernels.DEFAULT_IMPLS,
        key="kb_impls",
        format_func=lambda i: CONTESTANTS[i].label,
    )
    return kernels.BenchRequest(
        seq_lens=tuple(seq_lens),
        head_dim=head_dim,
        heads=heads,
        kv_heads=kv_heads,
        dtype=dtype,
        causal=causal,
        impls=tuple(impls),
        budget_s=float(budget),
    )


def run_pressed() -> bool:
    """▶ Run sweep and ■ Stop; True when this run starts a sweep."""
    b1, b2, _ = st.columns([1, 1, 4])
    with b1:
        # A callback, not the button's return value: the press survives any rerun before this line.
        st.button(
            "▶ Run sweep",
            key="kb_run",
            type="primary",
            on_click=st.session_state.update,
            args=({"kb_go": True},),
        )
    with b2:
        st.button("■ Stop", key="kb_stop", help="Stops a running sweep; the cases already done stay shown.")
    return st.session_state.pop("kb_go", False)


def sweep_progress(run: bool):
    """(the progress bar of a sweep that starts now, else None; the view's ``on_record`` callback).
    The records go to the session as they come, so Stop keeps what was done."""
    bar = st.progress(0.0, text="starting…") if run else None
    if run:
        st.session_state["kb_records"] = []

    def on_record(record, expected: int) -> None:
        st.session_state["kb_records"].append(record)
        done = len(st.session_state["kb_records"])
        text = f"{done} of {expected}: {record.impl} at L = {record.seq_len:,}"
        bar.progress(min(1.0, done / expected), text=text)

    return bar, on_record


def device(view: kernels.BenchView) -> None:
    facts = view.facts
    if facts.kind == "cuda":
        st.markdown(
            f"**{facts.name}** · compute capability {facts.capability} · "
            f"{facts.memory_bytes / 2**30:,.1f} GiB · {facts.sm_count} SMs · peaks from datasheets: "
            f"{facts.source}"
        )
        return
    st.info(
        "This server has **no GPU**: the sweep below runs on its CPU, and the Triton kernel runs "
        "through Triton's interpreter (correct, but its time means nothing). Recorded GPU results, "
        "when the project has any, are shown at the bottom.",
        icon=":material/computer:",
    )
    st.markdown(
        f"**{facts.name}**, {facts.threads} thread{'s' if facts.threads != 1 else ''} · measured "
        f"here: fp32 matmul **{facts.peak_flops['fp32'] / 1e9:,.1f} GFLOP/s**, copy "
        f"**{facts.bandwidth / 1e9:,.1f} GB/s** ({facts.source}) · versions: "
        f"{', '.join(f'{k} {v}' for k, v in facts.versions.items())}"
    )


def charts(view: kernels.BenchView) -> None:
    if view.busy:
        st.warning(
            "Another visitor's sweep is running (one at a time on this server): here are the last results."
        )
    if view.stopped:
        st.warning(f"The sweep stopped early: {view.stopped}.")
    if view.load[0] is not None:  # measured around a sweep that ran now
        st.caption(
            f"Load average (1 min) {view.load[0]:.2f} before, {view.load[1]:.2f} after: "
            "other work shares the cores."
        )
    if not view.records:
        st.info("Press **▶ Run sweep** to time the chosen contestants (a few seconds at the defaults).")
    rows = view.perf_rows
    if rows:
        peak_word = "measured" if view.facts.measured else "datasheet"
        left, right = st.columns(2)
        with left:
            figures.show(kernel_charts.per_length(rows, "ms", "Time per call", "ms (median)"), key="kb_ms")
            pct = kernel_charts.per_length(
                rows, "% of peak", f"% of the {peak_word} peak", "% of peak", False
            )
            figures.show(pct, key="kb_pct")
        with right:
            figures.show(kernel_charts.per_length(rows, "TFLOP/s", "Throughput", "TFLOP/s"), key="kb_tf")
            mem = kernel_charts.per_length(rows, "peak extra MiB", "Peak extra memory", "MiB (incl. output)")
            figures.show(mem, key="kb_mem")
    # The roofline is drawn before any run too: the device's roof and ridge are facts of the server.
    roof = kernel_charts.roofline(rows, view.roof_peak, view.facts.bandwidth, "Roofline")
    figures.show(roof, key="kb_roof")
    st.caption(
        "Intensity = FLOPs ÷ the least bytes each kernel must move (Q, K, V in, O out; a kernel that forms "
        "L × S also writes and reads scores and weights). Left of the ridge, bandwidth bounds the speed; "
        "right of it, arithmetic."
    )


def errors(view: kernels.BenchView) -> None:
    if view.error_rows:
        st.subheader("Correct? And which kernel ran")
        error_table(view.error_rows, "kernel-kernels.csv", "kb_err", ("max |err| vs fp64", "allowed"))
        st.caption(
            '"kernel that ran" for SDPA is read from PyTorch\'s profiler (the aten op name). '
            '"unsupported" rows carry PyTorch\'s own reason.'
        )
    for impl, why in view.left_out.items():
        st.caption(f"**{impl}**: {why}")
    kernel_rates.rates_box(view.cost_rates, view.own_run)  # the rates, for the Cost calculator


def recorded(view: kernels.BenchView) -> None:
    st.subheader("Recorded GPU results")
    for problem in view.recorded_problems:
        st.warning(problem)
    if not view.recorded:
        st.info(
            "No GPU results are recorded in this project yet. They come only from a real GPU run "
            "(`benchmarks/gpu_sweep.sh`), never from estimates."
        )
    for run in view.recorded:
        meta = run.meta
        versions = ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items())
        st.markdown(
            f"**{meta.get('device')}** · recorded {meta.get('date')} · {versions} · `assets/bench/{run.file}`"
        )
        if run.headline_rows():
            title = "Recorded GPU throughput, d = 128, bf16"
            chart = kernel_charts.per_length(run.headline_rows(), "TFLOP/s", title, "TFLOP/s")
            figures.show(chart, key=f"kb_rec_chart_{run.file}")
        ratio = run.triton_vs_best_sdpa()
        if ratio is not None:
            st.markdown(
                f"Triton (ours) at L = {kernels.TARGET_L:,}: **{ratio:.2f}×** the best SDPA backend's "
                f"TFLOP/s (target ≥ {kernels.TARGET_RATIO}×)."
            )
        csv = run.file.replace(".json", ".csv")
        table(pd.DataFrame(run.rows), csv, key=f"kb_rec_{run.file}", hide_index=True)
    published_runs.kernel_rows()  # FA2/FA3/FA4, cuDNN, FlashMLA as their authors published them


def inputs() -> tuple:
    """(the view's arguments: request, run, this session's records, the progress callback; the box
    the device table goes in, drawn first; the progress bar or None)."""
    st.subheader("This server")
    device_box = st.container()  # filled below, from the same one call
    request = sweep_request()
    run = run_pressed()
    bar, on_record = sweep_progress(run)
    previous = st.session_state.get("kb_records")
    return (request, run, previous, on_record), device_box, bar


def build(ask: tuple) -> kernels.BenchView | None:
    return compute(kernels.kernels_page, *ask[0], inputs=INPUTS)


def show(ask: tuple, view: kernels.BenchView) -> None:
    _, device_box, bar = ask
    if bar is not None:
        bar.empty()
    if view.error:
        st.error(view.error, icon="⚠️")
    with device_box:
        run_section(device, view, inputs=INPUTS)
    run_section(charts, view, inputs=INPUTS)
    run_section(errors, view, inputs=INPUTS)
    run_section(recorded, view, inputs=INPUTS)


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
