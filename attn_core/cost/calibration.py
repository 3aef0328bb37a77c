"""A calibration: what one device attained in a kernel bench run, each rate with its source.

- matmul FLOP/s per dtype: measured (``meta.attained``, or a CPU's measured peaks) or, where the
  run measured none, the datasheet peak it carries, flagged ``measured=False``;
- memory bandwidth (bytes/s), the same way;
- attention-kernel FLOP/s per bench case (dtype, d, L, causal, heads): the fastest contestant
  that ran and passed its float64 check, FLOPs by FlashAttention's convention (4·B·H·L·S·D,
  halved when causal), as the bench counts them.

Read from the kernel bench's record format, ``{"meta": {...}, "records": [Record.to_json(), …]}``:
what ``benchmarks/kernel_bench.py gpu`` writes (assets/bench/gpu-results*.json) and what the
Kernels page exports of its last sweep. Anything malformed is refused by name
(`CalibrationError`, a ValueError). Pure Python, like the rest of the cost model.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attn_core.cost.dtypes import DTYPE_BYTES
from attn_core.cost.gpus import GPU

GPU_PEAKS_FILE = Path(__file__).resolve().parents[2] / "assets" / "bench" / "gpu_peaks.json"
MAX_CALIBRATION_BYTES = 16 * 2**20  # a full GPU sweep is ~0.3 MiB
MAX_RECORDS = 20_000
KINDS = ("cpu", "cuda")
# A rate a device can have, FLOP/s or bytes/s: 1 k/s is below any machine that could run a sweep,
# 1e20 /s (100 EFLOP/s) above any chip. A subnormal rate would turn every time into "inf s" and
# the CLI's --json into a non-JSON Infinity.
MIN_RATE, MAX_RATE = 1e3, 1e20
SERVER_GPU = "server"  # the name of a CPU run's device as the cost model's hardware (`as_gpu`)


class CalibrationError(ValueError):
    """A calibration file or run that cannot be read: the message names it and says why."""


@dataclass(frozen=True)
class Rate:
    """One attained rate (FLOP/s or bytes/s) and where it comes from."""

    value: float
    source: str
    measured: bool = True  # False: a datasheet figure the run carried, not what it attained


@dataclass(frozen=True)
class AttentionRate:
    """The fastest correct contestant of one bench case: q (B, heads, L, d), K and V (B, kv_heads,
    S, d); FLOP/s by FlashAttention's convention."""

    impl: str
    dtype: str
    head_dim: int
    seq_len: int  # L
    kv_len: int  # S
    causal: bool
    heads: int
    kv_heads: int
    flop_per_s: float

    def describe(self) -> str:
        causal = ", causal" if self.causal else ""
        gqa = f", {self.heads}/{self.kv_heads} heads" if self.heads != self.kv_heads else ""
        return f"{self.impl} at L = {self.seq_len:,}, d = {self.head_dim}, {self.dtype}{causal}{gqa}"


