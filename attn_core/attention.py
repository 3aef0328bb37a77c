"""Scaled dot-product attention, the plain reference every other path is checked against.

O = softmax(Q Kᵀ · scale + M) V, with M = 0 where allowed and -inf where blocked (card 1).
Mask convention everywhere in attn_core: boolean, **True = may attend** (as torch SDPA).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class AttentionResult:
    """What a forward pass produces; every field keeps the leading (..., H) axes of q."""

    scores: torch.Tensor  # (..., Hq, L, S) scaled logits, -inf where blocked
    weights: torch.Tensor  # (..., Hq, L, S) softmax over keys; rows sum to 1
    output: torch.Tensor  # (..., Hq, L, d_v)
    scale: float


def default_scale(d_k: int) -> float:
    """1/sqrt(d_k): keeps Var(q·k · scale) = 1 for independent unit-variance q, k (card 3)."""
    return 1.0 / math.sqrt(d_k)


def check_shapes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> int:
    """Validate the roles of q (..., Hq, L, d_k), k (..., Hkv, S, d_k), v (..., Hkv, S, d_v).

    Returns the GQA group size Hq // Hkv. Raises ValueError naming what is wrong.
    """
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError("q, k and v need at least two axes: (..., length, width)")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"query width d_k={q.shape[-1]} differs from key width {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"{k.shape[-2]} keys but {v.shape[-2]} values: K and V lengths must match")
    if k.shape[-3:-2] != v.shape[-3:-2]:
        raise ValueError("K and V must have the same number of heads")
    if q.shape[-1] == 0:
        raise ValueError("d_k = 0: queries and keys have zero width")
    if k.shape[-2] == 0:
        raise ValueError("there are no keys (S = 0): nothing to attend to")
    if q.ndim < 3:
        return 1
    h_q, h_kv = q.shape[-3], k.shape[-3] if k.ndim >= 3 else 1
    if h_kv == 0 or h_q % h_kv != 0:
        raise ValueError(f"{h_q} query heads cannot share {h_kv} KV heads: Hq must be a multiple of Hkv")
    return h_q // h_kv


def expand_kv(x: torch.Tensor, group: int) -> torch.Tensor:
    """Repeat KV heads so query head h reads KV head h // group (GQA, as SDPA's enable_gqa)."""
    return x if group == 1 else x.repeat_interleave(group, dim=-3)


def masked_scores(
    q: torch.Tensor,
    k: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    scale: float | None = None,
) -> tuple[torch.Tensor, float]:
    """S = Q Kᵀ · scale with blocked pairs set to -inf; rejects fully masked rows."""
    scale = default_scale(q.shape[-1]) if scale is None else float(scale)
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., H, L, S)
    if allowed is not None:
        allowed = torch.as_tensor(allowed, dtype=torch.bool, device=scores.device)
        try:
            allowed = torch.broadcast_to(allowed, scores.shape)
        except RuntimeError as exc:
            raise ValueError(
                f"mask of shape {tuple(allowed.shape)} does not broadcast to scores {tuple(scores.shape)}"
            ) from exc
        empty = ~allowed.any(-1)
        if empty.any():
            rows = sorted({int(i) for i in empty.nonzero()[:, -1].tolist()})
            raise ValueError(
                f"query row(s) {rows[:8]} may attend to no key: a fully masked row has no softmax"
            )
        scores = scores.masked_fill(~allowed, -math.inf)
    return scores, scale


def stable_softmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """softmax(s) = e^{s - m} / Σ e^{s - m} with m the row max: nothing overflows (card 2)."""
    shifted = scores - scores.amax(dim, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim, keepdim=True)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    scale: float | None = None,
) -> AttentionResult:
    """softmax(Q Kᵀ · scale, masked) V.

    q: (..., Hq, L, d_k); k: (..., Hkv, S, d_k); v: (..., Hkv, S, d_v). Leading axes broadcast;
    Hq must be a multiple of Hkv (grouped-query attention; query head h reads KV head
    h // (Hq/Hkv)). ``allowed``: bool, broadcastable to (..., L, S), True = may attend.
    ``scale`` defaults to 1/sqrt(d_k). Raises ValueError on incompatible shapes or a fully
    masked row.
    """
    group = check_shapes(q, k, v)
    k, v = expand_kv(k, group), expand_kv(v, group)
    scores, scale = masked_scores(q, k, allowed, scale=scale)
    weights = stable_softmax(scores)  # (..., H, L, S)
    output = weights @ v  # (..., H, L, d_v)
    return AttentionResult(scores=scores, weights=weights, output=output, scale=scale)


def logsumexp(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """log Σ e^{s_j} = m + log Σ e^{s_j - m}: finite even for scores of 1000 (card 2)."""
    m = scores.amax(dim, keepdim=True)
    return (m + (scores - m).exp().sum(dim, keepdim=True).log()).squeeze(dim)
