"""The Kernels page in one call: this server's device, a bounded sweep of the contestants, the
tables and chart rows it shows, and the GPU results recorded in ``assets/bench/``.

One sweep runs at a time on the whole server (a module-level lock): a visitor who presses Run
while another's sweep runs gets ``busy`` and the last results instead. Sizes are capped here
(one home) so that a sweep stays within ``MAX_BUDGET_S`` of a shared CPU.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import torch

from attn_core.kernels.contestants import CONTESTANTS
from attn_core.kernels.device import DeviceFacts, attained_rates, device_facts
from attn_core.kernels.records import DTYPES, Record
from attn_core.kernels.runner import MAX_INTERPRETED_WORK, SweepConfig, run_sweep
from attn_core.views import calibrations

SEQ_LEN_CHOICES = (64, 128, 256, 512, 1024, 2048)  # the largest: 8 heads of naive = 128 MiB fp32
DEFAULT_SEQ_LENS = (128, 256, 512)
HEAD_DIMS = (32, 64, 128)
MAX_HEADS = 8
MAX_BUDGET_S = 30  # one visitor's sweep holds the server's bench for at most this (+ one case)
DEFAULT_BUDGET_S = 10
ROUNDS = 3  # interleaved timing rounds per case
PAGE_IMPLS = tuple(i for i in CONTESTANTS if i != "flex")
DEFAULT_IMPLS = ("naive", "sdpa", "sdpa-math", "sdpa-efficient", "online", "triton")
LEFT_OUT = {
    "flex": "compiled FlexAttention is left out here: compiling it takes ~25 s of a shared CPU "
    "(~4 s per new shape); run `python -m attn_core bench --impl flex`. 'flex-eager' shows its "
    "unfused reference path."
}
RESULTS_DIR = calibrations.RECORDED_DIR  # assets/bench
RESULTS_GLOB = calibrations.RECORDED_GLOB

_LOCK = threading.Lock()
UNWIND_WAIT_S = 10.0  # longer than one timing call of the largest allowed case on a 2-core CPU
_LAST: list[Record] = []  # the last sweep's records on this server, shown to everyone


@dataclass(frozen=True)
class BenchRequest:
    """What the visitor chose: L = S for each of ``seq_lens``; B = 1."""

    seq_lens: tuple[int, ...] = DEFAULT_SEQ_LENS
    head_dim: int = 64
    heads: int = 4
    kv_heads: int = 4
    dtype: str = "fp32"
    causal: bool = False
    impls: tuple[str, ...] = DEFAULT_IMPLS
    budget_s: float = DEFAULT_BUDGET_S

    def config(self, device: str) -> SweepConfig:
        """The sweep for ``device``; ValueError naming the first choice outside the caps."""
        if not self.seq_lens or not set(self.seq_lens) <= set(SEQ_LEN_CHOICES):
            raise ValueError(f"sequence lengths: pick one or more of {', '.join(map(str, SEQ_LEN_CHOICES))}")
        if not self.impls or not set(self.impls) <= set(PAGE_IMPLS):
            raise ValueError(f"contestants: pick one or more of {', '.join(PAGE_IMPLS)}")
        if self.head_dim not in HEAD_DIMS or not 1 <= self.heads <= MAX_HEADS or self.dtype not in DTYPES:
            raise ValueError(f"head dim in {HEAD_DIMS}, 1…{MAX_HEADS} heads, dtype in {', '.join(DTYPES)}")
        if self.heads % self.kv_heads:
            raise ValueError(f"{self.heads} query heads cannot share {self.kv_heads} KV heads evenly (GQA)")
        if not 0 < self.budget_s <= MAX_BUDGET_S:
            raise ValueError(f"the time cap must be in (0, {MAX_BUDGET_S}] s")
        return SweepConfig(
            device=device,
            seq_lens=tuple(sorted(self.seq_lens)),
            head_dim=self.head_dim,
            heads=self.heads,
            kv_heads=self.kv_heads,
            dtype=self.dtype,
            causal=self.causal,
            impls=self.impls,
            budget_s=self.budget_s,
            rounds=ROUNDS,
        )


HEADLINE = {"head_dim": 128, "dtype": "bf16", "causal": False}  # the Kernels page's headline cases
TARGET_L = 8192
TARGET_RATIO = 0.6  # our Triton kernel vs the best SDPA backend's TFLOP/s at L = 8,192


@dataclass(frozen=True)
class RecordedRun:
    """GPU results shipped in assets/bench/, recorded by benchmarks/gpu_sweep.sh on a real GPU."""

    file: str
    meta: dict
    rows: list[dict]

    def headline_rows(self) -> list[dict]:
        """Chart rows (contestant, L, TFLOP/s) of the timed MHA records at d = 128, bf16, not causal."""
        return [
            {"contestant": _label(r["impl"]), "L": r["seq_len"], "TFLOP/s": r["tflops"]}
            for r in self.rows
            if r.get("tflops") is not None
            and r.get("kv_heads") == r.get("heads")
            and all(r.get(k) == v for k, v in HEADLINE.items())
        ]

    def triton_vs_best_sdpa(self) -> float | None:
        """Triton's TFLOP/s over the best SDPA backend's at L = 8,192 in the headline family
        (correct records only); None when either is missing."""
        at = [
            r
            for r in self.rows
            if r.get("seq_len") == TARGET_L
            and r.get("kv_heads") == r.get("heads")
            and r.get("ok")
            and r.get("tflops")
            and all(r.get(k) == v for k, v in HEADLINE.items())
        ]
        sdpa = [r["tflops"] for r in at if r["impl"].startswith("sdpa")]
        ours = [r["tflops"] for r in at if r["impl"] == "triton"]
        return ours[0] / max(sdpa) if sdpa and ours else None


@dataclass
class BenchView:
    facts: DeviceFacts
    has_gpu: bool
    records: list[Record]
    busy: bool = False  # another visitor's sweep holds the bench: these are the last results
    stopped: str | None = None
    load: tuple[float | None, float | None] = (None, None)
    perf_rows: list[dict] = field(default_factory=list)  # timed records, for the charts
    error_rows: list[dict] = field(default_factory=list)  # every record: error, rule, verdict
    recorded: list[RecordedRun] = field(default_factory=list)
    recorded_problems: list[str] = field(default_factory=list)  # files of assets/bench/ skipped, and why
    left_out: dict[str, str] = field(default_factory=dict)
    interpreted_cap: int = MAX_INTERPRETED_WORK
    error: str | None = None  # the request is outside the caps: why (nothing ran)
    # this server's last sweep as a calibration for the Cost page: (hardware choice, dtype, run JSON)
    cost_rates: tuple[str, str, str] | None = None
    # a sweep of this visitor's that is not the server's calibration: (why not, its run JSON)
    own_run: tuple[str, str] | None = None
    dtype: str = "fp32"  # the request's: the roofline's dtype until a sweep has records

    @property
    def roof_peak(self) -> float | None:
        """The peak FLOP/s the roofline is drawn under: the swept dtype's, else the request's."""
        return self.facts.peak_flops.get(self.records[0].dtype if self.records else self.dtype)

    @property
    def ridge(self) -> float | None:
        dtype = self.records[0].dtype if self.records else "fp32"
        return self.facts.ridge(dtype)


def device_name() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


@cache
def _facts(device: str, dtype: str) -> DeviceFacts:
    return device_facts(device, tuple(dict.fromkeys(("fp32", dtype))))


def recorded_gpu_runs(folder: Path | None = None, problems: list[str] | None = None) -> list[RecordedRun]:
    """Every assets/bench/gpu-results*.json ({"meta": …, "records": […]}), newest name first. A
    file that cannot be read is skipped; its name and what is wrong go to ``problems``."""
    runs = []
    for path in sorted((folder or RESULTS_DIR).glob(RESULTS_GLOB), reverse=True):
        try:
            data = json.loads(path.read_text())
            meta, records = data["meta"], data["records"]
            if not isinstance(meta, dict) or not isinstance(records, list):
                raise ValueError('expected {"meta": {…}, "records": […]}')
            if (bad := next((i for i, r in enumerate(records) if not isinstance(r, dict)), None)) is not None:
                raise ValueError(f"record {bad} is not an object")
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            why = f"no {exc} key" if isinstance(exc, KeyError) else str(exc).splitlines()[0][:120]
            if problems is not None:
                problems.append(f"assets/bench/{path.name} was skipped: it cannot be read ({why})")
            continue
        runs.append(RecordedRun(path.name, meta, records))
    return runs


def run_meta(facts: DeviceFacts) -> dict:
    """This server's device in the bench's run format (``meta`` of benchmarks/kernel_bench.py gpu,
    with ``kind``, ``measured``, ``memory_bytes`` and the rates it attains): with the sweep's
    records, a calibration for the Cost page and ``python -m attn_core cost --calibration``."""
    memory = facts.memory_bytes if facts.kind == "cuda" else calibrations.machine_memory_bytes()
    return {
        "device": facts.name,
        "kind": facts.kind,
        "measured": facts.measured,
        "peaks": facts.peak_flops,
        "bandwidth": facts.bandwidth,
        "peak_source": facts.source,
        "threads": facts.threads,
        "attained": attained_rates(facts.kind, tuple(facts.peak_flops) or tuple(DTYPES)),
        "memory_bytes": memory,
        "versions": facts.versions,
        "date": calibrations.utc_now(),
    }


def _label(impl: str) -> str:
    return CONTESTANTS[impl].label


def _rows(records: list[Record]) -> tuple[list[dict], list[dict]]:
    perf, errors = [], []
    for r in records:
        if r.ms is not None:
            perf.append(
                {
                    "contestant": _label(r.impl),
                    "L": r.seq_len,
                    "ms": r.ms,
                    "TFLOP/s": r.tflops,
                    "% of peak": r.extra.get("pct_peak"),
                    "FLOP/byte": r.extra.get("intensity"),
                    "peak extra MiB": None if r.peak_mem_bytes is None else r.peak_mem_bytes / 2**20,
                }
            )
        errors.append(
            {
                "contestant": _label(r.impl),
                "L": r.seq_len,
                "kernel that ran": r.backend or "—",
                "max |err| vs fp64": r.max_abs_err,
                "allowed": r.extra.get("tol"),
                "verdict": {True: "✓ pass", False: "✗ FAIL", None: "—"}[r.ok],
                "note": r.note,
            }
        )
    return perf, errors


def cost_rates() -> tuple[str, str, str] | None:
    """(the Cost page's hardware choice, the dtype the sweep timed, the run's JSON) when this
    server's last sweep calibrates a hardware choice there; None otherwise."""
    server, _ = calibrations.server_calibration()
    choice = None if server is None else calibrations.SERVER if server.kind == "cpu" else server.preset
    if choice is None or (server.kind == "cpu" and not server.memory_bytes):
        return None
    return choice, server.attention[0].dtype, json.dumps(calibrations.server_run(), indent=1)


