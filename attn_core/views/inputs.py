"""Where a page's Q, K, V come from: the spec's toy, seeded random draws, or typed matrices.

Every builder returns a `QKV` in float64 with a leading batch axis of 1:
q (1, Hq, L, d_k), k (1, Hkv, S, d_k), v (1, Hkv, S, d_v). Which source it came from is a field
(`QKV.kind`), never read off its description. Sizes are capped (`attn_core.limits.LIMITS`) so one
request cannot stall a shared server.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum

import torch

from attn_core import toy
from attn_core.limits import LIMITS, check_range
from attn_core.masks import MaskKind
from attn_core.practice.answers import parse_floats

F64 = torch.float64


class InputKind(StrEnum):
    """Where Q, K, V come from; the value is the label shown, a link keeps the member's name, lower-cased."""

    TOY = "toy: bank's row"
    HAND_TRACE = "hand trace (Q = K = V = X)"
    RANDOM = "random"
    TYPED = "typed matrices"


# The masks the shared input picker offers (the Masks page's gallery offers every `MaskKind`).
PICKER_MASKS = (
    MaskKind.NONE,
    MaskKind.CAUSAL_TOP_LEFT,
    MaskKind.CAUSAL_BOTTOM_RIGHT,
    MaskKind.SLIDING_WINDOW,
    MaskKind.PADDING,
)


class ScaleKind(StrEnum):
    """The factor multiplying Q Kᵀ."""

    SQRT_DK = "1/√d_k"  # card 3
    DK = "1/d_k"  # μP, card 16
    NONE = "none (1)"
    TEMPERATURE = "custom temperature"  # 1/(τ √d_k)


@dataclass(frozen=True)
class QKV:
    q: torch.Tensor  # (1, Hq, L, d_k)
    k: torch.Tensor  # (1, Hkv, S, d_k)
    v: torch.Tensor  # (1, Hkv, S, d_v)
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    description: str  # one line for a caption, e.g. "random N(0, 1), seed 3"
    kind: InputKind
    value_names: tuple[str, ...]  # one per value coordinate (the toy's axes have names)

    @property
    def L(self) -> int:
        return self.q.shape[-2]

    @property
    def S(self) -> int:
        return self.k.shape[-2]

    @property
    def heads(self) -> int:
        return self.q.shape[-3]


