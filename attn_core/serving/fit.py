"""The step-time coefficients fitted on published GPU runs (``assets/published/runs.json``), each row
replayed by simulating its conditions, with leave-one-source-out errors and an interval calibrated
on them.

Each row is replayed as its scenario says (`attn_core.serving.replay`); rows without the lengths to
replay (and kernel rows) are left out with the reason. Rows marked ``held_out`` are replayed and
scored but never fitted on.

Coefficients Vidur's profile gives (η_max, n_½, η_bw, τ_layer from its layers; link and τ_ar from
its all-reduces: `attn_core.serving.operator_check`) are held there by scripts/fit_time_model.py,
which fits only `RUN_FIELDS` on the rows: the host's launch cost of an eager engine and the 8-bit
GEMMs' η_max, which no profile here measures (``fields``; ``start`` holds the rest).

Error = log(measured time / predicted time) (a rate's time is its reciprocal). The fit minimises
the mean |error| over the rows by coordinate descent on a shrinking multiplicative grid (numpy
only). Leave-one-source-out: refit without every row of one source, score that source's rows.
The 80% interval is the 10th … 90th percentile of those left-out errors.

Speed: the schedule of a load with no arrival times (one request, a fixed batch, max load) does not
depend on step times, so each row is simulated once and its steps re-priced for every candidate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_core.cost.phases import PhaseCount
from attn_core.serving.replay import Replay, log_error, predicted
from attn_core.serving.sim_result import ReplicaRun, SimResult, summarize
from attn_core.serving.simulate import simulate
from attn_core.serving.step_time import Engine, TimeModelCoefficients, estimate_s

FIT_FIELDS = (
    "compute_fraction",
    "half_rows",
    "bandwidth_fraction",
    "layer_overhead_s",
    "link_bytes_per_s",
    "collective_latency_s",
    "fp8_compute_fraction",
    "launch_overhead_s",
)
RUN_FIELDS = ("launch_overhead_s", "fp8_compute_fraction")  # what Vidur's profile cannot give
FACTORS = (0.5, 0.7, 0.85, 1.0, 1.2, 1.4, 2.0)


def with_coefficients(replay: Replay, c: TimeModelCoefficients) -> Replay:
    e = dataclasses.replace(replay.deployment.engine, coefficients=c)
    return dataclasses.replace(replay, deployment=dataclasses.replace(replay.deployment, engine=e))


_STACKED: dict[int, tuple[Any, PhaseCount]] = {}  # id(trace) → (trace kept alive, its steps stacked)


def _stacked(trace: Any) -> PhaseCount:
    """A trace's kept counts as one `PhaseCount` of arrays over every step (a single step's scalars
    repeated once, a run of decode steps' arrays as they are): priced by one `estimate_s` call."""
    hit = _STACKED.get(id(trace))
    if hit is not None and hit[0] is trace:
        return hit[1]
    names = [f.name for f in dataclasses.fields(PhaseCount)]
    sizes = [max(np.size(getattr(c, f)) for f in names) for c in trace.counts]
    cols = {
        f: np.concatenate(
            [
                np.broadcast_to(np.asarray(getattr(c, f), dtype=float), (k,))
                for c, k in zip(trace.counts, sizes, strict=True)
            ]
        )
        for f in names
    }
    stacked = PhaseCount(**cols)
    if len(_STACKED) > 4096:
        _STACKED.clear()
    _STACKED[id(trace)] = (trace, stacked)
    return stacked


def _retime(run: ReplicaRun, engine: Engine) -> ReplicaRun:
    """The same steps at ``engine``'s coefficients: each request's first and finish step kept."""
    t = run.trace
    seconds = np.asarray(estimate_s(engine, _stacked(t)), dtype=float)
    end = np.cumsum(seconds)
    first = end[np.searchsorted(t.end, run.first)]
    finish = end[np.searchsorted(t.end, run.finish)]
    trace = dataclasses.replace(t, end=end, seconds=seconds)
    return dataclasses.replace(run, first=first, finish=finish, trace=trace)


def simulate_replay(replay: Replay, base: SimResult | None = None) -> SimResult:
    """The replay simulated, or ``base`` (a run kept with its step counts) re-priced."""
    if base is None or replay.load.mode == "rate":
        return simulate(replay.deployment, replay.load, keep_counts=replay.load.mode != "rate")
    runs = [_retime(r, replay.deployment.engine) for r in base.runs]
    return summarize(runs, base.max_concurrency)


def errors(replays: list[Replay], bases: list[SimResult], c: TimeModelCoefficients) -> np.ndarray:
    """Each row's log error at coefficients ``c`` (see the module docstring)."""
    out = []
    for r, base in zip(replays, bases, strict=True):
        rc = with_coefficients(r, c)
        out.append(log_error(rc, predicted(rc, simulate_replay(rc, base))))
    return np.array(out)


def _candidates(c: TimeModelCoefficients, field: str, spread: float) -> list[TimeModelCoefficients]:
    out = []
    for f in FACTORS:
        v = getattr(c, field) * f**spread
        if field.endswith("fraction"):
            v = min(v, 1.0)
        if field == "half_rows" and getattr(c, field) == 0:
            v = 8.0 * f
        out.append(dataclasses.replace(c, **{field: v}))
    return out


