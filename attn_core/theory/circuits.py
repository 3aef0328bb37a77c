"""Two circuits: where to look (QK) and what to bring back (OV); and the heads sum (lesson; card 9).

    scores  S = X W_Q (X W_K)ᵀ = X (W_Q W_Kᵀ) Xᵀ       depend on W_Q W_Kᵀ only
    (W_Q R)(W_K R^{−T})ᵀ = W_Q R R^{−1} W_Kᵀ = W_Q W_Kᵀ  for any invertible R
    (W_Q R)(W_K R)ᵀ = W_Q R Rᵀ W_Kᵀ                      equals W_Q W_Kᵀ only when R Rᵀ = I
    outputs P X W_V W_O depend on W_V W_O only:  (W_V R)(R^{−1} W_O) = W_V W_O
    concat(head_1, …, head_h) W_O = Σ_n head_n W_O[n]   (W_O[n]: rows n·d_v … (n+1)·d_v − 1)

X is (T, d) with no mask; W_Q, W_K (d, d_k); W_V (d, d_v); W_O (d_v, d).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.attention import attention
from attn_core.limits import THEORY, check_range
from attn_core.theory.scaling import F64, generator


def random_invertible(n: int, g: torch.Generator, *, orthogonal: bool) -> torch.Tensor:
    """R = U diag(σ) Vᵀ with U, V random orthogonal and σ ∈ [1/2, 2] (condition number ≤ 4), or just
    U when orthogonal: a general invertible matrix that is neither orthogonal nor symmetric."""
    U = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=F64)).Q
    if orthogonal:
        return U
    V = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=F64)).Q
    sigma = 2.0 ** (2 * torch.rand(n, generator=g, dtype=F64) - 1)
    return U @ torch.diag(sigma) @ V.T


@dataclass(frozen=True)
class BasisChange:
    """max |Δ| of the scores and outputs after a change of basis, done right and done as the slip."""

    orthogonal: bool
    condition_number: float  # κ(R)
    scores_right: float  # W_Q R, W_K R^{−T}: 0 up to rounding
    scores_slip: float  # W_Q R, W_K R: 0 only for orthogonal R
    outputs_right: float  # W_V R, R^{−1} W_O on top of the right QK change
    scores: torch.Tensor  # (T, T) the original scores
    scores_after_slip: torch.Tensor  # (T, T)


def _head(X, W_Q, W_K, W_V, W_O) -> tuple[torch.Tensor, torch.Tensor]:
    res = attention(X @ W_Q, X @ W_K, X @ W_V, scale=1.0 / math.sqrt(W_Q.shape[-1]))
    return res.scores, res.output @ W_O


def change_of_basis(
    T: int = 8, d: int = 16, d_k: int = 4, *, orthogonal: bool = False, seed: int = 0
) -> BasisChange:
    """One random head, then W_Q R, W_K R^{−T} (right), W_Q R, W_K R (the slip) and W_V R, R^{−1} W_O."""
    check_range("T", T, 1, THEORY.max_tokens)
    check_range("d", d, 1, THEORY.max_width)
    check_range("d_k", d_k, 1, d)
    g = generator(seed)
    X = torch.randn(T, d, generator=g, dtype=F64)
    W_Q, W_K, W_V = torch.randn(3, d, d_k, generator=g, dtype=F64) / math.sqrt(d)
    W_O = torch.randn(d_k, d, generator=g, dtype=F64) / math.sqrt(d_k)
    R = random_invertible(d_k, g, orthogonal=orthogonal)
    R_inv = torch.linalg.inv(R)
    S, O = _head(X, W_Q, W_K, W_V, W_O)
    S_right, O_right = _head(X, W_Q @ R, W_K @ R_inv.T, W_V @ R, R_inv @ W_O)
    S_slip, _ = _head(X, W_Q @ R, W_K @ R, W_V, W_O)
    diff = lambda a, b: float((a - b).abs().max())  # noqa: E731
    kappa = float(torch.linalg.cond(R))
    return BasisChange(orthogonal, kappa, diff(S_right, S), diff(S_slip, S), diff(O_right, O), S, S_slip)


@dataclass(frozen=True)
class HeadsSum:
    """concat(heads)·W_O against the sum of each head times its block of W_O."""

    heads: int
    concat: torch.Tensor  # (T, d)
    per_head: torch.Tensor  # (h, T, d) head_n W_O[n]
    max_abs_diff: float


def heads_sum(T: int = 8, d: int = 16, heads: int = 4, seed: int = 0) -> HeadsSum:
    """h heads of width d/h on one X (T, d); the two readings of the output projection."""
    check_range("heads", heads, 1, d)
    check_range("T", T, 1, THEORY.max_tokens)
    if d % heads:
        raise ValueError(f"d = {d} is not a multiple of h = {heads}")
    d_h = d // heads
    g = generator(seed)
    X = torch.randn(T, d, generator=g, dtype=F64)
    W_Q, W_K, W_V = torch.randn(3, heads, d, d_h, generator=g, dtype=F64) / math.sqrt(d)
    W_O = torch.randn(d, d, generator=g, dtype=F64) / math.sqrt(d)
    out = attention(X @ W_Q, X @ W_K, X @ W_V).output  # (h, T, d_h)
    concat = out.transpose(0, 1).reshape(T, d) @ W_O  # (T, h·d_h) @ (d, d)
    per_head = out @ W_O.view(heads, d_h, d)  # (h, T, d)
    return HeadsSum(heads, concat, per_head, float((concat - per_head.sum(0)).abs().max()))
