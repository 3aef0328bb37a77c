"""What one head can select: the rank bound and the d_k = 1 head (card 10).

    QKᵀ = Σ_{c=1}^{d_k} Q_{·c} K_{·c}ᵀ  ⇒  rank(S) ≤ d_k           (a sum of d_k outer products)
    log P = S − ℓ 1ᵀ (ℓ = row logsumexps)  ⇒  rank(log P) ≤ d_k + 1, while P can have rank T
    d_k = 1:  s_ij = q_i k_j  ⇒  argmax_j s_ij ∈ {argmax_j k_j, argmin_j k_j}

No mask: every query sees every key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.attention import stable_softmax
from attn_core.limits import THEORY, check_range
from attn_core.oracle import RANK_EPS
from attn_core.theory.scaling import F64, check_d_k, generator


def numerical_rank(singular_values: torch.Tensor, shape: tuple[int, int]) -> int:
    """Singular values above max(shape) · σ_max · 2^-53 (below that is float64 rounding)."""
    cutoff = max(shape) * float(singular_values.max()) * RANK_EPS
    return int((singular_values > cutoff).sum())


@dataclass(frozen=True)
class RankStudy:
    """Singular values (descending) and numerical ranks of S, P and log P for one random head."""

    T: int
    d_k: int
    singular_values: dict[str, torch.Tensor]  # "S", "P", "log P" -> (T,)
    ranks: dict[str, int]
    bounds: dict[str, int]  # the card's bound for each: d_k, T, d_k + 1


def rank_study(T: int, d_k: int, seed: int = 0) -> RankStudy:
    """Q, K ~ N(0, I) of shapes (T, d_k); S = QKᵀ/√d_k, P = softmax(S), log P (float64)."""
    check_range("T", T, 2, THEORY.max_tokens)
    check_d_k(d_k)
    g = generator(seed)
    Q, K = torch.randn(2, T, d_k, generator=g, dtype=F64)
    S = Q @ K.T / math.sqrt(d_k)  # (T, T)
    P = stable_softmax(S)
    log_P = S - torch.logsumexp(S, dim=-1, keepdim=True)
    mats = {"S": S, "P": P, "log P": log_P}
    sv = {name: torch.linalg.svdvals(m) for name, m in mats.items()}
    ranks = {name: numerical_rank(s, (T, T)) for name, s in sv.items()}
    return RankStudy(T, d_k, sv, ranks, {"S": min(d_k, T), "P": T, "log P": min(d_k + 1, T)})


@dataclass(frozen=True)
class OneDimHead:
    """d_k = 1 over many random instances: which keys ever win a query."""

    trials: int
    T: int
    extreme_share: float  # share of trials where every query's top key is argmax k or argmin k
    most_distinct: int  # the most distinct top keys seen in any trial (≤ 2)
    distinct_counts: torch.Tensor  # (trials,) distinct top keys per trial
    example_q: torch.Tensor  # (T,) one instance: queries
    example_k: torch.Tensor  # (T,) its keys
    example_top: torch.Tensor  # (T,) each query's top key


def one_dim_head(trials: int = 2000, T: int = 16, seed: int = 0) -> OneDimHead:
    """`trials` instances of T scalar queries and keys ~ N(0, 1); s_ij = q_i k_j; top key per row."""
    check_range("trials", trials, 1, THEORY.max_trials)
    check_range("T", T, 2, THEORY.max_tokens)
    if trials * T * T > THEORY.max_entries:
        raise ValueError(
            f"{trials:,} trials × T² = {T * T:,} is over the cap of {THEORY.max_entries:,} scores"
        )
    g = generator(seed)
    q, k = torch.randn(2, trials, T, generator=g, dtype=F64)
    top = (q.unsqueeze(-1) * k.unsqueeze(-2)).argmax(-1)  # (trials, T)
    extremes = torch.stack([k.argmax(-1), k.argmin(-1)], -1)  # (trials, 2)
    is_extreme = (top.unsqueeze(-1) == extremes.unsqueeze(-2)).any(-1).all(-1)  # (trials,)
    distinct = torch.tensor([len(set(row.tolist())) for row in top])
    return OneDimHead(
        trials, T, float(is_extreme.double().mean()), int(distinct.max()), distinct, q[0], k[0], top[0]
    )


@dataclass(frozen=True)
class CircleHead:
    """d_k = 2 with keys on a circle: the top key of queries pointing every way."""

    key_angles: torch.Tensor  # (n,) radians
    query_angles: torch.Tensor  # (m,)
    top_2d: torch.Tensor  # (m,) top key per query at d_k = 2
    top_1d: torch.Tensor  # (m,) top key when only the first coordinate is kept (a d_k = 1 head)
    selectable_2d: int  # distinct keys some query selects at d_k = 2 (all n)
    selectable_1d: int  # … at d_k = 1 (2)


def circle_head(n_keys: int = 12, n_queries: int = 360) -> CircleHead:
    """Keys at angles 2πj/n on the unit circle; queries at m evenly spaced angles (offset by half a
    step so no query is equidistant from two keys)."""
    check_range("keys", n_keys, 2, THEORY.max_tokens)
    check_range("queries", n_queries, n_keys, THEORY.max_points)
    ka = 2 * math.pi * torch.arange(n_keys, dtype=F64) / n_keys
    qa = 2 * math.pi * (torch.arange(n_queries, dtype=F64) + 0.5) / n_queries
    K = torch.stack([ka.cos(), ka.sin()], -1)  # (n, 2)
    Q = torch.stack([qa.cos(), qa.sin()], -1)  # (m, 2)
    top_2d = (Q @ K.T).argmax(-1)
    top_1d = (Q[:, :1] @ K[:, :1].T).argmax(-1)
    return CircleHead(ka, qa, top_2d, top_1d, len(set(top_2d.tolist())), len(set(top_1d.tolist())))
