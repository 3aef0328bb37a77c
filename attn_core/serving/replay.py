"""A published row (``assets/published/runs.json``) replayed by the serving simulation: the load and
scheduler its scenario stands for, and the figure it published read back from the simulation.

By scenario (`attn_core.cost.published_rows.SCENARIOS`):

- ``decode-b1``: one request of P prompt and N output tokens; its decode rate is 1 / TPOT;
- ``prefill-b1``: one request's prefill (N = 1); its TTFT;
- ``fixed-batch``: B requests all at once with at most B in flight and fixed lengths (a static batch:
  B prefills, then N − 1 decode steps); output tokens/s over the batch's span (per GPU where the row
  is per GPU), or the batch's end-to-end latency (NeMo's tables);
- ``serving-offline``: every request at once (``replay.num_requests``, else the concurrency), at
  most ``concurrency`` in flight; output tokens/s;
- ``serving-server``: Poisson arrivals at ``replay.request_rate_per_s``; its median TTFT, TPOT/ITL
  or output tokens/s. The SLO the run was held to is kept beside the prediction (`Replay.slo_ms`).

A row needs its prompt and output lengths, whether its engine replays steps as CUDA graphs
(unstated: eager), one tensor-parallel replica of 1, 2, 4 or 8 GPUs and a preset. A run on a
dataset whose lengths vary is replayed where its own figures give them (``replay.lengths``,
`attn_core.cost.published_lengths`): its requests' listed lengths, one by one, or the means its
token rates ÷ request rate give, spread uniformly where the source says how widely; otherwise it is
skipped, saying so. Compute is priced
at the row's compute dtype's dense peak (`attn_core.cost.gpus.GPU.dense_flops`: fp8 rows at fp8).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from attn_core.cost.config_reader import load_preset
from attn_core.cost.gpus import load_gpu
from attn_core.cost.inputs import Precision
from attn_core.cost.published import load_runs
from attn_core.cost.published_lengths import Lengths
from attn_core.cost.published_rows import PublishedError, Run
from attn_core.serving.load import Load
from attn_core.serving.sim_result import SimResult
from attn_core.serving.simulate import Deployment, Scheduler
from attn_core.serving.step_time import Engine, TimeModelCoefficients

METRICS = {  # the row's metric → what the replay reads
    "TTFT ms": "ttft",
    "TPOT ms": "tpot",
    "ITL ms": "tpot",  # one sequence's gap between tokens: the simulator's TPOT
    "latency ms": "latency",
}
TIMES = ("ttft", "tpot", "latency")  # metrics that are times (the rest are rates)
DEFAULT_REQUESTS = 1000  # a server row that does not say how many requests it sent


@dataclass(frozen=True)
class Replay:
    """A published row and the simulation that reproduces its conditions."""

    run: Run
    held_out: bool
    deployment: Deployment
    load: Load
    metric: str  # "decode-rate", "ttft", "tpot", "latency", "throughput"

    @property
    def source(self) -> str:
        return self.run.source

    @property
    def slo_ms(self) -> tuple[float | None, float | None]:
        """(TTFT, TPOT) limits the run was held to, ms; None where it had none."""
        r = self.run.replay
        return (None, None) if r is None else (r.slo_ttft_ms, r.slo_tpot_ms)


def _ep(parallelism: str) -> int:
    m = re.search(r"EP\s*(\d+)", parallelism)
    return int(m.group(1)) if m else 1


def replay_metric(run: Run) -> str | None:
    """What the row's figure is, for the replay: a decode rate (tok/s/user), a time, or output tok/s."""
    if run.unit == "tok/s/user":
        return "decode-rate"
    if run.metric in METRICS and run.unit == "ms":
        return METRICS[run.metric]
    return "throughput" if run.unit.startswith("out tok/s") else None


def _dataset_load(lengths: Lengths, k: int, mode: str, rate: float | None = None) -> Load:
    """K requests with the lengths the row's figures give: its listed ones (K = the list's length),
    or the means, spread as the source says."""
    L = (lengths.input_len, lengths.output_len)
    if lengths.input_lens is not None:
        given = {"prompt_lens": lengths.input_lens, "output_lens": lengths.output_lens}
        return Load(*L, mode, rate=rate, requests=len(lengths.input_lens), **given)
    return Load(*L, mode, rate=rate, requests=k, spread=lengths.spread)


