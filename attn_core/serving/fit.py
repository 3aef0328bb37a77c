"""The step-time coefficients fitted on published GPU runs (``assets/published/runs.json``), each row
replayed by simulating its conditions, with leave-one-source-out errors and an interval calibrated
on them.

Replaying a row (`replay_of`): batch-1 decode → one request, tokens/s = 1 / its TPOT; batch-1
TTFT → one request's TTFT; a fixed batch → B requests all at once (a closed loop at B, one round),
output tokens/s over the batch's span; a server offline → every request at once (``requests`` of
the row, else B); a server with a ``rate`` → Poisson arrivals, its median TTFT or TPOT (a figure
in ms) or its output tokens/s. Rows without the lengths to replay (and kernel rows) are left out, with
the reason. Rows marked ``held_out`` are replayed and scored but never fitted on.

Error = log(measured time / predicted time) (a rate's time is its reciprocal). The fit minimises
the mean |error| over the rows by coordinate descent on a shrinking multiplicative grid (numpy
only). Leave-one-source-out: refit without every row of one source, score that source's rows.
The 80% interval is the 10th … 90th percentile of those left-out errors.

Speed: the schedule of a load with no arrival times (one request, a fixed batch, max load) does not
depend on step times, so each row is simulated once and its steps re-priced for every candidate.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_core.cost.gpus import load_gpu
from attn_core.cost.inputs import Precision
from attn_core.cost.published import RUNS_FILE, Run, parse_run
from attn_core.cost.shapes import load_preset
from attn_core.serving.load import Load
from attn_core.serving.sim_result import ReplicaRun, SimResult, summarize
from attn_core.serving.simulate import Deployment, Scheduler, simulate
from attn_core.serving.step_time import Engine, TimeModelCoefficients, estimate_s

FIT_FIELDS = (
    "compute_fraction",
    "half_rows",
    "bandwidth_fraction",
    "layer_overhead_s",
    "link_bytes_per_s",
    "collective_latency_s",
)
FACTORS = (0.5, 0.7, 0.85, 1.0, 1.2, 1.4, 2.0)


@dataclass(frozen=True)
class Replay:
    """A published row and the simulation that reproduces its conditions."""

    run: Run
    held_out: bool
    deployment: Deployment
    load: Load
    metric: str  # "decode-rate", "ttft", "throughput"

    @property
    def source(self) -> str:
        return self.run.source


def _ep(parallelism: str) -> int:
    m = re.search(r"EP\s*(\d+)", parallelism)
    return int(m.group(1)) if m else 1


def _metric(run: Run) -> str | None:
    """What a row's figure is, by its unit: a user's decode rate, a TTFT or TPOT, or output tokens/s."""
    if run.unit == "tok/s/user":
        return "decode-rate"
    if run.unit == "ms":
        return "ttft" if run.method == "ttft" else "tpot"
    return "throughput" if run.unit.startswith("out tok/s") else None


def replay_of(run: Run, raw: dict[str, Any], coefficients: TimeModelCoefficients) -> Replay | str:
    """The row's replay, or why it has none."""
    if run.preset is None:
        return "a kernel row"
    if run.input_len is None or run.output_len is None:
        return "no prompt and output lengths to replay"
    tp = run.n_gpus if run.n_gpus in (1, 2, 4, 8) else None
    if tp is None:
        return f"{run.n_gpus} GPUs is not one tensor-parallel replica"
    precision = Precision(run.kv, weights=run.weights, kv=run.kv)
    engine = Engine(
        load_preset(run.preset),
        load_gpu(run.gpu_preset),
        precision,
        tp,
        run.compute,
        ep=min(_ep(run.parallelism), tp),
        coefficients=coefficients,
    )
    P, N, B = run.input_len, run.output_len, run.batch or 1
    metric = _metric(run)
    if metric is None:
        return f"a figure in {run.unit} is not replayed"
    if metric == "ttft" and not raw.get("rate"):
        N = 1  # a batch-1 TTFT: the prefill alone
    if raw.get("rate"):  # a server: Poisson arrivals
        load = Load(P, N, "rate", rate=float(raw["rate"]), requests=int(raw.get("requests", 1000)))
    else:  # one request, a fixed batch, or a server offline: every request at once
        load = Load(
            P, max(N, 2) if metric == "decode-rate" else N, "max", requests=int(raw.get("requests", B))
        )
    sched = Scheduler(max_seqs=max(256, B), token_budget=max(8192, P))
    return Replay(run, bool(raw.get("held_out", False)), Deployment(engine, 1, sched), load, metric)


def load_replays(
    coefficients: TimeModelCoefficients | None = None,
) -> tuple[list[Replay], list[tuple[str, str]]]:
    """Every replayable row of the shipped file, and (id, reason) for the rest."""
    coefficients = coefficients or TimeModelCoefficients()
    rows = json.loads(RUNS_FILE.read_text())["runs"]
    replays, skipped = [], []
    for raw in rows:
        try:
            run = parse_run(raw)
            r = replay_of(run, raw, coefficients)
        except ValueError as exc:  # a row this reader cannot take (a new method, an unknown preset)
            skipped.append((str(raw.get("id")), f"not read: {exc}"))
            continue
        (replays.append(r) if isinstance(r, Replay) else skipped.append((run.id, r)))
    return replays, skipped