@dataclass(frozen=True)
class Calibration:
    """One device's attained rates from one bench run (see the module docstring)."""

    device: str  # as torch names it: "NVIDIA H200", or the CPU's model name
    kind: str  # "cpu" or "cuda"
    run: str  # which run: a file name, or "this server's Kernels sweep"
    date: str  # when, UTC
    matmul: dict[str, Rate]  # by dtype name: the square product's rate
    bandwidth: Rate
    attention: tuple[AttentionRate, ...]
    memory_bytes: int | None = None  # the device's memory (a CPU: this machine's RAM)
    # dtype → ((m, FLOP/s), …) of (m × n) @ (n × n) products with cold weights, m ascending, the
    # last the square one; empty where the run measured none
    matmul_rows: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """Which run, when, which device, in a few words (the calibrated column's label)."""
        return f"{self.run}, {self.date}, {self.device}"

    @property
    def preset(self) -> str | None:
        """The GPU preset (assets/gpus.json) this device is, None for a CPU or an unknown GPU."""
        return preset_for_device(self.device) if self.kind == "cuda" else None

    def matmul_rate(self, dtype: str) -> Rate | None:
        return self.matmul.get(dtype)

    def matmul_at(self, dtype: str, rows: float) -> float | None:
        """FLOP/s of a product with ``rows`` rows: the rows curve, interpolated on log(rows) and
        held at its ends; the square rate where the run has no curve; None without a ``dtype`` rate."""
        curve, square = self.matmul_rows.get(dtype), self.matmul.get(dtype)
        if not curve:
            return None if square is None else square.value
        ms, rates = [m for m, _ in curve], [r for _, r in curve]
        if rows <= ms[0]:
            return rates[0]
        if rows >= ms[-1]:
            return rates[-1]
        i = next(i for i, m in enumerate(ms) if m >= rows)  # ms[i - 1] < rows ≤ ms[i]
        t = math.log(rows / ms[i - 1]) / math.log(ms[i] / ms[i - 1])
        return rates[i - 1] + t * (rates[i] - rates[i - 1])

    def attention_rate(
        self, dtype: str, head_dim: int, seq_len: int, causal: bool = True
    ) -> AttentionRate | None:
        """The bench case nearest (dtype, d, L, causal): the same dtype only; then the same
        causal flag if any case has it; then the nearest d, then the nearest L, both on a log
        scale (a tie goes to the larger). None when the run timed nothing in ``dtype``."""
        same = [a for a in self.attention if a.dtype == dtype]
        if not same:
            return None

        def distance(a: AttentionRate) -> tuple:
            return (a.causal != causal, abs(math.log2(a.head_dim / head_dim)), -a.head_dim,
                    abs(math.log2(a.seq_len / seq_len)), -a.seq_len)  # fmt: skip

        return min(same, key=distance)

    def as_gpu(self) -> GPU:
        """This device as the cost model's hardware, its measured rates as the peaks: the fastest
        matmul (or attention kernel) the run saw, and its bandwidth. ValueError without a memory size."""
        if not self.memory_bytes:
            raise CalibrationError(
                f"{self.run}: no memory size in the run, so it cannot stand in for hardware"
            )
        curves = [r for curve in self.matmul_rows.values() for _, r in curve]
        peak = max([r.value for r in self.matmul.values()] + curves + [a.flop_per_s for a in self.attention])
        fp32 = self.matmul.get("fp32")
        shown = f"fp32 matmul {fp32.value / 1e9:,.1f} GFLOP/s, " if fp32 else ""
        return GPU(
            name=SERVER_GPU,
            label=f"this server (measured: {shown}memory {self.bandwidth.value / 1e9:,.1f} GB/s)",
            memory_bytes=int(self.memory_bytes),
            bandwidth_bytes_per_s=max(1, round(self.bandwidth.value)),
            bf16_flops_per_s=max(1, round(peak)),
            memory_source="this machine's RAM",
            source=f"measured by {self.source}: peak = the fastest matmul or attention kernel it timed",
        )


@functools.cache
def _name_table() -> dict[str, tuple[str, ...]]:
    rows = json.loads(GPU_PEAKS_FILE.read_text())
    return {gpu_id: tuple(row["name_contains"]) for gpu_id, row in rows.items() if not gpu_id.startswith("_")}


def preset_for_device(device_name: str) -> str | None:
    """The GPU preset a CUDA device name belongs to ("NVIDIA H200" → "h200"), by
    assets/bench/gpu_peaks.json's ``name_contains``; None when no preset matches."""
    return next(
        (gpu_id for gpu_id, names in _name_table().items() if any(n in device_name for n in names)), None
    )