def _batched(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(1, 1, *x.shape)  # (L, d) -> (1, 1, L, d)


def _coordinates(d_v: int) -> tuple[str, ...]:
    return tuple(f"o[{c}]" for c in range(d_v))


def toy_bank() -> QKV:
    """Bank's causal row of "the river bank was steep": L = 1 query, S = 3 keys, d_k = d_v = 2."""
    t = toy.bank_row()
    return QKV(
        _batched(t.q),
        _batched(t.k),
        _batched(t.v),
        t.query_tokens,
        t.key_tokens,
        "toy: bank's row",
        InputKind.TOY,
        toy.VALUE_AXES,
    )


def toy_hand_trace() -> QKV:
    """The lesson's hand trace: Q = K = V = X = [[1, 0], [0, 1], [1, 1]]."""
    x = _batched(toy.hand_trace())
    tokens = ("x₀", "x₁", "x₂")
    return QKV(
        x,
        x.clone(),
        x.clone(),
        tokens,
        tokens,
        "hand trace: Q = K = V = X",
        InputKind.HAND_TRACE,
        _coordinates(2),
    )


def random_qkv(L: int, S: int, d_k: int, d_v: int, heads: int = 1, kv_heads: int = 1, seed: int = 0) -> QKV:
    """Standard-normal Q, K, V from a seeded generator (the same seed gives the same matrices)."""
    check_range("L", L, 1, LIMITS.max_len)
    check_range("S", S, 1, LIMITS.max_len)
    check_range("d_k", d_k, 1, LIMITS.max_width)
    check_range("d_v", d_v, 1, LIMITS.max_width)
    check_range("heads", heads, 1, LIMITS.max_heads)
    check_range("KV heads", kv_heads, 1, heads)
    if heads % kv_heads:
        raise ValueError(f"{heads} query heads cannot be split evenly over {kv_heads} KV heads")
    work = heads * L * S * (d_k + d_v)
    if work > LIMITS.max_work:
        raise ValueError(
            f"heads × L × S × (d_k + d_v) = {work:,} multiply-adds is over the cap of "
            f"{LIMITS.max_work:,} that keeps the page fast for everyone: lower a size"
        )
    g = torch.Generator().manual_seed(int(seed))
    q = torch.randn(1, heads, L, d_k, generator=g, dtype=F64)
    k = torch.randn(1, kv_heads, S, d_k, generator=g, dtype=F64)
    v = torch.randn(1, kv_heads, S, d_v, generator=g, dtype=F64)
    offset = S - L  # queries are the last L positions of the S keys (bottom-right alignment)
    q_tokens = tuple(f"q{i + offset}" if offset >= 0 else f"q{i}" for i in range(L))
    k_tokens = tuple(f"k{j}" for j in range(S))
    description = f"random N(0, 1), seed {seed}"
    return QKV(q, k, v, q_tokens, k_tokens, description, InputKind.RANDOM, _coordinates(d_v))


_NUMBER = re.compile(r"[,;\s]+")


def parse_matrix(text: str, name: str) -> torch.Tensor:
    """Parse rows separated by newlines, entries by commas or spaces, into a float64 (rows, cols).

    Raises ValueError naming the matrix, row and column of the first bad cell."""
    rows = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not rows:
        raise ValueError(f"{name} is empty: type one row per line, numbers separated by commas")
    if len(rows) > LIMITS.max_custom_len:
        raise ValueError(f"{name} has {len(rows)} rows; typed matrices are capped at {LIMITS.max_custom_len}")
    values: list[list[float]] = []
    for r, line in enumerate(rows, start=1):
        cells = [c for c in _NUMBER.split(line) if c]
        row = parse_floats(cells, lambda c, r=r: f"{name} row {r}, column {c}")
        too_big = [c for c, x in enumerate(row, start=1) if abs(x) > LIMITS.max_typed_abs]
        if too_big:
            c = too_big[0]
            raise ValueError(
                f"{name} row {r}, column {c}: {cells[c - 1][:20]} is over the cap |x| ≤ {LIMITS.max_typed_abs:,.0f} "
                "(beyond it the scores or their gradients overflow)"
            )
        if values and len(row) != len(values[0]):
            raise ValueError(f"{name} row {r} has {len(row)} entries but row 1 has {len(values[0])}")
        values.append(row)
    if len(values[0]) > LIMITS.max_width:
        raise ValueError(f"{name} has {len(values[0])} columns; the cap is {LIMITS.max_width}")
    return torch.tensor(values, dtype=F64)


def format_matrix(x: torch.Tensor) -> str:
    """Inverse of parse_matrix for a (rows, cols) tensor: what a text box starts with."""
    return "\n".join(", ".join(f"{float(v):g}" for v in row) for row in x)


def custom_qkv(q_text: str, k_text: str, v_text: str) -> QKV:
    """Typed Q (L, d_k), K (S, d_k), V (S, d_v); one head. Shape errors name the mismatch."""
    q, k, v = parse_matrix(q_text, "Q"), parse_matrix(k_text, "K"), parse_matrix(v_text, "V")
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"Q rows have {q.shape[1]} entries but K rows have {k.shape[1]}: d_k must match")
    if k.shape[0] != v.shape[0]:
        raise ValueError(f"K has {k.shape[0]} rows but V has {v.shape[0]}: one value per key")
    L, S = q.shape[0], k.shape[0]
    return QKV(
        _batched(q),
        _batched(k),
        _batched(v),
        tuple(f"q{i}" for i in range(L)),
        tuple(f"k{j}" for j in range(S)),
        "typed matrices",
        InputKind.TYPED,
        _coordinates(v.shape[1]),
    )


def build_scale(kind: ScaleKind | str, d_k: int, temperature: float = 1.0) -> float:
    """The factor multiplying Q Kᵀ: 1/√d_k (card 3), 1/d_k (μP, card 16), 1, or 1/(τ √d_k)."""
    kind = ScaleKind(kind)
    if kind is ScaleKind.SQRT_DK:
        return 1 / math.sqrt(d_k)
    if kind is ScaleKind.DK:
        return 1 / d_k
    if kind is ScaleKind.NONE:
        return 1.0
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a positive number, got {temperature}")
    return 1 / (temperature * math.sqrt(d_k))