def with_coefficients(replay: Replay, c: TimeModelCoefficients) -> Replay:
    e = dataclasses.replace(replay.deployment.engine, coefficients=c)
    return dataclasses.replace(replay, deployment=dataclasses.replace(replay.deployment, engine=e))


def _retime(run: ReplicaRun, engine: Engine) -> ReplicaRun:
    """The same steps at ``engine``'s coefficients: each request's first and finish step kept."""
    t = run.trace
    seconds = np.concatenate([np.atleast_1d(estimate_s(engine, c)) for c in t.counts])
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


def predicted(replay: Replay, sim: SimResult) -> float:
    """The row's figure as the simulation gives it, in the row's unit."""
    run = replay.run
    if replay.metric == "decode-rate":
        return 1 / sim.tpot.p50
    if replay.metric in ("ttft", "tpot"):
        return (sim.ttft if replay.metric == "ttft" else sim.tpot).p50 * 1e3
    rate = sim.output_tokens_per_s
    return rate / run.n_gpus if run.unit.endswith("/GPU") else rate


def log_error(replay: Replay, value: float) -> float:
    """log(measured time / predicted time): > 0 when the run was slower than predicted."""
    ratio = replay.run.value / value
    return math.log(ratio) if replay.metric in ("ttft", "tpot") else -math.log(ratio)


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


def fit(
    replays: list[Replay], bases: list[SimResult], start: TimeModelCoefficients | None = None, sweeps: int = 3
) -> TimeModelCoefficients:
    """Coordinate descent on mean |log error|: each coefficient in turn tries its grid, keeps the
    best; the grid narrows each sweep (factors^(1/2^sweep)). Coefficients the rows cannot move
    (all-reduce terms without a tensor-parallel row) stay where they are."""
    c = start or TimeModelCoefficients()
    best = float(np.mean(np.abs(errors(replays, bases, c))))
    for sweep in range(sweeps):
        for field in FIT_FIELDS:
            for cand in _candidates(c, field, 1 / 2**sweep):
                score = float(np.mean(np.abs(errors(replays, bases, cand))))
                if score < best - 1e-12:
                    c, best = cand, score
    return c


@dataclass(frozen=True)
class FitReport:
    """The fit on every row not held out, each row's errors, and the calibrated interval."""

    coefficients: TimeModelCoefficients
    rows: list[dict[str, Any]]  # id, source, held_out, measured, predicted, in-fit and left-out errors
    log_low: float  # 10th percentile of the left-out errors
    log_high: float  # 90th percentile
    coverage: float  # share of left-out errors inside [log_low, log_high]
    skipped: list[tuple[str, str]]


def fit_report(replays: list[Replay], skipped: list[tuple[str, str]], sweeps: int = 3) -> FitReport:
    """Fit on the rows not held out; leave each source out in turn; the interval from those errors."""
    bases = [simulate_replay(r) for r in replays]
    train = [i for i, r in enumerate(replays) if not r.held_out]

    def pick(idx: list[int]) -> tuple[list[Replay], list[SimResult]]:
        return [replays[i] for i in idx], [bases[i] for i in idx]

    c = fit(*pick(train), sweeps=sweeps)
    in_fit = errors(replays, bases, c)
    left_out = np.full(len(replays), np.nan)
    for source in sorted({replays[i].source for i in train}):
        keep = [i for i in train if replays[i].source != source]
        scored = [i for i, r in enumerate(replays) if r.source == source]
        c_out = fit(*pick(keep), start=c, sweeps=sweeps) if keep else c
        left_out[scored] = errors(*pick(scored), c_out)
    held = [i for i, r in enumerate(replays) if r.held_out]
    left_out[held] = in_fit[held]  # never fitted on: their in-fit error is already left out
    lo, hi = (float(x) for x in np.nanpercentile(left_out, [10, 90]))
    inside = float(np.mean((left_out >= lo) & (left_out <= hi)))
    rows = [
        {
            "id": r.run.id,
            "source": r.source,
            "held_out": r.held_out,
            "metric": r.metric,
            "measured": r.run.value,
            "unit": r.run.unit,
            "predicted": float(
                predicted(with_coefficients(r, c), simulate_replay(with_coefficients(r, c), b))
            ),
            "log_error": float(e),
            "log_error_left_out": float(lo_e),
        }
        for r, b, e, lo_e in zip(replays, bases, in_fit, left_out, strict=True)
    ]
    return FitReport(c, rows, lo, hi, inside, skipped)


def report_json(rep: FitReport, command: str) -> dict[str, Any]:
    """What ``assets/derived/time_model.json`` holds (read by `attn_core.serving.fitted`)."""
    return {
        "_comment": "Generated by benchmarks/fit_time_model.py; do not edit by hand. Errors are "
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