def descend(
    score: Callable[[TimeModelCoefficients], float],
    start: TimeModelCoefficients,
    fields: tuple[str, ...],
    sweeps: int = 3,
) -> TimeModelCoefficients:
    """Coordinate descent on ``score``: each coefficient in turn tries its grid, keeps the best; the
    grid narrows each sweep (factors^(1/2^sweep)). A coefficient the score cannot move stays."""
    c, best = start, score(start)
    for sweep in range(sweeps):
        for field in fields:
            for cand in _candidates(c, field, 1 / 2**sweep):
                s = score(cand)
                if s < best - 1e-12:
                    c, best = cand, s
    return c


def fit(
    replays: list[Replay],
    bases: list[SimResult],
    start: TimeModelCoefficients | None = None,
    sweeps: int = 3,
    fields: tuple[str, ...] = FIT_FIELDS,
) -> TimeModelCoefficients:
    """`descend` on the rows' mean |log error|."""

    def score(c: TimeModelCoefficients) -> float:
        return float(np.mean(np.abs(errors(replays, bases, c))))

    return descend(score, start or TimeModelCoefficients(), fields, sweeps)


@dataclass(frozen=True)
class FitReport:
    """The fit on every row not held out, each row's errors, and the calibrated interval."""

    coefficients: TimeModelCoefficients
    rows: list[dict[str, Any]]  # id, source, held_out, measured, predicted, in-fit and left-out errors
    log_low: float  # 10th percentile of the left-out errors
    log_high: float  # 90th percentile
    coverage: float  # share of left-out errors inside [log_low, log_high]
    skipped: list[tuple[str, str]]


def fit_report(
    replays: list[Replay],
    skipped: list[tuple[str, str]],
    sweeps: int = 3,
    start: TimeModelCoefficients | None = None,
    fields: tuple[str, ...] = FIT_FIELDS,
) -> FitReport:
    """Fit ``fields`` (the rest stay at ``start``'s) on the rows not held out; leave each source out
    in turn; the interval from those errors."""
    bases = [simulate_replay(r) for r in replays]
    train = [i for i, r in enumerate(replays) if not r.held_out]

    def pick(idx: list[int]) -> tuple[list[Replay], list[SimResult]]:
        return [replays[i] for i in idx], [bases[i] for i in idx]

    c = fit(*pick(train), start=start, sweeps=sweeps, fields=fields)
    in_fit = errors(replays, bases, c)
    left_out = np.full(len(replays), np.nan)
    for source in sorted({replays[i].source for i in train}):
        keep = [i for i in train if replays[i].source != source]
        scored = [i for i, r in enumerate(replays) if r.source == source]
        c_out = fit(*pick(keep), start=c, sweeps=sweeps, fields=fields) if keep else c
        left_out[scored] = errors(*pick(scored), c_out)
    held = [i for i, r in enumerate(replays) if r.held_out]
    left_out[held] = in_fit[held]  # never fitted on: their in-fit error is already left out
    lo, hi = (float(x) for x in np.nanpercentile(left_out, [10, 90]))
    inside = float(np.mean((left_out >= lo) & (left_out <= hi)))
    rows = [
        _row(with_coefficients(r, c), b, float(e), float(lo_e))
        for r, b, e, lo_e in zip(replays, bases, in_fit, left_out, strict=True)
    ]
    return FitReport(c, rows, lo, hi, inside, skipped)


def slo_met(replay: Replay, sim: SimResult) -> bool | None:
    """Whether the simulated p99 TTFT and TPOT keep within the SLO the run was held to (None
    without one): a server row's replay should, as the published run did."""
    ttft, tpot = replay.slo_ms
    if ttft is None and tpot is None:
        return None
    ok_ttft = ttft is None or sim.ttft.p99 * 1e3 <= ttft
    return bool(ok_ttft and (tpot is None or sim.tpot.p99 * 1e3 <= tpot))


def _row(r: Replay, base: SimResult, error: float, left_out: float) -> dict[str, Any]:
    """One row of the report at the fitted coefficients (``r`` carries them)."""
    sim = simulate_replay(r, base)
    return {
        "id": r.run.id,
        "source": r.source,
        "held_out": r.held_out,
        "metric": r.metric,
        "measured": r.run.value,
        "unit": r.run.unit,
        "predicted": float(predicted(r, sim)),
        "log_error": error,
        "log_error_left_out": left_out,
        "slo_ms": list(r.slo_ms),
        "slo_met": slo_met(r, sim),
    }


def report_json(rep: FitReport, command: str) -> dict[str, Any]:
    """What ``assets/derived/time_model.json`` holds (read by `attn_core.serving.fitted`)."""
    return {
        "_comment": "Generated by scripts/fit_time_model.py; do not edit by hand. Errors are "
        "log(measured time / predicted time); the interval is the 10th-90th percentile of the "
        "leave-one-source-out errors.",
        "command": command,
        "coefficients": rep.coefficients.to_json(),
        "interval": {
            "log_low": rep.log_low,
            "log_high": rep.log_high,
            "coverage": rep.coverage,
            "nominal": 0.8,
        },
        "rows": rep.rows,
        "skipped": [{"id": i, "why": why} for i, why in rep.skipped],
    }