def _load(run: Run, metric: str) -> tuple[Load, int] | str:
    """The row's load and its cap on sequences in flight, or why it has none."""
    P, N, B = run.input_len, run.output_len, run.batch or 1
    rep, cap = run.replay, run.concurrency
    lengths = rep.lengths if rep is not None and P is None else None
    if lengths is not None:
        return _varying_load(run, lengths)
    if run.scenario == "decode-b1":
        return Load(P, max(N, 2), "max", requests=1), 1
    if run.scenario == "prefill-b1":
        return Load(P, 1, "max", requests=1), 1
    if run.scenario == "fixed-batch":
        return Load(P, N, "max", requests=B), B
    if run.scenario == "serving-offline":
        k = (rep.num_requests if rep else None) or cap or B
        return Load(P, N, "max", requests=k), cap or k
    if run.scenario == "serving-server":
        if rep is None or rep.request_rate_per_s is None:
            return "a server row without its request rate"
        k = rep.num_requests or DEFAULT_REQUESTS
        return Load(P, N, "rate", rate=rep.request_rate_per_s, requests=k), cap or 256
    return f"scenario {run.scenario!r} is not replayed"


def _varying_load(run: Run, lengths: Lengths) -> tuple[Load, int] | str:
    """A server row on a dataset whose lengths vary, with the lengths its own figures give."""
    rep, cap = run.replay, run.concurrency
    k = len(lengths.input_lens) if lengths.input_lens is not None else rep.num_requests or DEFAULT_REQUESTS
    if run.scenario == "serving-offline":
        return _dataset_load(lengths, k, "max"), cap or k
    if run.scenario == "serving-server" and rep.request_rate_per_s is not None:
        return _dataset_load(lengths, k, "rate", rep.request_rate_per_s), cap or 256
    return f"scenario {run.scenario!r} with varying lengths is not replayed"


def replay_of(run: Run, coefficients: TimeModelCoefficients | None = None) -> Replay | str:
    """The row's replay, or why it has none (module docstring)."""
    if run.preset is None:
        return "a kernel row"
    varying = run.replay is not None and run.replay.lengths is not None
    if (run.input_len is None or run.output_len is None) and not varying:
        return "no prompt and output lengths stated: the dataset's lengths vary, nothing to replay"
    if run.n_gpus not in (1, 2, 4, 8):
        return f"{run.n_gpus} GPUs is not one tensor-parallel replica"
    metric = replay_metric(run)
    if metric is None:
        return f"a figure in {run.unit} is not replayed"
    loaded = _load(run, metric)
    if isinstance(loaded, str):
        return loaded
    load, cap = loaded
    engine = Engine(
        load_preset(run.preset),
        load_gpu(run.gpu_preset),
        Precision(run.kv, weights=run.weights, kv=run.kv, compute=run.compute),
        run.n_gpus,
        run.compute,
        ep=min(_ep(run.parallelism), run.n_gpus),
        coefficients=coefficients or TimeModelCoefficients(),
        cuda_graphs=bool(run.cuda_graphs),  # unstated: priced as eager, the slower reading
    )
    longest = load.in_len if load.prompt_lens is None else max(load.prompt_lens)
    sched = Scheduler(max_seqs=cap, token_budget=max(8192, int(longest * (1 + load.spread)) + 1))
    return Replay(run, run.held_out, Deployment(engine, 1, sched), load, metric)


def load_replays(
    coefficients: TimeModelCoefficients | None = None,
) -> tuple[list[Replay], list[tuple[str, str]]]:
    """Every replayable row of the shipped file, and (id, reason) for the rest."""
    replays, skipped = [], []
    for run in load_runs():
        try:
            r = replay_of(run, coefficients)
        except (PublishedError, ValueError) as exc:  # an unknown preset, a dtype without a peak
            skipped.append((run.id, f"not replayed: {exc}"))
            continue
        (replays.append(r) if isinstance(r, Replay) else skipped.append((run.id, r)))
    return replays, skipped


def predicted(replay: Replay, sim: SimResult) -> float:
    """The row's figure as the simulation gives it, in the row's unit (medians over requests)."""
    m = replay.metric
    if m == "decode-rate":
        return 1 / sim.tpot.p50
    if m in TIMES:
        return getattr(sim, m).p50 * 1e3
    rate = sim.output_tokens_per_s
    return rate / replay.run.n_gpus if replay.run.unit.endswith("/GPU") else rate


def log_error(replay: Replay, value: float) -> float:
    """log(measured time / predicted time): > 0 when the run was slower than predicted (a rate's
    time is its reciprocal)."""
    ratio = replay.run.value / value
    return math.log(ratio) if replay.metric in TIMES else -math.log(ratio)
