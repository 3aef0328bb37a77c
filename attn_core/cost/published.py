"""GPU runs published by others, priced by this cost model: the bound each run could not beat, the
figure as published, and the attained fraction bound ÷ measured (time) or measured ÷ bound (rate).

The rows live in ``assets/published/runs.json`` (conditions and sources there; the figures are
the publishers', never the lab's). Each row names how it is priced (``method``):

- ``decode-step``: tokens/s for one user at batch 1. Bound: the mean decode step of
  `whole_model.timing` over its N steps (active weights + a cache of P … P + N − 1 tokens, read
  once per step at the GPUs' summed bandwidth); measured step = 1 / (tokens/s).
- ``ttft``: time to first token at batch 1. Bound: max(prefill FLOPs / peak, bytes / bandwidth),
  the Cost page's TTFT, at the peak of the row's compute format (fp8 runs at the fp8 peak).
- ``static-batch``: B prompts of P tokens, then N output tokens each: output tokens/s, or the batch's
  end-to-end latency in ms. The prefill yields each sequence's first token, so N − 1 decode steps
  follow (P … P + N − 2 cached). Bound: TTFT bound + the N − 1 steps' bound, each max(FLOPs / peak,
  bytes / bandwidth) (a large batch's steps are bound by their FLOPs); as a rate B·N / that time,
  a figure per GPU multiplied by the GPU count first. Every phase is priced at the row's compute
  format's peak.
- ``weights-per-step``: time per output token of a server at any batch: every step reads all the
  active weights at least once, so weights / bandwidth bounds it.
- ``fixed-length-throughput``: output tokens/s of a server given R requests of P prompt and N output
  tokens each, at most C in flight (``concurrency``). Each request costs its prompt's prefill FLOPs
  and its N − 1 decode steps' FLOPs (attention over P … P + N − 2 cached), and reads its cache at every
  step plus a C-th of the weights each step reads; the whole run takes at least the larger of all
  FLOPs / peak and all bytes / bandwidth, so the rate is at most N / max(those per request).
- ``compute-per-output-token``: output tokens/s of a server whose lengths vary (and are not
  stated): each output token costs at least the FLOPs of one token through the model (no context),
  so n·peak / those FLOPs. A loose ceiling: it leaves out every prompt.
- ``kernel-flops`` / ``kernel-bandwidth``: a kernel's TFLOP/s or GB/s against the GPU's peak.

A measurement faster than its bound is a defect of the calculator or of the row: `Priced.attained`
is None then and `Priced.defect` says so; no fraction above 1 is ever reported.

Every row also says what it measured for a serving simulator to replay (`SCENARIOS`: batch-1
decode, prefill, a fixed batch, serving offline, serving online with Poisson arrivals and an SLO),
at which concurrency, and whether it is ``held_out``: kept apart to judge predictions, so no fit
may use it (`fit_runs` leaves those out).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attn_core.cost.config_reader import load_preset
from attn_core.cost.gpus import GPU, load_gpu
from attn_core.cost.inputs import Hardware, Precision, Workload
from attn_core.cost.phases import decode_count, prefill_count
from attn_core.cost.published_rows import PublishedError, Run, parse_run
from attn_core.cost.roofline import Roofline, time_phase
from attn_core.cost.whole_model import Timing, timing

RUNS_FILE = Path(__file__).resolve().parents[2] / "assets" / "published" / "runs.json"

DEFECT = "faster than its bound: a defect of the calculator or of the row"


@dataclass(frozen=True)
class Priced:
    """A run beside its bound. Times and rates stay in the row's unit: ``bound`` is what the
    row could at best have published (a floor for ms, a ceiling for rates)."""

    run: Run
    bound: float  # in run.unit
    measured: float  # run.value, or the system's total for a per-GPU rate (unit below)
    unit: str
    ratio: float  # bound ÷ measured time, or measured ÷ bound rate; > 1 is a defect
    how: str  # the bound's arithmetic, in words and numbers
    band: str  # the regime it counts in: "moe" for any mixture of experts, else run.regime

    @property
    def attained(self) -> float | None:
        """The fraction of the bound attained, in (0, 1]; None when the run beat its bound."""
        return self.ratio if self.ratio <= 1 else None

    @property
    def defect(self) -> str | None:
        return DEFECT if self.ratio > 1 else None


def format_figure(x: float) -> str:
    """A published figure or a bound as printed beside it: 19,694 · 104.9 · 13.17 · 1.983."""
    return f"{x:,.0f}" if x >= 1000 else f"{x:.4g}"


def peak_flops(gpu: GPU, compute: str) -> int:
    """Dense Tensor Core FLOP/s for a compute format (`GPU.dense_flops`: assets/gpus.json, each with
    its datasheet); PublishedError for a format the GPU has no peak for."""
    try:
        return gpu.dense_flops(compute)
    except ValueError as exc:
        raise PublishedError(str(exc)) from None


def _timing(run: Run, gpu: GPU, batch: int, prompt: int, gen: int) -> Timing:
    """The run's phases priced at its compute format's peak (fp8 runs at the fp8 peak)."""
    shape = load_preset(run.preset)
    precision = Precision(run.kv, weights=run.weights, kv=run.kv, compute=run.compute)
    workload = Workload(prompt + gen, batch, prompt, gen, causal=True)
    n = run.n_gpus
    peaks = Roofline(n * peak_flops(gpu, run.compute), n * gpu.bandwidth_bytes_per_s)
    return timing(shape, workload, precision, Hardware(gpu, n), peaks)


def _ttft_bound(t: Timing, peak: int, n: int) -> tuple[float, str]:
    how = f"max({t.prefill.total:.4g} FLOPs / ({n} × {peak / 1e12:,.0f} TFLOP/s), {t.prefill_bytes:.4g} B / {n} × bandwidth)"
    return t.ttft_bound_s, how


def price(run: Run) -> Priced:
    """The run beside its bound (see the module's methods); PublishedError for a row it cannot price."""
    try:
        gpu = load_gpu(run.gpu_preset)
    except ValueError as exc:
        raise PublishedError(f"row {run.id!r}: {exc}") from None
    n, m = run.n_gpus, run.method
    peak, bw = peak_flops(gpu, run.compute), gpu.bandwidth_bytes_per_s
    band = run.regime
    if run.preset is not None and load_preset(run.preset).moe is not None:
        band = "moe"
    if m == "decode-step":
        t = _timing(run, gpu, 1, run.input_len, run.output_len)
        step_s = t.decode_s / run.output_len
        how = f"mean decode step = (weights {t.decode_weight_bytes:.4g} B + cache) / ({n} × {bw / 1e9:,.0f} GB/s)"
        return Priced(run, 1 / step_s, run.value, run.unit, step_s * run.value, how, band)
    if m == "ttft":
        t = _timing(run, gpu, 1, run.input_len, 0)
        bound_s, how = _ttft_bound(t, peak, n)
        return Priced(run, bound_s * 1e3, run.value, run.unit, bound_s * 1e3 / run.value, how, band)
    if m == "static-batch":
        B, N = run.batch, run.output_len
        t = _timing(run, gpu, B, run.input_len, N - 1)  # the prefill yields the first token
        ttft_s, how = _ttft_bound(t, peak, n)
        total_s = ttft_s + t.decode_s
        how = f"TTFT {how} + {N - 1} decode steps {t.decode_s:.4g} s"
        if run.unit == "ms":  # the batch's end-to-end latency
            return Priced(run, total_s * 1e3, run.value, "ms", total_s * 1e3 / run.value, how, band)
        rate = B * N / total_s
        measured = run.value * n if run.unit.endswith("/GPU") else run.value
        return Priced(run, rate, measured, "out tok/s", measured / rate, f"{B} × {N} tokens / ({how})", band)
    if m == "fixed-length-throughput":
        rate, how = _fixed_length_rate(run, gpu)
        return Priced(run, rate, run.value, run.unit, run.value / rate, how, band)
    if m == "weights-per-step":
        t = _timing(run, gpu, 1, 1, 1)
        step_s = t.decode_time.weights_s
        how = f"active weights {t.decode_weight_bytes:.4g} B / ({n} × {bw / 1e9:,.0f} GB/s)"
        return Priced(run, step_s * 1e3, run.value, run.unit, step_s * 1e3 / run.value, how, band)
    if m == "compute-per-output-token":
        one = prefill_count(load_preset(run.preset), 1, 1, Precision(run.compute))  # no context
        per_token = one.flops
        rate = 1 / time_phase(one, Roofline(n * peak, n * bw)).compute_s
        how = f"{n} × {peak / 1e12:,.0f} TFLOP/s / {per_token:.4g} FLOPs per output token"
        return Priced(run, rate, run.value, run.unit, run.value / rate, how, band)
    if m == "kernel-flops":
        how = f"dense {run.compute} peak {peak / 1e12:,.0f} TFLOP/s"
        return Priced(run, peak / 1e12, run.value, run.unit, run.value * 1e12 / peak, how, band)
    how = f"HBM bandwidth {bw / 1e9:,.0f} GB/s"  # kernel-bandwidth
    return Priced(run, bw / 1e9, run.value, run.unit, run.value * 1e9 / bw, how, band)


def _fixed_length_rate(run: Run, gpu: GPU) -> tuple[float, str]:
    """N / max(request FLOPs / peak, request bytes / bandwidth): one request's prompt and N decode
    steps (see the module docstring), the weights each step reads shared by the C in flight."""
    shape, n, C = load_preset(run.preset), run.n_gpus, run.concurrency
    P, N = run.input_len, run.output_len
    precision = Precision(run.kv, weights=run.weights, kv=run.kv, compute=run.compute)
    prompt = prefill_count(shape, P, 1, precision)
    steps = decode_count(shape, np.arange(P, P + N - 1, dtype=np.float64), 1, precision)  # after the first
    flops = float(prompt.flops) + float(np.sum(steps.flops))
    step_weights = decode_count(shape, P, C, precision).weight_bytes
    bytes_ = float(prompt.cache_bytes) + float(np.sum(steps.mixing_bytes)) + (N - 1) * step_weights / C
    peak, bw = n * peak_flops(gpu, run.compute), n * gpu.bandwidth_bytes_per_s
    per_request_s = max(flops / peak, bytes_ / bw)
    how = (
        f"{N} tokens / max({flops:.4g} FLOPs per request (prompt {float(prompt.flops):.4g}) / "
        f"({n} × {peak / n / 1e12:,.0f} TFLOP/s), {bytes_:.4g} B (cache + weights ÷ {C}) / "
        f"({n} × {bw / n / 1e9:,.0f} GB/s))"
    )
    return N / per_request_s, how


def fit_runs(priced: tuple[Priced, ...] | None = None) -> tuple[Priced, ...]:
    """The rows a model may be fitted on: every row not ``held_out``."""
    return tuple(p for p in (priced_runs() if priced is None else priced) if not p.run.held_out)


def load_runs(path: Path | None = None) -> tuple[Run, ...]:
    """Every row of the file (default `RUNS_FILE`; ids unique); PublishedError naming the first bad one."""
    path = RUNS_FILE if path is None else path
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise PublishedError(f"{Path(path).name}: {exc}") from None
    rows = doc.get("runs") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not rows:
        raise PublishedError(f"{Path(path).name}: no 'runs' list")
    runs = tuple(parse_run(row) for row in rows)
    ids = [r.id for r in runs]
    if len(set(ids)) != len(ids):
        raise PublishedError(f"{Path(path).name}: ids repeat")
    return runs


@functools.cache
def priced_runs() -> tuple[Priced, ...]:
    """The shipped rows, priced once per process."""
    return tuple(price(run) for run in load_runs())


@dataclass(frozen=True)
class Band:
    """The attained fractions of one regime's rows that did not beat their bound."""

    regime: str
    low: float
    high: float
    rows: tuple[Priced, ...]  # every row of the regime, defects included

    @property
    def counted(self) -> int:
        return sum(p.attained is not None for p in self.rows)


def band(regime: str, priced: tuple[Priced, ...] | None = None) -> Band | None:
    """min and max attained fraction over the regime's rows (None when it has none counted)."""
    rows = tuple(p for p in fit_runs(priced) if p.band == regime)  # held-out rows never set a band
    fractions = [p.attained for p in rows if p.attained is not None]
    return Band(regime, min(fractions), max(fractions), rows) if fractions else None
