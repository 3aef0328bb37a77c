"""What a head does, read off its attention pattern: one set of head metrics for every model.

The capture record (TransformerLens's vocabulary): an attention pattern ``P`` with shape
``[..., query_pos, key_pos]`` — for a layer ``[batch, head, query_pos, key_pos]`` — whose rows are
the queries' softmax weights under a causal mask (True = may attend), and, for the residual
stream, ``x`` with shape ``[..., pos, d_model]``. The tiny trained model (``attn_core.trained``)
and a Hugging Face model (``attn_core.hf``) both hand their captures to these functions, so a
score means the same thing on both pages.

- previous-token score: mean of P[t, t−1] over t ≥ 1 (1 for a head that always reads t − 1);
- induction score, on a sequence repeated with period n: mean of P[t, t − n + 1] over the second
  copy (1 for a head that reads the token *after* the current token's earlier occurrence;
  Olsson et al. 2022);
- sink share: mean of P[t, 0] over t ≥ 1 (card 18; row 0 is excluded, where the causal mask
  forces all weight onto token 0 and says nothing about what the head learned);
- entropy: mean of H = −Σ p ln p (nats) over rows t ≥ 1 (card 17's one-hot end is H = 0);
- rank-1 distance of the residual stream: ‖X − 1x̄ᵀ‖_F / ‖X‖_F (card 17's r, made scale-free).

A pattern of one position (T = 1) has only row 0; the sink share and entropy then read that row
(share 1, entropy 0) instead of averaging over no rows. torch only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.stats import row_entropy


def _rows_after_first(P: torch.Tensor) -> torch.Tensor:
    """P[..., 1:, :], the rows t ≥ 1; P itself when it has the single row 0."""
    return P[..., 1:, :] if P.shape[-2] > 1 else P


def previous_token_score(P: torch.Tensor) -> torch.Tensor:
    """mean_t P[t, t−1] over t = 1…T−1. P [..., query_pos, key_pos] → [...]."""
    return P.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)


def induction_score(P: torch.Tensor, period: int) -> torch.Tensor:
    """mean P[t, t − period + 1] over t = period + 1 … T − 1. P [..., query_pos, key_pos] → [...].

    For ^ x₁…x_n x₁…x_n (T = 2n, period n): query t holds x_{t−n}, whose earlier occurrence sits
    at t − n and the token after it at t − n + 1."""
    T = P.shape[-1]
    if not 1 <= period <= T - 2:
        raise ValueError(f"period {period} leaves no repeated query in {T} positions")
    diag = P.diagonal(offset=-(period - 1), dim1=-2, dim2=-1)  # P[i + period − 1, i], i = 0…
    return diag[..., 2:].mean(-1)  # i ≥ 2 ⇔ t ≥ period + 1


def sink_share(P: torch.Tensor) -> torch.Tensor:
    """mean_t P[t, 0] over t = 1…T−1: the weight parked on the first token. [..., q, k] → [...]"""
    return _rows_after_first(P)[..., 0].mean(-1)


def mean_entropy(P: torch.Tensor) -> torch.Tensor:
    """mean over rows t = 1…T−1 of −Σ_j P[t, j] ln P[t, j] (nats). [..., q, k] → [...]"""
    return row_entropy(_rows_after_first(P)).mean(-1)


def uniform_entropy(T: int) -> float:
    """Mean over rows t = 1…T−1 of ln(t + 1): the entropy of a causal head that spreads evenly
    (the most any causal head can have); 0 for T = 1."""
    return sum(math.log(t + 1) for t in range(1, T)) / max(T - 1, 1)


def rank_one_distance(x: torch.Tensor) -> torch.Tensor:
    """‖X − 1 x̄ᵀ‖_F / ‖X‖_F per sequence: how far the tokens are from all being identical
    (card 17's r, made scale-free). x [..., pos, d_model] → [...]."""
    residual = x - x.mean(-2, keepdim=True)  # R = X − 1 x̄ᵀ
    return residual.flatten(-2).norm(dim=-1) / x.flatten(-2).norm(dim=-1)


@dataclass(frozen=True)
class HeadMetrics:
    """Every metric of a capture, one value per leading index (e.g. [batch, head])."""

    previous_token: torch.Tensor  # [...]
    sink: torch.Tensor  # [...]
    entropy: torch.Tensor  # [...] nats
    induction: torch.Tensor | None  # [...]; None without a repeat period


def head_metrics(P: torch.Tensor, period: int | None = None) -> HeadMetrics:
    """The metrics above on one capture P [..., query_pos, key_pos]; the induction score only
    when the sequence repeats with a known ``period``."""
    return HeadMetrics(
        previous_token=previous_token_score(P),
        sink=sink_share(P),
        entropy=mean_entropy(P),
        induction=None if period is None else induction_score(P, period),
    )
