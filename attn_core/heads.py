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
- rank-1 distance of the residual stream: ‖X − 1x̄ᵀ‖_F / ‖X‖_F (card 17's r, made scale-free);
- where a head looks, on a square causal pattern (query t and key j are positions): mean
  attention distance Σ_j P[t, j](t − j), the share inside a local band of w tokens (t − j < w),
  the mass by distance in log₂ bins, each over rows t ≥ 1; and the per-row values behind every
  score (``row_*``), binned by query position (``position_profile``) to show *where* in the
  sequence a head does its job (a head can read t − 1 early on and stop later).

A pattern of one position (T = 1) has only row 0; the sink share and entropy then read that row
(share 1, entropy 0) instead of averaging over no rows. torch only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

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


# --------------------------------------------------------------------- per row, and where it looks


def row_sink(P: torch.Tensor) -> torch.Tensor:
    """P[t, 0] for every row t. [..., q, k] → [..., q]"""
    return P[..., 0]


def row_previous(P: torch.Tensor) -> torch.Tensor:
    """P[t, t − 1] for every row t (0 for row 0, which has no previous token). [..., q, k] → [..., q]"""
    return torch.nn.functional.pad(P.diagonal(offset=-1, dim1=-2, dim2=-1), (1, 0))


def distances(T: int) -> torch.Tensor:
    """[T, T] of t − j (query t, key j): how far back key j lies; negative above the diagonal."""
    t = torch.arange(T)
    return t[:, None] - t[None, :]


def row_distance(P: torch.Tensor) -> torch.Tensor:
    """Σ_j P[t, j](t − j): how far back row t reads on average (tokens). [..., T, T] → [..., T]"""
    return (P * distances(P.shape[-1]).to(P.dtype)).sum(-1)


def row_local(P: torch.Tensor, band: int) -> torch.Tensor:
    """Σ_{0 ≤ t − j < band} P[t, j]: row t's weight on its last ``band`` tokens. [..., T, T] → [..., T]"""
    dist = distances(P.shape[-1])
    return (P * ((dist >= 0) & (dist < band)).to(P.dtype)).sum(-1)


def _after_first(values: torch.Tensor) -> torch.Tensor:
    """values[..., 1:], the rows t ≥ 1; values itself when there is the single row 0."""
    return values[..., 1:] if values.shape[-1] > 1 else values


def mean_distance(P: torch.Tensor) -> torch.Tensor:
    """mean over t ≥ 1 of Σ_j P[t, j](t − j) (tokens): 1 for a previous-token head, T/2 for a sink."""
    return _after_first(row_distance(P)).mean(-1)


def local_share(P: torch.Tensor, band: int) -> torch.Tensor:
    """mean over t ≥ 1 of the weight on keys t − band + 1 … t. [..., T, T] → [...]"""
    return _after_first(row_local(P, band)).mean(-1)


def distance_edges(T: int) -> list[int]:
    """Log₂ bins of t − j over 0 … T − 1: [0, 1, 2, 4, 8, …, T]; bin b is [edge_b, edge_{b+1}):
    the token itself, t − 1, 2–3 back, 4–7 back, …"""
    edges = [0, 1]
    while edges[-1] < T:
        edges.append(min(2 * edges[-1], T))
    return edges


def distance_mass(P: torch.Tensor, edges: list[int]) -> torch.Tensor:
    """Mass at each distance bin [edge_b, edge_{b+1}), summed over rows t ≥ 1 and divided by
    their number T − 1, so the bins sum to 1. [..., T, T] → [..., len(edges) − 1]"""
    dist, rows = distances(P.shape[-1]), _rows_after_first(P)
    dist = dist[-rows.shape[-2] :]  # the rows kept
    mass = [(rows * ((dist >= lo) & (dist < hi)).to(P.dtype)).sum((-2, -1)) for lo, hi in pairwise(edges)]
    return torch.stack(mass, -1) / rows.shape[-2]


def position_edges(T: int, bins: int) -> list[int]:
    """Query rows 1 … T − 1 cut into at most ``bins`` runs of equal width (the last may be
    shorter): [1, 1 + w, 1 + 2w, …, T] with w = ⌈(T − 1) / bins⌉."""
    width = max(1, -(-(T - 1) // max(bins, 1)))
    return [*range(1, T, width), T] if T > 1 else [0, 1]


def position_profile(values: torch.Tensor, edges: list[int]) -> torch.Tensor:
    """The mean of a per-row value over each run of rows [edge_b, edge_{b+1}). [..., T] → [..., bins]"""
    c = torch.nn.functional.pad(values.to(torch.float64).cumsum(-1), (1, 0))  # c[t] = Σ_{u < t}
    lo, hi = torch.tensor(edges[:-1]), torch.tensor(edges[1:])
    return (c[..., hi] - c[..., lo]) / (hi - lo).to(torch.float64)
