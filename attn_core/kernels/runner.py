"""The sweep: every chosen contestant on every sequence length, judged and timed, within a
wall-clock budget.

For each case: one fp64 reference (SDPA's math kernel on float64 copies, in query chunks so it
never holds more than ``REF_CHUNK_BYTES`` of scores); one untimed profiled call per contestant
(the kernel that ran, peak memory, its output's max error); then the timing (CPU: interleaved
rounds over all contestants; GPU: one contestant at a time). Pass or fail by flash-attention's
rule (``tolerance``). Records go to ``on_record`` as soon as a case is done; before each case the
runner predicts its time from the last one (attention work grows as L·S) and stops cleanly when
the budget would be exceeded.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch

from attn_core.kernels import triton_kernel
from attn_core.kernels.contestants import CONTESTANTS, fixed_backend
from attn_core.kernels.device import DeviceFacts, device_facts, load_average
from attn_core.kernels.records import UNIT_ROUNDOFF, Case, Record, io_bytes, tflops
from attn_core.kernels.timing import median_ms_cpu, median_ms_cuda, probe
from attn_core.masks import causal_mask
from attn_core.oracle import max_abs_diff, sdpa_reference

REF_CHUNK_BYTES = 2**28  # 256 MiB of float64 scores per reference chunk
# Interpreted Triton runs each program in numpy: B·H·L·S·D ≤ 2^25 is ~1 s here (a causal
# 1 × 1 × 1024 × 1024 × 64 case took ~1 s): beyond it the bench skips it, saying so.
MAX_INTERPRETED_WORK = 2**25
# flash-attention's rule allows 2 × the error of plain PyTorch at the same precision. The floor:
# both outputs are rounded to the dtype at the end, each by up to u·max|o| ≤ u·max|v| (o is a
# convex combination of rows of V), so a kernel is owed 2·u·max|v| even where the plain run was
# lucky. A real bug (a dropped block, a wrong rescale, a mask off by one) moves outputs by
# O(0.1·max|v|), far outside.
ERROR_FACTOR = 2.0
FLOOR_ROUNDINGS = 2.0


@dataclass(frozen=True)
class SweepConfig:
    """One sweep: the cases are ``seq_lens`` × the other fields (L = S)."""

    device: str = "cpu"
    seq_lens: tuple[int, ...] = (256, 1024)
    head_dim: int = 64
    batch: int = 1
    heads: int = 8
    kv_heads: int = 8
    dtype: str = "fp32"
    causal: bool = False
    impls: tuple[str, ...] = ("naive", "sdpa", "online")
    budget_s: float = 60.0
    rounds: int = 5
    seed: int = 0

    def cases(self) -> list[Case]:
        base = Case(0, self.head_dim, self.batch, self.heads, self.kv_heads, self.dtype, self.causal)
        return [replace(base, seq_len=n) for n in self.seq_lens]


@dataclass
class SweepResult:
    records: list[Record] = field(default_factory=list)
    facts: DeviceFacts | None = None
    stopped: str | None = None  # why the sweep ended early, None when it finished
    load_before: float | None = None
    load_after: float | None = None


def reference(case: Case, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The float64 output, by SDPA's math path on float64 copies, in chunks of query rows."""
    q, k, v = (t.double() for t in (q, k, v))
    allowed = causal_mask(case.seq_len, case.S).to(q.device) if case.causal else None
    rows = max(1, REF_CHUNK_BYTES // (8 * case.batch * case.heads * case.S))
    parts = []
    for r0 in range(0, case.seq_len, rows):
        mask = None if allowed is None else allowed[r0 : r0 + rows]
        parts.append(sdpa_reference(q[:, :, r0 : r0 + rows], k, v, mask))
    return torch.cat(parts, dim=2)


def tolerance(case: Case, plain_err: float, v: torch.Tensor) -> float:
    """Largest max |error| a correct kernel may have (see ERROR_FACTOR, FLOOR_ROUNDINGS)."""
    max_v = float(v.abs().max())
    return ERROR_FACTOR * plain_err + FLOOR_ROUNDINGS * UNIT_ROUNDOFF[case.dtype] * max_v


def unsupported_note(exc: Exception, probe_warnings: tuple[str, ...] = ()) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    why = "; ".join(w.splitlines()[0] for w in probe_warnings if w)
    return f"unsupported: {first}" + (f" (PyTorch: {why})" if why else "")


def _skip_interpreted(case: Case) -> bool:
    work = case.batch * case.heads * case.seq_len * case.S * case.head_dim
    return triton_kernel.INTERPRETED and work > MAX_INTERPRETED_WORK


def _new_record(config: SweepConfig, case: Case, impl: str, tol: float, plain_err: float) -> Record:
    """A contestant's record of one case before it runs: what it is run on, the case's shape, the
    tolerance it is held to and the plain run's error that tolerance is argued from."""
    rec = Record(
        impl,
        fixed_backend(impl, triton_kernel.INTERPRETED),
        config.device,
        case.dtype,
        case.seq_len,
        case.head_dim,
        case.causal,
    )
    rec.extra = {
        "kv_len": case.S,
        "batch": case.batch,
        "heads": case.heads,
        "kv_heads": case.kv_heads,
        "tol": tol,
        "plain_err": plain_err,
    }
    return rec


def _run_case(config: SweepConfig, case: Case, facts: DeviceFacts) -> tuple[list[Record], dict[str, float]]:
    """The records of one case, and the seconds each contestant (and "reference") took."""
    t0 = time.perf_counter()
    q, k, v = case.inputs(config.device, seed=config.seed)
    ref = reference(case, q, k, v)
    plain_err = max_abs_diff(CONTESTANTS["naive"].fn(q, k, v, case.causal).double(), ref)
    tol = tolerance(case, plain_err, v)
    interpreted = triton_kernel.INTERPRETED
    records, timed = {}, {}
    seconds = {"reference": time.perf_counter() - t0}
    for impl in config.impls:
        fn = CONTESTANTS[impl].fn
        rec = records[impl] = _new_record(config, case, impl, tol, plain_err)
        if impl == "triton" and not triton_kernel.AVAILABLE:
            rec.note = f"unsupported: {triton_kernel.UNAVAILABLE_REASON}"
            continue
        if impl == "triton" and _skip_interpreted(case):
            rec.note = f"skipped: interpreted Triton is limited to B·H·L·S·D ≤ 2^{int(math.log2(MAX_INTERPRETED_WORK))}"
            continue
        out: list[torch.Tensor] = []
        t0 = time.perf_counter()
        try:
            p = probe(lambda fn=fn, out=out: out.append(fn(q, k, v, case.causal)), config.device)
        except Exception as exc:
            rec.note = unsupported_note(exc, getattr(exc, "probe_warnings", ()))
            continue
        rec.backend = p.backend or rec.backend
        rec.peak_mem_bytes = p.peak_bytes
        rec.max_abs_err = max_abs_diff(out[0].double(), ref)
        rec.ok = rec.max_abs_err <= tol
        del out
        seconds[impl] = time.perf_counter() - t0
        if impl == "triton" and interpreted:
            rec.note = "interpreted: time not meaningful"
        else:
            timed[impl] = lambda fn=fn: fn(q, k, v, case.causal)
    if config.device == "cuda":
        times = {impl: median_ms_cuda(fn) for impl, fn in timed.items()}
    else:
        times = median_ms_cpu(timed, config.rounds) if timed else {}
    for impl, ms in times.items():
        seconds[impl] += (config.rounds + 1) * ms * 1e-3  # warm-up and rounds
        rec = records[impl]
        rec.ms, rec.tflops = ms, tflops(case, ms)
        rec.extra["pct_peak"] = facts.percent_of_peak(case.dtype, rec.tflops * 1e12)
        nbytes = io_bytes(case, CONTESTANTS[impl].materializes_scores)
        rec.extra["intensity"] = rec.tflops * 1e12 * (ms * 1e-3) / nbytes  # FLOP per byte moved
    return list(records.values()), seconds


def predict_seconds(last: tuple[Case, dict[str, float]] | None, case: Case) -> float:
    """The next case's time from the last one's: each part scales with the work L·S (the others
    are fixed), and interpreted Triton costs nothing where it will be skipped."""
    if last is None:
        return 0.0
    prev, seconds = last
    ratio = (case.seq_len * case.S) / (prev.seq_len * prev.S)
    return sum(s * ratio for part, s in seconds.items() if not (part == "triton" and _skip_interpreted(case)))


WARM_UP_LEN = 16


def _warm_up(config: SweepConfig) -> None:
    """One untimed call of every contestant on a 16-token case, and one profiled call: the
    process's one-time costs (the profiler's start-up, ~1 s; lazy imports; the Triton interpreter's
    set-up) would otherwise count as the first case's and be scaled into the budget's prediction."""
    probe(lambda: None, config.device)
    case = replace(config.cases()[0], seq_len=WARM_UP_LEN)
    q, k, v = case.inputs(config.device, seed=config.seed)
    for impl in config.impls:
        if impl == "flex":  # compiling is per shape: a tiny shape would not warm the real ones
            continue
        try:
            CONTESTANTS[impl].fn(q, k, v, case.causal)
        except Exception:  # a refusal is reported by the case itself
            continue


def run_sweep(
    config: SweepConfig,
    on_record: Callable[[Record], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> SweepResult:
    """Run every case of ``config`` within ``config.budget_s`` seconds; see the module docstring.

    Raises ValueError for an unknown contestant, an impossible case or a missing device."""
    unknown = [i for i in config.impls if i not in CONTESTANTS]
    if unknown:
        raise ValueError(f"unknown contestant(s) {', '.join(unknown)}; choose from {', '.join(CONTESTANTS)}")
    cases = config.cases()
    for case in cases:
        case.validate()
    facts = device_facts(config.device, (config.dtype,))
    result = SweepResult(facts=facts, load_before=load_average())
    _warm_up(config)
    start, last = clock(), None  # last: the previous case and the seconds of its parts
    for case in cases:
        if should_stop is not None and should_stop():
            result.stopped = "stopped on request"
            break
        elapsed = clock() - start
        predicted = predict_seconds(last, case)
        if elapsed + predicted > config.budget_s:
            result.stopped = (
                f"budget of {config.budget_s:g} s reached before L = {case.seq_len:,} "
                f"(predicted {predicted:.1f} s after {elapsed:.1f} s)"
            )
            break
        records, seconds = _run_case(config, case, facts)
        last = (case, seconds)
        for rec in records:
            rec.extra["load_avg"] = load_average()
            result.records.append(rec)
            if on_record is not None:
                on_record(rec)
    result.load_after = load_average()
    return result