def _view(request: BenchRequest, facts: DeviceFacts, records: list[Record], **kw) -> BenchView:
    perf, errors = _rows(records)
    problems: list[str] = []
    recorded = recorded_gpu_runs(problems=problems)
    return BenchView(
        facts,
        facts.kind == "cuda",
        list(records),
        perf_rows=perf,
        error_rows=errors,
        recorded=recorded,
        recorded_problems=problems,
        left_out=dict(LEFT_OUT),
        cost_rates=cost_rates(),
        dtype=request.dtype,
        **kw,
    )


def kernels_page(
    request: BenchRequest,
    run: bool,
    previous: list[Record] | None = None,
    on_record: Callable[[Record, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> BenchView:
    """Everything the Kernels page shows. ``run`` False: the visitor's ``previous`` records (or
    the server's last sweep) without computing anything new. ``run`` True: the sweep of
    ``request`` on this server's device; ``on_record(record, n_expected)`` reports progress.
    A request outside the caps runs nothing and says why in ``error``."""
    device = device_name()
    facts = _facts(device, request.dtype if request.dtype in DTYPES else "fp32")
    try:
        config = request.config(device)
    except ValueError as exc:
        return _view(request, facts, previous if previous is not None else _LAST, error=str(exc))
    if not run:
        return _view(request, facts, previous if previous is not None else _LAST)
    # A sweep that was just stopped releases the bench when its current timing call returns (Streamlit
    # interrupts a script only between calls): wait that long before telling the visitor it is busy.
    if not _LOCK.acquire(timeout=UNWIND_WAIT_S):
        return _view(request, facts, previous or _LAST, busy=True)
    expected = len(config.seq_lens) * len(config.impls)
    records: list[Record] = []

    def record(rec: Record) -> None:
        records.append(rec)
        _LAST[:] = records
        if on_record is not None:
            on_record(rec, expected)

    try:
        meta = run_meta(facts)  # the rates this device attains: measured once per process, before the sweep
        result = run_sweep(config, on_record=record, should_stop=should_stop)
    finally:
        _LOCK.release()
    run_json = {"meta": meta, "records": [r.to_json() for r in result.records]}
    why = not_a_server_calibration(config, result, run_json)
    if why is None:  # the Cost page's rates for every visitor
        calibrations.publish_server_run(meta, run_json["records"])
    own = None if why is None else (why, json.dumps(run_json, indent=1))
    load = (result.load_before, result.load_after)
    return _view(request, facts, result.records, stopped=result.stopped, load=load, own_run=own)


def not_a_server_calibration(config, result, run_json: dict) -> str | None:
    """Why a sweep may not become this server's calibration for every visitor, or None: it must
    have run to its end, timed SDPA (the kernel the cost model's attention stands for) correctly,
    and read as a calibration with rates in range. A partial sweep (say, the naive contestant
    alone: 20,600 s to the first token of a small model) stays with the visitor who ran it."""
    if result.stopped:
        return f"it ended early ({result.stopped})"
    if not any(r.impl == "sdpa" and r.ok and r.tflops for r in result.records):
        return "it has no correct SDPA timing, the kernel the cost model's attention stands for"
    try:
        calibrations.read_calibration(run_json, calibrations.SERVER_RUN_NAME)
    except calibrations.CalibrationError as exc:
        return str(exc)
    return None
