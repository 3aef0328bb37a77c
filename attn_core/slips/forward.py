"""The common forward-pass slips, written out so that a page can show each beside the right answer.

Each slip is shape-compatible with the correct computation — that is why it survives code review.
Every function takes the same arguments as its correct counterpart and returns weights/outputs
that fail a check the correct version passes (rows sum to 1, no future leakage, no NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.attention import default_scale, stable_softmax
from attn_core.slips import Slip


@dataclass(frozen=True)
class SlipResult:
    weights: torch.Tensor  # (..., L, S) what the slip produces in place of P
    output: torch.Tensor  # (..., L, d_v) what it produces in place of O


def _scores(q: torch.Tensor, k: torch.Tensor, scale: float | None) -> torch.Tensor:
    scale = default_scale(q.shape[-1]) if scale is None else scale
    return (q @ k.transpose(-2, -1)) * scale  # (..., L, S)


def softmax_wrong_axis(q, k, v, allowed=None, *, scale=None) -> SlipResult:
    """softmax(dim=-2): each key's weights sum to 1 over the queries, so rows stop summing to 1."""
    s = _scores(q, k, scale)
    if allowed is not None:
        s = s.masked_fill(~allowed, -math.inf)
    weights = torch.softmax(s, dim=-2)
    return SlipResult(weights, weights @ v)


def multiply_by_mask(q, k, v, allowed, *, scale=None) -> SlipResult:
    """Scores × {0, 1} instead of adding -inf: a blocked score becomes 0, i.e. e^0 = 1 of mass."""
    s = _scores(q, k, scale) * allowed.to(q.dtype)
    weights = stable_softmax(s)
    return SlipResult(weights, weights @ v)


def zero_after_softmax(q, k, v, allowed, *, scale=None, renormalize: bool = False) -> SlipResult:
    """softmax over all keys, then zero the blocked weights. Rows sum to < 1 and the blocked
    (future) scores still sit in the normalizer: the future leaks. Renormalizing the kept weights
    recovers the masked softmax for finite rows (the full normalizer cancels)."""
    weights = stable_softmax(_scores(q, k, scale)) * allowed.to(q.dtype)
    if renormalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return SlipResult(weights, weights @ v)


def triu_diagonal_mask(L: int, S: int | None = None) -> torch.Tensor:
    """Causal mask built with triu(ones, diagonal=0): it blocks the diagonal too, so query 0 sees
    nothing (a fully masked row). The right blocked set is triu(ones, 1). Returns an allowed mask."""
    S = L if S is None else S
    blocked = torch.triu(torch.ones(L, S, dtype=torch.bool), diagonal=0)
    return ~blocked


def finite_fill(q, k, v, allowed, *, scale=None, fill: float = -1e9) -> SlipResult:
    """Fill blocked scores with a finite number (-1e9) instead of -inf. On a fully masked row every
    score equals the fill, so the softmax returns a uniform row over blocked keys instead of failing."""
    s = _scores(q, k, scale).masked_fill(~allowed, fill)
    weights = stable_softmax(s)
    return SlipResult(weights, weights @ v)


def q_transpose_k(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Qᵀ K instead of Q Kᵀ: a (d_k, d_k) matrix of feature correlations, not (L, S) scores.
    Only defined when L == S, so the bug hides in square self-attention tests."""
    if q.shape[-2] != k.shape[-2]:
        raise ValueError(f"Qᵀ K needs L == S, got L={q.shape[-2]}, S={k.shape[-2]}")
    return q.transpose(-2, -1) @ k  # (..., d_k, d_k)


# The slips the Playground shows beside the right answer, by id.
SLIPS: dict[str, Slip] = {
    "wrong_axis": Slip(
        softmax_wrong_axis,
        "softmax over the wrong axis",
        "softmax(dim=0): each key's column sums to 1 over the queries, so a query's weights no longer "
        "sum to 1 and its output is no longer an average of values.",
    ),
    "multiply_mask": Slip(
        multiply_by_mask,
        "multiply scores by the 0/1 mask",
        "S ⊙ M instead of S + (−∞)·(1 − M): a blocked score becomes 0, and e⁰ = 1 still hands it weight.",
    ),
    "qt_k": Slip(
        q_transpose_k,
        "Qᵀ K instead of Q Kᵀ",
        "Qᵀ K is d_k × d_k (feature against feature), not L × S (query against key); it only multiplies "
        "at all when L = S, which is why square tests miss it.",
    ),
}
