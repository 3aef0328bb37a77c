"""The Online-softmax page's one query row (cards 12 and 15): the (m, ℓ, u) recurrence walked
block by block, and split-K's two partial states merged, each beside torch SDPA in float64.

Both read the same ``HeadRow``: one row of one head (batch 0) of the page's input, validated once,
with its scaled, masked scores and the values that head reads. Mask convention: boolean,
True = may attend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.attention import attention, check_shapes, expand_kv
from attn_core.dtypes import DTYPES as TRACE_DTYPES
from attn_core.online import (
    MergeResult,
    OnlineTrace,
    PartialState,
    merge_partials,
    online_softmax_trace,
    partial_state,
)
from attn_core.oracle import MATCH_TOL, TRACE_TOL, max_abs_diff, sdpa_reference
from attn_core.slips.online import SLIPS


@dataclass(frozen=True)
class HeadRow:
    """Query ``row`` of ``head`` (batch 0): q (1, Hq, L, d_k), k (1, Hkv, S, d_k) and v
    (1, Hkv, S, d_v) as given, ``allowed`` broadcastable to (1, Hq, L, S), True = may attend."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    allowed: torch.Tensor | None
    head: int
    row: int
    scores: torch.Tensor  # (L, S) float64 scaled, masked scores of the head (the heatmap)
    values: torch.Tensor  # (S, d_v) the head's values, GQA-expanded
    scale: float  # the scale the scores were computed with
    group: int  # query heads per KV head

    def direct(self, logit_scale: float = 1.0) -> torch.Tensor:
        """The oracle for this row: torch SDPA in float64 with the scale × ``logit_scale``. (d_v,)"""
        k = expand_kv(self.k, self.group)  # (1, Hq, S, d_k)
        mask_row = None
        if self.allowed is not None:
            shape = (*self.q.shape[:-1], k.shape[-2])  # (1, Hq, L, S)
            mask_row = torch.broadcast_to(torch.as_tensor(self.allowed, dtype=torch.bool), shape)
            mask_row = mask_row[:1, self.head : self.head + 1, self.row : self.row + 1]  # (1, 1, 1, S)
        q_row = self.q[:1, self.head : self.head + 1, self.row : self.row + 1]  # (1, 1, 1, d_k)
        k_head = k[:1, self.head : self.head + 1]  # (1, 1, S, d_k)
        scale = self.scale * logit_scale
        return sdpa_reference(q_row, k_head, self.values[None, None], mask_row, scale=scale)[0, 0, 0]


def head_row(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    head: int = 0,
    row: int = 0,
    scale: float | None = None,
) -> HeadRow:
    """Pick query ``row`` of ``head`` (batch 0); shapes and mask as ``HeadRow``. Raises ValueError
    for shapes ``attention`` refuses, a fully masked row, or a head or row outside the input."""
    full = attention(q, k, v, allowed, scale=scale)  # validates shapes and fully masked rows
    H, L = full.scores.shape[-3], full.scores.shape[-2]
    if not (0 <= head < H and 0 <= row < L):
        raise ValueError(f"head {head} / row {row} outside {H} heads × {L} rows")
    group = check_shapes(q, k, v)
    values = expand_kv(v, group)[0, head]  # (S, d_v)
    return HeadRow(q, k, v, allowed, head, row, full.scores[0, head], values, full.scale, group)


# ----------------------------------------------------------------------------------------------
# One row, step by step
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowWalk:
    """One query row of one head, walked block by block, beside its direct answer."""

    scores: torch.Tensor  # (L, S) float64 scaled, masked scores of the head (the heatmap)
    head: int
    row: int
    block_size: int
    dtype: str  # dtype the walk ran in
    logit_scale: float  # the row's scores were multiplied by this before the walk
    trace: OnlineTrace
    direct: torch.Tensor  # (d_v,) float64 torch SDPA for this row (the oracle)
    max_abs_diff: float  # max |u_N/ℓ_N − direct|; inf when the walk produced inf/NaN
    tolerance: float  # TRACE_TOL[dtype]

    @property
    def query_block(self) -> tuple[int, int]:
        """Rows of the query tile that holds this row: [start, stop)."""
        start = self.row // self.block_size * self.block_size
        return start, min(start + self.block_size, self.scores.shape[0])


