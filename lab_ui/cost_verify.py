"""The Cost page's "check this estimate on this machine": an expander with a button that builds the
chosen model's first layers with random weights, times a prefill and decode steps on this server,
and shows the bound, the calibrated estimate and the measurement with the error in % (the engine
and its conventions: `attn_core.verify.run`). Given the config the page sized (a preset's, or the
uploaded or pasted config.json), transformers builds its own layers wherever it can (built by
"transformers"); otherwise the lab's layers, from the formulas' reading, and the first note says
why. Who built them and the parameters built are shown before and after the run.

Nothing here imports torch or plans until the expander is opened: a closed panel costs the page
one expander. One check runs at a time on the server, in a child process capped at its planned
peak memory (never more than this machine's) and LIMIT_S seconds (`attn_core.verify.child`); its
planned peak and expected time are shown before it runs, a Stop button ends it, and whatever goes
wrong — a first layer over the cap included — comes back as one line.

The Cost page calls one line: ``cost_verify.check_on_this_machine(shape, preset, config_text)``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from attn_core.cost.model_shape import ModelShape
from attn_core.cost.units import format_bytes_binary, format_flops, format_seconds
from attn_core.views.cost_check import config_of
from lab_ui import widgets
from lab_ui.badges import table

SEQ_LENS = (64, 128, 256, 512)  # at 512 a 2 GiB fp32 build is ~2 × 0.5 TFLOP: ~6 s quiet, ~20 s loaded
DECODE_STEPS = (4, 8, 16)
MEMORY_GIB = (0.5, 1.0, 2.0)
MAX_BATCH = 4
OPEN_KEY = "co_vf_open"  # the expander's state: the panel is drawn (torch imported) only when open
RESULT_KEY = "co_vf_result"  # the last check of this session, kept across reruns
CHECK_KEY = "co_vf_check"  # this session's running check (a `verify.child.Check`)
LIMIT_S = 120  # a check's wall clock: one that is expected to take longer is refused
POLL_S = 1.0  # while a check runs, its panel reruns this often (and waits up to half of it)


def _rows(result) -> list[dict]:
    phases = (
        (f"prefill, {result.request.batch} × {result.request.seq_len:,} tokens", result.prefill),
        (f"one decode step, {result.decode_context:,} cached", result.decode_step),
    )
    return [
        {
            "phase": label,
            "FLOPs (cost model)": format_flops(p.counts.flops),
            "bytes (cost model)": format_bytes_binary(p.counts.bytes),
            "bound": format_seconds(p.bound_ms / 1e3),
            "estimate": format_seconds(p.estimate_ms / 1e3),
            "measured": format_seconds(p.measured_ms / 1e3),
            "wall": format_seconds(p.measured_wall_ms / 1e3),
            "error": f"{p.error_pct:+.1f}%",
            "bound ≤ measured": "yes" if p.bound_ms <= p.measured_ms else "NO",
        }
        for label, p in phases
    ]


def _show(result) -> None:
    plan, probe = result.plan, result.probe
    experts = f", {plan.experts_built} of {plan.model_experts} routed experts" if plan.experts_built else ""
    cache = "KV cache and linear state" if plan.shape.n_state_layers else "KV cache"
    st.markdown(
        f"**{result.model}** on {result.device} ({result.device_name}), {result.dtype}: "
        f"{plan.layers_built} of {plan.model_layers} layers built ({plan.kinds_built}){experts}, random weights "
        f"({format_bytes_binary(plan.weight_bytes)} + {cache} {format_bytes_binary(plan.cache_bytes)}). "
        + built_by(plan)
    )
    for note in plan.notes:
        st.info(note)
    table(pd.DataFrame(_rows(result)), "cost_check.csv", key="co_vf_table", hide_index=True)
    before, after = result.load_average
    st.caption(
        f"Probe ({probe.seconds:.1f} s, before the layers were built): matmul up to "
        f"{probe.matmul_flop_per_s / 1e9:,.1f} GFLOP/s, bandwidth up to {probe.bandwidth_bytes_per_s / 1e9:,.1f} GB/s. "
        "Bound: the roofline at those peaks. Estimate: each matrix product at the rate probed at its "
        "shape, plus the attention kernel (and a linear-attention layer's core) probed at the layer's "
        "shape. Measured: the fastest prefill and "
        f"decode step, on {result.clock} (a CPU check runs on one thread and reads its own CPU time, which "
        f"other work on this server does not inflate; wall time beside it). Load average {before:.2f} → {after:.2f}."
    )


def built_by(plan) -> str:
    """Who built the layers and how many parameters: transformers' own modules, or the lab's."""
    if plan.built_by == "transformers":
        return (
            f"Built by **transformers** (its own modules, the base model without its head): "
            f"**{plan.params_built:,}** parameters."
        )
    return f"Built by **the lab's layers** from the formulas' reading: **{plan.params_built:,}** parameters."


def check_on_this_machine(
    shape: ModelShape, preset: str | None = None, config_text: str | None = None
) -> None:
    """The expander: sizes, a button, the last result, for the model sized from ``preset`` or
    ``config_text`` (transformers builds it where it can). Drawn only while open."""
    with st.expander("Check this estimate on this machine", key=OPEN_KEY, on_change="rerun"):
        if st.session_state.get(OPEN_KEY):
            _panel(shape, config_of(preset, config_text))


def _request(machine_gib: float):
    """The check's settings: T, decode steps, batch and a memory cap this machine can hold."""
    from attn_core.verify.plan import VerifyRequest  # torch: only once the panel is opened

    c1, c2, c3, c4 = st.columns(4)
    with c1:
        T = widgets.selectbox("prompt T", SEQ_LENS, key="co_vf_T", default=128)
    with c2:
        steps = widgets.selectbox("decode steps", DECODE_STEPS, key="co_vf_M", default=8)
    with c3:
        batch = int(widgets.number("batch", 1, MAX_BATCH, 1, key="co_vf_B", step=1))
    with c4:
        caps = [g for g in MEMORY_GIB if g <= machine_gib] or [MEMORY_GIB[0]]
        gib = widgets.selectbox("memory cap, GiB", caps, key="co_vf_mem", default=min(2.0, caps[-1]))
    return VerifyRequest(seq_len=T, batch=batch, decode_steps=steps, memory_bytes=int(gib * 2**30))


