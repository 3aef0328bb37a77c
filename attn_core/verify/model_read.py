"""`verify` for a model the formulas do not read but transformers builds (LFM2, Falcon-H1,
MiniMax, Granite 4.0-H, Qwen3.5, …: the presets under assets/models/built/): its counts are taken
from the model itself (``counts_by`` "model"), not from `attn_core.cost`.

- FLOPs: `anatomy.flops.count_flops` over a meta forward of the built layers (matrix products
  only, 2 per multiply-add, routed experts at k of E), times B; the prefill's attention core is
  the causal share T(T + 1)/2 of the T² pairs the counter sees (the cost model's convention;
  every layer here is taken as causal, none as windowed).
- Bytes: the built layers' parameters (the embedding table aside: a pass reads only its rows)
  at the run's dtype, and the cache the anatomy reads for those layers (`anatomy.cache`, at bf16,
  rescaled to the dtype; state kept in fp32 stays fp32), written (prefill) or read (decode).
- The bound: max(FLOPs / peak, bytes / bandwidth) at the probed peaks, priced as the formulas'
  check prices them (`probe.bound_ms`: the cost model's `roofline.time_phase`), each phase a
  `run.PhaseResult` as theirs is. No calibrated estimate:
  it times each product at its shape, which only the formulas' reading lists.

The run is transformers' base model of the first layers (`hf`), in this process, within the
memory cap on its weights and cache."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from attn_core.anatomy.build import BuildRefused, build_on_meta, text_config
from attn_core.anatomy.derive import derive
from attn_core.anatomy.flops import count_flops
from attn_core.cost.dtypes import DTYPE_BYTES
from attn_core.kernels.records import DTYPES
from attn_core.verify import hf
from attn_core.verify.counts import PhaseCounts
from attn_core.verify.peak import MAX_EXPERTS
from attn_core.verify.plan import MAX_LAYERS, VerifyError, VerifyRequest, select_device
from attn_core.verify.probe import PEAK_N, Probe, bound_ms, clock, probe_gemm, probe_stream, time_call
from attn_core.verify.run import PREFILL_REPEATS, ModelBuilt, PhaseResult, VerifyResult, device_name


@dataclass(frozen=True)
class _Built:
    """The planned layers: transformers' config of them, their count, routed experts (None:
    dense), parameters, and the weight and cache bytes the cap bounds (from its meta build)."""

    cut: Any
    layers: int
    experts: int | None
    params: int
    weights: int
    cache: int


def _largest(lo: int, hi: int, fits: Callable[[int], _Built | None]) -> _Built | None:
    """The plan at the largest x in [lo, hi] that ``fits`` (the peak grows with x), by bisection."""
    best = fits(lo)
    while best is not None and lo < hi:
        mid = (lo + hi + 1) // 2
        got = fits(mid)
        lo, hi, best = (mid, hi, got) if got is not None else (lo, mid - 1, best)
    return best


def _over_cap(least: _Built | None, n: int, cap: int) -> str:
    """Why not even the least that is built fits: what it needs (at k experts), over the cap."""
    what = "one layer" if n == 1 else f"the first {n} layers (through the first attention layer)"
    if least is None:
        return f"transformers cannot build {what} alone"
    experts = f" with k = {least.experts} routed experts" if least.experts else ""
    return (
        f"{what}{experts} need {(least.weights + least.cache) / 2**30:.2f} GiB of weights (the embeddings "
        f"among them) and cache, over the {cap / 2**30:.2f} GiB cap: raise the cap or use a 16-bit dtype"
    )


def _layers(cfg, anatomy, request: VerifyRequest, b: int) -> tuple[_Built, list[str]]:
    """The most first layers that fit the cap on weights and cache, and never fewer than reach
    the first attention layer (a run of conv or state layers alone fails in transformers' mask
    builder, and is not the model); at most MAX_EXPERTS routed experts, and where the least layers
    do not fit, as many experts as fit (never fewer than k), cut in the config itself. With notes."""
    N = hf.layer_count(cfg)
    tokens = request.seq_len + request.decode_steps
    attention = [i for g in anatomy.groups if g.params.get("attention") for i in g.layers]
    least = min(attention) + 1 if attention else 1
    k, E = anatomy.experts or (None, None)

    def need(n: int, e: int | None) -> _Built | None:
        try:
            cut = hf.cut_config(cfg, range(n), (E, e) if E else None)
        except BuildRefused:
            return None
        weights, cache = hf.built_numel(cut) * b, anatomy.cache_bytes(tokens, request.batch, b, n)
        return _Built(cut, n, e, hf.built_params(cut), weights, cache)

    def fits(n: int, e: int | None) -> _Built | None:
        got = need(n, e)
        return got if got is not None and got.weights + got.cache <= request.memory_bytes else None

    most = min(E, MAX_EXPERTS) if E else None
    notes = [] if most == E else [f"built with {most} of its {E:,} routed experts, the most one check builds"]
    built = _largest(least, max(min(request.layers or N, N, MAX_LAYERS), least), lambda n: fits(n, most))
    if built is None and E:
        built = _largest(k, most, lambda e: fits(least, e))
        if built is not None:
            notes = [
                f"{least} layers do not fit the cap: built with {built.experts} of its {E:,} routed "
                f"experts (same k = {k}, same expert shape)"
            ]
    if built is None:
        raise VerifyError(_over_cap(need(least, k or None), least, request.memory_bytes))
    return built, notes


def _flops(cut, n: int, request: VerifyRequest, context: int) -> tuple[int, int]:
    """(prefill, decode step) FLOPs of the n built layers, B sequences, counted on meta."""
    T = request.seq_len
    pre, dec, why, outside = count_flops(build_on_meta(cut), n, T, context)  # outside: built too
    if dec is None:
        raise VerifyError(f"the decode step's FLOPs cannot be counted: {why}")
    causal = (T + 1) / (2 * T)  # of the T² pairs, each query's earlier keys and itself
    prefill = sum(v * (causal if p == "attention core" else 1) for row in pre for p, v in row.items())
    decode = sum(sum(r.values()) for r in dec) + outside[1]
    return round((prefill + outside[0]) * request.batch), decode * request.batch


UNREAD = (
    "the formulas do not read this model: FLOPs and bytes are counted from transformers' build "
    "of it (attn_core/anatomy), the bound priced from them; no calibrated estimate"
)


def _phases(flops, moved, runs, probe: Probe) -> list[PhaseResult]:
    """The prefill and the decode step: each phase's counts, its bound, no estimate, and the
    fastest of its runs (CPU or wall time, and wall time, in ms)."""
    phases = []
    for f, m, times in zip(flops, moved, runs, strict=True):
        counts = PhaseCounts(f, m, m, (), ())
        measured, wall = (1e3 * x for x in min(times))
        phases.append(PhaseResult(counts, bound_ms(counts, probe), None, measured, wall))
    return phases


def _bytes_moved(
    anatomy, request: VerifyRequest, layer_weights: int, n: int, context: int
) -> tuple[int, int]:
    """Bytes a prefill and a decode step read: the built layers' weights (the embeddings aside, read
    a row per token) and their cache at the prompt's length, then at the decode's mean context."""
    b = DTYPE_BYTES[request.dtype]
    return (
        layer_weights + anatomy.cache_bytes(request.seq_len, request.batch, b, n),
        layer_weights + anatomy.cache_bytes(context, request.batch, b, n),
    )


def verify_model_read(config: Mapping[str, Any], request: VerifyRequest, name: str) -> VerifyResult:
    """The check of ``config`` with counts from the model itself (see the module docstring): a
    `VerifyResult` with no plan (its JSON has ``counts_by`` "model"). VerifyError where transformers
    cannot build or run it."""
    from attn_core.kernels.device import load_average

    start, load_before = time.perf_counter(), load_average()
    try:
        anatomy, cfg = derive(config), text_config(config)
    except BuildRefused as exc:
        raise VerifyError(str(exc)) from None
    if anatomy.cache_unread:
        raise VerifyError(f"its cache is not read ({anatomy.cache_unread}): no bytes to count")
    device, dtype, b = select_device(request.device), DTYPES[request.dtype], DTYPE_BYTES[request.dtype]
    threads = torch.get_num_threads()
    if device == "cpu" and request.threads is not None:
        torch.set_num_threads(request.threads)
    try:
        built, notes = _layers(cfg, anatomy, request, b)
        cut, n, params, weights, cache = built.cut, built.layers, built.params, built.weights, built.cache
        context = request.seq_len + (request.decode_steps - 1) // 2
        flops = _flops(cut, n, request, context)
        moved = _bytes_moved(
            anatomy, request, weights - anatomy.params_by_part.get("embeddings", 0) * b, n, context
        )
        peak = probe_gemm(PEAK_N[device], PEAK_N[device], PEAK_N[device], dtype, device)
        bandwidth = probe_stream(device, dtype)
        model = hf.build_model(cut, dtype, device)
        prefills, decodes = hf.measure_hf(model, request, device, time_call, PREFILL_REPEATS)
        del model
        where = device_name(device)
        timed_on = "thread CPU time" if clock(device) is time.thread_time else "wall"
    finally:
        torch.set_num_threads(threads)
    probe = Probe(device, request.dtype, peak, bandwidth)
    phases = _phases(flops, moved, (prefills, decodes), probe)
    experts = anatomy.experts[1] if anatomy.experts else None
    built_summary = ModelBuilt(
        n, anatomy.n_layers, built.experts, experts, params, weights, cache, (*notes, UNREAD)
    )
    return VerifyResult(
        model=name,
        device=device,
        device_name=where,
        dtype=request.dtype,
        clock=timed_on,
        request=request,
        plan=None,
        probe=probe,
        prefill=phases[0],
        decode_step=phases[1],
        decode_context=context,
        decode_ms_each=tuple(1e3 * cpu for cpu, _ in decodes),
        load_average=(load_before, load_average()),
        seconds=time.perf_counter() - start,
        built=built_summary,
    )


def format_model_read(r: dict) -> str:
    """The readable table of a model-read check (its JSON, `VerifyResult.to_json`): bound and
    measured per phase."""
    experts = (
        f", {r['experts_built']} of {r['model_experts']:,} routed experts" if r.get("experts_built") else ""
    )
    lines = [
        f"{r['model']} on {r['device']} ({r['device_name']}), {r['dtype']}: {r['layers_built']} of "
        f"{r['model_layers']} layers{experts} built by transformers, {r['params_built']:,} parameters; counts "
        "from the model itself (the formulas do not read it)",
        *(f"  note: {n}" for n in r["notes"][:-1]),
        f"{'phase':<14}{'FLOPs':>16}{'bytes':>14}{'bound ms':>11}{'measured ms':>13}{'bound/measured':>16}",
    ]
    for key in ("prefill", "decode_step"):
        p = r[key]
        lines.append(
            f"{key:<14}{p['flops']:>16,}{p['bytes']:>14,}{p['bound_ms']:>11.2f}"
            f"{p['measured_ms']:>13.2f}{p['bound_over_measured']:>16.2f}"
        )
    load = " → ".join("?" if x is None else f"{x:.2f}" for x in r["load_average"])
    lines.append(f"measured on {r['clock']}; load average {load}; {r['seconds']:.1f} s")
    return "\n".join(lines)
