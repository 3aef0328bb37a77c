"""The schema of ``assets/published/runs.json`` (GPU runs published by others): each row's
conditions, its figure, how it is priced (`METHODS`, see `attn_core.cost.published`) and what a
serving simulator needs to replay it (`SCENARIOS`, concurrency, `Replay`), read into a frozen `Run`
by `parse_run`, which refuses a malformed row by name (`PublishedError`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attn_core.cost.dtypes import COMPUTE_DTYPES, DTYPE_BYTES, WEIGHT_BITS
from attn_core.cost.published_lengths import Lengths, LengthsError, parse_lengths

REGIMES = {
    "decode-b1": "batch-1 decode",
    "prefill-b1": "batch-1 prefill",
    "batched-decode": "batched decode",
    "serving": "serving (continuous batching)",
    "moe": "mixture of experts",
    "kernel": "kernel",
}
SCENARIOS = {  # what the row measured, as a serving simulator would replay it
    "decode-b1": "one sequence decoding (batch 1)",
    "prefill-b1": "one prompt's prefill (batch 1, time to first token)",
    "fixed-batch": "a static batch of B prompts, then N steps",
    "serving-offline": "a server given every request at once (continuous batching, at most `concurrency` in flight)",
    "serving-server": "a server under Poisson arrivals at `request_rate_per_s`, held to an SLO",
    "kernel": "one kernel",
}
METRICS = (
    "output tok/s",
    "TTFT ms",
    "TPOT ms",
    "ITL ms",
    "step ms",
    "latency ms",
    "kernel TFLOP/s",
    "kernel GB/s",
)
METHODS = (
    "decode-step",
    "ttft",
    "static-batch",
    "fixed-length-throughput",
    "weights-per-step",
    "compute-per-output-token",
    "kernel-flops",
    "kernel-bandwidth",
)
UNITS = {  # the units each method reads
    "decode-step": ("tok/s/user",),
    "ttft": ("ms",),
    "static-batch": ("out tok/s/GPU", "out tok/s", "ms"),
    "fixed-length-throughput": ("out tok/s",),
    "weights-per-step": ("ms",),
    "compute-per-output-token": ("out tok/s",),
    "kernel-flops": ("TFLOP/s",),
    "kernel-bandwidth": ("GB/s",),
}
REQUIRED = ("id", "source", "where", "framework", "version", "model", "gpu", "gpu_preset", "n_gpus",
            "parallelism", "precision", "regime", "method", "published", "scenario", "metric")  # fmt: skip


class PublishedError(ValueError):
    """The published-runs file, or one of its rows, is not what this module prices."""


@dataclass(frozen=True)
class Run:
    """One published measurement and its conditions, as the file states them."""

    id: str
    source: str
    where: str
    framework: str
    version: str
    model: str
    preset: str | None  # a shipped model preset (None for a kernel row)
    gpu: str  # as published
    gpu_preset: str  # the row of assets/gpus.json it is priced on
    n_gpus: int
    parallelism: str
    weights: str
    kv: str
    compute: str
    batch: int | None
    input_len: int | None
    output_len: int | None
    regime: str
    method: str
    value: float  # the figure as published
    unit: str
    text: str  # the figure in the publisher's words
    note: str = ""
    kernel: str | None = None  # FA2, FA3, FA4, cuDNN, FlashMLA… for a kernel row
    scenario: str = "kernel"  # a key of SCENARIOS
    metric: str = "output tok/s"  # one of METRICS: what ``value`` is
    concurrency: int | None = None  # sequences in flight (the batch; a server's cap), None if unstated
    replay: Replay | None = None  # a server's arrivals and SLO, where stated
    held_out: bool = False  # kept apart to judge predictions: no fit uses it
    cuda_graphs: bool | None = None  # decode steps replayed as captured CUDA graphs; None: unstated


@dataclass(frozen=True)
class Replay:
    """What a serving simulator needs beyond the row's fixed lengths: the requests, their arrival
    rate (None: all at once), the service-level limits the run was held to (None where it had none)
    and, for a dataset whose lengths vary, the lengths the row's own figures give
    (`attn_core.cost.published_lengths`)."""

    num_requests: int | None = None
    request_rate_per_s: float | None = None
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    dataset: str = ""
    lengths: Lengths | None = None


def _whole(value: Any, name: str, row: str, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PublishedError(f"row {row!r}: {name} must be a whole number ≥ 1, got {value!r}")
    return value


def _text(value: Any, name: str, row: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PublishedError(f"row {row!r}: {name} must be a non-empty string, got {value!r}")
    return value


def _checked_fields(row: dict[str, Any], rid: str) -> tuple[dict, dict, str, str, float]:
    """The row's precision, published figure, method, regime and value, each checked (PublishedError
    naming the row and the field)."""
    prec, pub = row["precision"], row["published"]
    if not isinstance(prec, dict) or not isinstance(pub, dict):
        raise PublishedError(f"row {rid!r}: precision and published must be objects")
    method, regime = row["method"], row["regime"]
    if method not in METHODS or regime not in REGIMES or regime == "moe":
        raise PublishedError(f"row {rid!r}: unknown method {method!r} or regime {regime!r}")
    if pub.get("unit") not in UNITS[method]:
        raise PublishedError(
            f"row {rid!r}: {method} reads {' or '.join(UNITS[method])}, not {pub.get('unit')!r}"
        )
    value = pub.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e9:
        raise PublishedError(f"row {rid!r}: published value must be a positive number, got {value!r}")
    if prec.get("weights") not in WEIGHT_BITS or prec.get("kv") not in DTYPE_BYTES:
        raise PublishedError(f"row {rid!r}: unknown weight or KV dtype in {prec!r}")
    if prec.get("compute") not in COMPUTE_DTYPES:
        raise PublishedError(f"row {rid!r}: compute must be one of {', '.join(COMPUTE_DTYPES)}")
    return prec, pub, method, regime, value


def parse_run(row: dict[str, Any]) -> Run:
    """One row of the file as a `Run`; PublishedError naming the row and the field otherwise."""
    if not isinstance(row, dict):
        raise PublishedError(f"a row must be an object, got {type(row).__name__}")
    rid = str(row.get("id"))
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise PublishedError(f"row {rid!r}: missing {', '.join(missing)}")
    prec, pub, method, regime, value = _checked_fields(row, rid)
    kernel = method.startswith("kernel")
    if (row.get("preset") is None) != kernel:
        raise PublishedError(f"row {rid!r}: a model row names a preset, a kernel row none")
    needs_lengths = method in ("decode-step", "ttft", "static-batch", "fixed-length-throughput")
    if row["scenario"] not in SCENARIOS or row["metric"] not in METRICS:
        raise PublishedError(f"row {rid!r}: unknown scenario {row['scenario']!r} or metric {row['metric']!r}")
    if method == "fixed-length-throughput":
        _whole(row.get("concurrency"), "concurrency", rid)
    if not isinstance(row.get("held_out", False), bool):
        raise PublishedError(f"row {rid!r}: held_out must be true or false")
    if not isinstance(row.get("cuda_graphs"), bool | None):
        raise PublishedError(f"row {rid!r}: cuda_graphs must be true, false or absent (unstated)")
    return Run(
        id=_text(row["id"], "id", rid),
        **{k: _text(row[k], k, rid) for k in ("source", "where", "framework", "version", "model", "gpu")},
        preset=row.get("preset"),
        gpu_preset=_text(row["gpu_preset"], "gpu_preset", rid),
        n_gpus=_whole(row["n_gpus"], "n_gpus", rid),
        parallelism=_text(row["parallelism"], "parallelism", rid),
        weights=prec["weights"],
        kv=prec["kv"],
        compute=prec["compute"],
        batch=_whole(
            row.get("batch"), "batch", rid, allow_none=not needs_lengths or method.startswith("fixed")
        ),
        input_len=_whole(row.get("input_len"), "input_len", rid, allow_none=not needs_lengths),
        output_len=_whole(row.get("output_len"), "output_len", rid, allow_none=not needs_lengths),
        regime=regime,
        method=method,
        value=float(value),
        unit=pub["unit"],
        text=_text(pub.get("text"), "published text", rid),
        note=str(row.get("note", "")),
        kernel=row.get("kernel"),
        scenario=row["scenario"],
        metric=row["metric"],
        concurrency=_whole(row.get("concurrency"), "concurrency", rid, allow_none=True),
        replay=_replay(row.get("replay"), rid),
        held_out=row.get("held_out", False),
        cuda_graphs=row.get("cuda_graphs"),
    )


def _replay(doc: Any, rid: str) -> Replay | None:
    """A row's ``replay`` object as a `Replay` (None when absent); PublishedError for a bad field."""
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise PublishedError(f"row {rid!r}: replay must be an object")
    out = {}
    for key in ("request_rate_per_s", "slo_ttft_ms", "slo_tpot_ms"):
        v = doc.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < 1e9):
            raise PublishedError(f"row {rid!r}: replay.{key} must be a positive number, got {v!r}")
        out[key] = None if v is None else float(v)
    requests = _whole(doc.get("num_requests"), "replay.num_requests", rid, allow_none=True)
    try:
        lengths = parse_lengths(doc.get("lengths"), rid)
    except LengthsError as exc:
        raise PublishedError(str(exc)) from exc
    return Replay(num_requests=requests, dataset=str(doc.get("dataset", "")), lengths=lengths, **out)