def _panel(shape: ModelShape, config: dict | None) -> None:
    st.caption(
        "Builds the model's first layers at their true shapes with random weights — transformers' own "
        "modules where it builds the config, embeddings included — (as many as fit the memory cap; a layer "
        "too big for it keeps fewer routed experts, same k and expert shape; a hybrid too big for it, the "
        "first layer of each kind), runs a prefill and decode steps here, and compares the time with the "
        "cost model."
    )
    # torch: only once the panel is opened
    from attn_core.verify.child import start_check
    from attn_core.verify.cli import machine_memory_gib
    from attn_core.verify.plan import VerifyError, plan_build, select_device
    from attn_core.verify.run import VerifyBusy, expected_seconds

    request = _request(machine_memory_gib())
    try:
        with st.spinner("Planning the build…"):
            plan = plan_build(shape, request, config)
    except ValueError as exc:  # VerifyError, or a shape the cost model accepted and verify cannot cut
        st.info(f"This model is not checked here: {exc}")
        return
    seconds = expected_seconds(plan, request, select_device(request.device))
    st.caption(
        f"Planned peak {format_bytes_binary(plan.peak_bytes)} (weights, cache, activations, probe); "
        f"expected to take up to ~{seconds:,.0f} s, stopped at {LIMIT_S} s."
    )
    st.markdown(built_by(plan))
    # A callback, not the button's return value: the press survives any rerun before this line.
    st.button(
        "Run the check",
        key="co_vf_run",
        icon=":material/speed:",
        disabled=seconds > LIMIT_S,
        on_click=st.session_state.update,
        args=({"co_vf_go": True},),
    )
    if seconds > LIMIT_S:
        st.warning(
            f"Expected to take longer than the {LIMIT_S} s a check may run: shorten T or lower the cap."
        )
    if st.session_state.pop("co_vf_go", False) and seconds <= LIMIT_S:
        try:
            st.session_state[CHECK_KEY] = start_check(shape, request, LIMIT_S, config=config)
        except VerifyBusy as exc:
            st.warning(str(exc))
        except VerifyError as exc:
            st.error(str(exc))
    check = st.session_state.get(CHECK_KEY)
    polling = check is not None and not check.done  # only a running check reruns by itself
    st.fragment(_progress, run_every=POLL_S if polling else None)(shape.name, polling)


def _progress(model: str, polling: bool) -> None:
    """The running check (elapsed time and a Stop button) until it ends, then its table or its
    one line. Run as a fragment, every POLL_S while a check runs; the whole page reruns once when
    it ends, which stops the polling."""
    check = st.session_state.get(CHECK_KEY)
    if check is not None and not check.join(POLL_S / 2):
        st.info(f"Running: {check.elapsed:,.0f} s of at most {check.seconds:,.0f} s.")
        st.button("Stop", key="co_vf_stop", icon=":material/stop:", on_click=check.stop)
        return
    if check is not None:
        del st.session_state[CHECK_KEY]
        if check.error is not None:
            st.session_state["co_vf_error"] = check.error
        else:
            st.session_state[RESULT_KEY] = check.result
            st.session_state.pop("co_vf_error", None)
        if polling:
            st.rerun()
    if "co_vf_error" in st.session_state:
        st.error(st.session_state["co_vf_error"])
    result = st.session_state.get(RESULT_KEY)
    if result is not None:
        if result.model != model:
            st.caption(f"The last check was of {result.model}; run it again for this model.")
        _show(result)
