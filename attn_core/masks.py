"""Mask factories. Every mask is boolean with **True = may attend** (SDPA's convention).

Query i of a block of L queries sits at absolute position i + (S - L) when the first S - L keys
are a cached prefix; that "bottom-right" alignment is the one a KV cache needs (card 6).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch

Align = Literal["bottom_right", "top_left"]


def _positions(L: int, S: int, align: Align) -> tuple[torch.Tensor, torch.Tensor]:
    if L < 0 or S < 0:
        raise ValueError("lengths must be non-negative")
    if align not in ("bottom_right", "top_left"):
        raise ValueError(f"align must be 'bottom_right' or 'top_left', not {align!r}")
    offset = S - L if align == "bottom_right" else 0
    i = torch.arange(L).unsqueeze(-1) + offset  # (L, 1) absolute query positions
    j = torch.arange(S).unsqueeze(0)  # (1, S) key positions
    return i, j


def causal_mask(L: int, S: int, align: Align = "bottom_right") -> torch.Tensor:
    """(L, S) mask: query i sees key j when j <= i + S - L (bottom_right, cached prefix) or
    j <= i (top_left, = SDPA ``is_causal=True``)."""
    i, j = _positions(L, S, align)
    return j <= i


def sliding_window_mask(L: int, S: int, window: int, align: Align = "bottom_right") -> torch.Tensor:
    """(L, S) causal mask that also drops keys more than ``window - 1`` positions back:
    query at position p sees keys p - window + 1 … p (Mistral-style local attention)."""
    if window < 1:
        raise ValueError(f"window must be at least 1, not {window}")
    i, j = _positions(L, S, align)
    return (j <= i) & (j > i - window)


def padding_mask(lengths: Sequence[int] | torch.Tensor, S: int) -> torch.Tensor:
    """(B, 1, 1, S) mask: in batch row b only the first lengths[b] keys are real tokens.

    Broadcasts against scores (B, H, L, S)."""
    lengths = torch.as_tensor(lengths, dtype=torch.long).reshape(-1)
    if (lengths < 1).any() or (lengths > S).any():
        raise ValueError(f"every length must lie in 1…{S}, got {lengths.tolist()}")
    return (torch.arange(S) < lengths.unsqueeze(-1)).reshape(-1, 1, 1, S)


def allowed_fraction(mask: torch.Tensor) -> float:
    """Share of (query, key) pairs a mask allows; causal T×T gives (T + 1) / 2T."""
    return float(mask.to(torch.float64).mean())