# -- Reading a run ----------------------------------------------------------------------------
def _positive(value: Any, what: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{what} must be a positive number, got {str(value)[:40]!r}")
    return float(value)


def _rate(value: Any, what: str, unit: float = 1.0) -> float:
    """A positive number that, times ``unit``, is a rate within MIN_RATE … MAX_RATE per second."""
    v = _positive(value, what)
    if not MIN_RATE <= v * unit <= MAX_RATE:
        raise ValueError(
            f"{what} = {str(value)[:40]} is outside any device's range ({MIN_RATE / unit:g} … {MAX_RATE / unit:g})"
        )
    return v


def _whole(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be a whole number ≥ 1, got {str(value)[:40]!r}")
    return value


def _text(value: Any, what: str, default: str | None = None) -> str:
    if value is None and default is not None:
        return default
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be text, got {str(value)[:40]!r}")
    return " ".join(value.split())[:120]


def _rates(meta: dict, kind: str) -> tuple[dict[str, Rate], Rate]:
    """(matmul by dtype, bandwidth): ``meta.attained`` where the run measured them, else
    ``meta.peaks`` and ``meta.bandwidth`` (measured on a CPU, datasheet figures on a GPU unless
    ``meta.measured`` says otherwise)."""
    attained = meta.get("attained") or {}
    if not isinstance(attained, dict):
        raise ValueError("meta.attained must be an object")
    measured = meta.get("measured", kind == "cpu")
    if not isinstance(measured, bool):
        raise ValueError("meta.measured must be true or false")
    peaks_source = _text(meta.get("peak_source"), "meta.peak_source", "the run's peaks")
    if not measured:
        peaks_source = f"datasheet, not measured ({peaks_source})"
    attained_source = _text(attained.get("source"), "meta.attained.source", "measured in the run")
    matmul: dict[str, Rate] = {}
    tables = (
        (meta.get("peaks"), "meta.peaks", peaks_source, measured),
        (attained.get("matmul_flop_per_s"), "meta.attained.matmul_flop_per_s", attained_source, True),
    )
    for table, what, source, is_measured in tables:  # attained after peaks: it wins
        if table is None:
            continue
        if not isinstance(table, dict):
            raise ValueError(f"{what} must map dtypes to FLOP/s")
        for dtype, value in table.items():
            if dtype in DTYPE_BYTES:
                matmul[dtype] = Rate(_rate(value, f"{what}.{dtype}"), source, is_measured)
    if not matmul:
        raise ValueError("no matmul rate (meta.peaks or meta.attained.matmul_flop_per_s)")
    if attained.get("bandwidth_bytes_per_s") is not None:
        value = _rate(attained["bandwidth_bytes_per_s"], "meta.attained.bandwidth_bytes_per_s")
        return matmul, Rate(value, attained_source)
    if meta.get("bandwidth") is None:
        raise ValueError("no bandwidth (meta.bandwidth or meta.attained.bandwidth_bytes_per_s)")
    return matmul, Rate(_rate(meta["bandwidth"], "meta.bandwidth"), peaks_source, measured)


def _curves(meta: dict) -> dict[str, tuple[tuple[int, float], ...]]:
    """The rows curves, dtype → ((m, FLOP/s), …) ascending: ``meta.attained.matmul_rows`` (a GPU
    run) or ``meta.matmul_rows`` (a CPU's measured facts), each {"m": FLOP/s}."""
    table = (meta.get("attained") or {}).get("matmul_rows", meta.get("matmul_rows")) or {}
    if not isinstance(table, dict):
        raise ValueError("matmul_rows must map dtypes to {rows: FLOP/s}")
    out = {}
    for dtype, curve in table.items():
        if dtype not in DTYPE_BYTES or not curve:
            continue
        if not isinstance(curve, dict):
            raise ValueError(f"matmul_rows.{dtype} must map row counts to FLOP/s")
        points = []
        for m, rate in curve.items():
            rows = int(m) if isinstance(m, str) and m.strip().isdigit() else m
            points.append(
                (_whole(rows, f"matmul_rows.{dtype} row count"), _rate(rate, f"matmul_rows.{dtype}.{m}"))
            )
        out[dtype] = tuple(sorted(points))
    return out


def _attention(records: list) -> tuple[AttentionRate, ...]:
    """The fastest correct timed contestant of each case; records not timed (unsupported,
    interpreted, failed) are skipped, a malformed one is refused with its index."""
    best: dict[tuple, AttentionRate] = {}
    for i, r in enumerate(records):
        where = f"record {i}"
        if not isinstance(r, dict):
            raise ValueError(f"{where} is not an object")
        if r.get("tflops") is None or r.get("ok") is not True:
            continue
        dtype = r.get("dtype")
        if dtype not in DTYPE_BYTES:
            raise ValueError(f"{where}: unknown dtype {str(dtype)[:20]!r}")
        if not isinstance(r.get("causal"), bool):
            raise ValueError(f"{where}: causal must be true or false")
        L = _whole(r.get("seq_len"), f"{where}: seq_len")
        heads = _whole(r.get("heads", 1), f"{where}: heads")
        rate = AttentionRate(
            impl=_text(r.get("impl"), f"{where}: impl"),
            dtype=dtype,
            head_dim=_whole(r.get("head_dim"), f"{where}: head_dim"),
            seq_len=L,
            kv_len=_whole(r.get("kv_len", L), f"{where}: kv_len"),
            causal=r["causal"],
            heads=heads,
            kv_heads=_whole(r.get("kv_heads", heads), f"{where}: kv_heads"),
            flop_per_s=1e12 * _rate(r["tflops"], f"{where}: tflops", 1e12),
        )
        case = (rate.dtype, rate.head_dim, rate.seq_len, rate.kv_len, rate.causal, rate.heads, rate.kv_heads)
        if case not in best or rate.flop_per_s > best[case].flop_per_s:
            best[case] = rate
    return tuple(best.values())


def read_calibration(data: Any, run: str) -> Calibration:
    """A `Calibration` from a bench run's JSON (``{"meta", "records"}``); ``run`` names it in
    every refusal. Needs at least one timed, correct attention record."""
    try:
        if isinstance(data, list):
            raise ValueError(
                'a bare list of records carries no device rates; a run file has {"meta": …, "records": […]} '
                "(benchmarks/kernel_bench.py gpu, the Kernels page's export)"
            )
        if not isinstance(data, dict) or not isinstance(data.get("meta"), dict):
            raise ValueError('not a bench run: expected {"meta": {…}, "records": […]}')
        meta, records = data["meta"], data.get("records")
        if not isinstance(records, list) or len(records) > MAX_RECORDS:
            raise ValueError(f"records must be a list of at most {MAX_RECORDS:,}")
        kind = meta.get("kind", "cuda")
        if kind not in KINDS:
            raise ValueError(f"meta.kind must be cpu or cuda, got {str(kind)[:20]!r}")
        matmul, bandwidth = _rates(meta, kind)
        attention = _attention(records)
        if not attention:
            raise ValueError("no timed attention record that passed its check")
        memory = meta.get("memory_bytes")
        return Calibration(
            device=_text(meta.get("device"), "meta.device"),
            kind=kind,
            run=run,
            date=_text(meta.get("date"), "meta.date", "date not recorded"),
            matmul=matmul,
            bandwidth=bandwidth,
            attention=attention,
            memory_bytes=None if memory is None else _whole(memory, "meta.memory_bytes"),
            matmul_rows=_curves(meta),
        )
    except CalibrationError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise CalibrationError(f"{run}: {exc}") from None


def load_calibration(path: Path, name: str | None = None) -> Calibration:
    """`read_calibration` of a file (≤ MAX_CALIBRATION_BYTES), named ``name`` (default: the file's
    name) in every refusal."""
    path = Path(path)
    name = path.name if name is None else name
    if not path.is_file():
        raise CalibrationError(f"{name}: no such file")
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_CALIBRATION_BYTES + 1)
    except OSError as exc:
        raise CalibrationError(f"{name}: cannot read it ({exc.__class__.__name__})") from None
    if len(raw) > MAX_CALIBRATION_BYTES:
        raise CalibrationError(f"{name}: larger than {MAX_CALIBRATION_BYTES // 2**20} MiB")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CalibrationError(f"{name}: not JSON ({str(exc).splitlines()[0][:80]})") from None
    except RecursionError:
        raise CalibrationError(f"{name}: nested too deeply") from None
    return read_calibration(data, name)