def walk_row(
    chosen: HeadRow,
    *,
    block_size: int = 1,
    slip: str | None = None,
    dtype: str = "float64",
    logit_scale: float = 1.0,
) -> RowWalk:
    """The step-through of the page: the chosen row through the (m, ℓ, u) recurrence in blocks of
    ``block_size`` keys, in ``dtype``, optionally with one of ``SLIPS``. ``logit_scale``
    multiplies the row's scores (a sharper row: the fp16 overflow of the no-max slip needs a score
    above 11.09). The oracle is torch SDPA in float64 with the scale multiplied by ``logit_scale``.
    """
    if dtype not in TRACE_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(TRACE_DTYPES)}, not {dtype!r}")
    if slip is not None and slip not in SLIPS:
        raise ValueError(f"unknown slip {slip!r}; choose one of {', '.join(SLIPS)}")
    if not (math.isfinite(logit_scale) and logit_scale > 0):
        raise ValueError(f"the logit scale must be a positive number, got {logit_scale}")
    if block_size < 1:
        raise ValueError(f"block size must be at least 1, got {block_size}")
    walk = online_softmax_trace if slip is None else SLIPS[slip].fn
    row_scores = chosen.scores[chosen.row] * logit_scale  # (S,)
    trace = walk(row_scores.to(TRACE_DTYPES[dtype]), chosen.values.to(TRACE_DTYPES[dtype]), block_size)
    direct = chosen.direct(logit_scale)
    return RowWalk(
        scores=chosen.scores,
        head=chosen.head,
        row=chosen.row,
        block_size=block_size,
        dtype=dtype,
        logit_scale=logit_scale,
        trace=trace,
        direct=direct,
        max_abs_diff=max_abs_diff(trace.output.to(torch.float64), direct),
        tolerance=TRACE_TOL[dtype],
    )


# ----------------------------------------------------------------------------------------------
# Merging partial states: Drill 11, and split-K for one row
# ----------------------------------------------------------------------------------------------


def drill_11() -> MergeResult:
    """Drill 11: (m, ℓ, u) = (3, 1.1353, 2.1353) ⊕ (5, 1.0498, 4.1494) → o = 3.6881, lse 5.1852."""
    return merge_partials(PartialState(3.0, 1.1353, 2.1353), PartialState(5.0, 1.0498, 4.1494))


@dataclass(frozen=True)
class SplitMerge:
    """Keys split at ``split``: partial a = keys [0, split), b = [split, S), merged vs direct."""

    split: int
    a: PartialState
    b: PartialState
    merged: MergeResult
    direct: torch.Tensor  # (..., d_v) softmax(s) @ V over all keys at once
    max_abs_error: float  # max |merged − direct|
    tolerance: float = MATCH_TOL  # two float64 sums of the same row, in different orders

    keys: int = 0  # S

    def rows(self) -> list[dict]:
        """One row per partial (a, b, merged) of a one-row split: its key range [start, stop),
        m, ℓ, u and u / ℓ (None for a half with no allowed key: ℓ = 0)."""
        named = (("a", 0, self.split, self.a), ("b", self.split, self.keys, self.b))
        named += (("merged", 0, self.keys, self.merged.state),)
        return [
            {
                "partial": name,
                "start": start,
                "stop": stop,
                "m": float(p.m),
                "ℓ": float(p.l),
                "u": p.u.tolist(),
                "u / ℓ": p.output.tolist() if float(p.l) > 0 else None,
            }
            for name, start, stop, p in named
        ]


def split_merge(scores: torch.Tensor, values: torch.Tensor, split: int) -> SplitMerge:
    """Split the keys at ``split`` (0 < split < S), compute each half's partial state, merge,
    and compare with softmax over all keys. scores (..., S), values (..., S, d_v)."""
    S = scores.shape[-1]
    if not 0 < split < S:
        raise ValueError(f"split must lie strictly between 0 and S = {S}, got {split}")
    a = partial_state(scores[..., :split], values[..., :split, :])
    b = partial_state(scores[..., split:], values[..., split:, :])
    merged = merge_partials(a, b)
    direct = (torch.softmax(scores, -1).unsqueeze(-2) @ values).squeeze(-2)  # (..., d_v)
    err = float((merged.output - direct).abs().max())
    return SplitMerge(split=split, a=a, b=b, merged=merged, direct=direct, max_abs_error=err, keys=S)


def row_split_merge(chosen: HeadRow, split: int) -> SplitMerge:
    """Split-K for the chosen row: keys [0, split) on "device a", the rest on "device b", partial
    states merged and compared with softmax over all keys; a half with no allowed key is the
    empty state and merges as a no-op."""
    return split_merge(chosen.scores[chosen.row], chosen.values, split)
