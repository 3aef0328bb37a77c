"""Mask factories. Every mask is boolean with **True = may attend** (SDPA's convention).

Query i of a block of L queries sits at absolute position i + (S - L) when the first S - L keys
are a cached prefix; that "bottom-right" alignment is the one a KV cache needs (card 6).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
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


def _bottom_right_positions(L: int, S: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions of L queries at the end of S keys; L > S has no such placement."""
    if L < 1 or S < 1:
        raise ValueError(f"L and S must be at least 1, got L={L}, S={S}")
    if L > S:
        raise ValueError(f"L = {L} queries cannot sit at the end of S = {S} keys: need L ≤ S")
    return _positions(L, S, "bottom_right")


def document_mask(L: int, S: int, doc_lengths: Sequence[int], *, causal: bool = True) -> torch.Tensor:
    """(L, S) block-diagonal mask for packed documents: query i sees key j only when both lie in the
    same document (and j ≤ i when ``causal``). ``doc_lengths`` must add up to S.

    This is how several short sequences share one row of a batch without seeing each other."""
    lengths = [int(n) for n in doc_lengths]
    if not lengths or any(n < 1 for n in lengths):
        raise ValueError(f"document lengths must be positive integers, got {list(doc_lengths)}")
    if sum(lengths) != S:
        raise ValueError(f"document lengths {lengths} add up to {sum(lengths)}, not to S = {S}")
    doc_id = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))  # (S,)
    i, j = _bottom_right_positions(L, S)
    same = doc_id[i] == doc_id[j]  # (L, S)
    return same & (j <= i) if causal else same


def prefix_lm_mask(L: int, S: int, prefix: int) -> torch.Tensor:
    """(L, S) prefix-LM mask: the first ``prefix`` positions see each other both ways (the prompt is
    encoded bidirectionally); every later position is causal. Allowed iff j ≤ i or j < prefix."""
    if not 0 <= prefix <= S:
        raise ValueError(f"prefix must lie in 0…{S}, got {prefix}")
    i, j = _bottom_right_positions(L, S)
    return (j <= i) | (j < prefix)


class MaskKind(StrEnum):
    """Every mask a page offers; the value is the label shown, a link keeps the member's name, lower-cased."""

    NONE = "none"
    CAUSAL_TOP_LEFT = "causal (top-left)"
    CAUSAL_BOTTOM_RIGHT = "causal (bottom-right, cached prefix)"
    SLIDING_WINDOW = "sliding window"
    PADDING = "padding"
    DOCUMENT = "document (block-diagonal)"
    PREFIX_LM = "prefix-LM"


def build_mask(
    kind: MaskKind | str,
    L: int,
    S: int,
    *,
    window: int = 3,
    valid_keys: int | None = None,
    doc_lengths: Sequence[int] = (),
    prefix: int = 0,
) -> torch.Tensor | None:
    """The (L, S) allowed mask (True = may attend) of a kind, or None for `MaskKind.NONE`.

    The one dispatch from a kind to its factory; only the keyword of that kind is read."""
    if kind not in MaskKind.__members__.values():
        raise ValueError(f"unknown mask kind {kind!r}; choose one of {', '.join(MaskKind)}")
    kind = MaskKind(kind)
    if kind is MaskKind.NONE:
        return None
    if kind is MaskKind.CAUSAL_TOP_LEFT:
        return causal_mask(L, S, align="top_left")
    if kind is MaskKind.CAUSAL_BOTTOM_RIGHT:
        return causal_mask(L, S, align="bottom_right")
    if kind is MaskKind.SLIDING_WINDOW:
        return sliding_window_mask(L, S, window)
    if kind is MaskKind.PADDING:
        return padding_mask([S if valid_keys is None else valid_keys], S).reshape(1, S).expand(L, S)
    if kind is MaskKind.DOCUMENT:
        return document_mask(L, S, doc_lengths)
    return prefix_lm_mask(L, S, prefix)


def allowed_fraction(mask: torch.Tensor) -> float:
    """Share of (query, key) pairs a mask allows; causal T×T gives (T + 1) / 2T."""
    return float(mask.to(torch.float64).mean())
