"""What one bench measurement is: the case, the FLOP count by FlashAttention's convention, and the
record written to JSON (the CLI's contract: its keys are ``RECORD_KEYS``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch

# The CLI's dtype names -> torch dtypes, with the unit roundoff u = 2^-p of each.
DTYPES: dict[str, torch.dtype] = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
UNIT_ROUNDOFF: dict[str, float] = {"fp32": 2.0**-24, "fp16": 2.0**-11, "bf16": 2.0**-8}

RECORD_KEYS = (
    "impl",
    "backend",
    "device",
    "dtype",
    "seq_len",
    "head_dim",
    "causal",
    "ms",
    "tflops",
    "peak_mem_bytes",
    "max_abs_err",
    "ok",
    "note",
)


@dataclass(frozen=True)
class Case:
    """One attention call: q (batch, heads, seq_len, head_dim), k and v (batch, kv_heads,
    kv_len, head_dim); ``kv_len`` None means kv_len = seq_len. ``causal`` is bottom-right
    (query i may attend key j iff j ≤ i + S − L), so it needs seq_len ≤ kv_len."""

    seq_len: int
    head_dim: int = 64
    batch: int = 1
    heads: int = 8
    kv_heads: int = 8
    dtype: str = "fp32"
    causal: bool = False
    kv_len: int | None = None

    @property
    def S(self) -> int:
        return self.seq_len if self.kv_len is None else self.kv_len

    def validate(self) -> None:
        """ValueError naming the first thing that makes this case impossible."""
        if min(self.seq_len, self.head_dim, self.batch, self.heads, self.kv_heads, self.S) < 1:
            raise ValueError(f"every size must be at least 1: {self}")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads = {self.heads} must be a multiple of kv_heads = {self.kv_heads}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {self.dtype!r}")
        if self.causal and self.seq_len > self.S:
            raise ValueError(f"causal (bottom-right) needs L ≤ S, got L = {self.seq_len} > S = {self.S}")

    def inputs(self, device: str | torch.device = "cpu", seed: int = 0) -> tuple[torch.Tensor, ...]:
        """Random normal q, k, v (never zeros: a matmul on zeros runs faster than on data)."""
        gen = torch.Generator().manual_seed(seed)
        shapes = [
            (self.batch, self.heads, self.seq_len, self.head_dim),
            (self.batch, self.kv_heads, self.S, self.head_dim),
            (self.batch, self.kv_heads, self.S, self.head_dim),
        ]
        dtype = DTYPES[self.dtype]
        return tuple(torch.randn(s, generator=gen).to(device=device, dtype=dtype) for s in shapes)


def attention_flops(case: Case) -> float:
    """Forward FLOPs by FlashAttention's convention: 4·B·H·L·S·D (two GEMMs of 2·L·S·D each per
    head), halved when causal, whatever L ≠ S does to the exact count, so figures compare with
    published ones."""
    flops = 4.0 * case.batch * case.heads * case.seq_len * case.S * case.head_dim
    return flops / 2 if case.causal else flops


def tflops(case: Case, ms: float) -> float:
    """TFLOP/s for one call of ``ms`` milliseconds."""
    return attention_flops(case) / (ms * 1e-3) / 1e12


def io_bytes(case: Case, materializes_scores: bool) -> float:
    """The least memory traffic of one call: read Q, K, V, write O; a kernel that forms the
    L × S matrix also writes and reads scores and weights (4 passes of B·H·L·S elements)."""
    size = DTYPES[case.dtype].itemsize
    qo = 2 * case.batch * case.heads * case.seq_len * case.head_dim
    kv = 2 * case.batch * case.kv_heads * case.S * case.head_dim
    scores = 4 * case.batch * case.heads * case.seq_len * case.S if materializes_scores else 0
    return float(size * (qo + kv + scores))


@dataclass
class Record:
    """One contestant on one case. ``ms`` is None when it did not run (``note`` says why)."""

    impl: str
    backend: str | None
    device: str
    dtype: str
    seq_len: int
    head_dim: int
    causal: bool
    ms: float | None = None
    tflops: float | None = None
    peak_mem_bytes: int | None = None
    max_abs_err: float | None = None
    ok: bool | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)  # kv_len, heads, batch, % of peak, tolerance, …

    def to_json(self) -> dict:
        """The record as the CLI writes it: ``RECORD_KEYS`` first, then the extras."""
        d = asdict(self)
        extra = d.pop("extra")
        return {**{k: d[k] for k in RECORD_KEYS}, **extra}
