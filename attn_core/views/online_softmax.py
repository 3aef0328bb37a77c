"""What the Online-softmax page shows, one call per section (cards 2, 12 and 15).

Each section runs the code of ``attn_core.online`` (the one-row recurrence, the tiled kernel, the
merge), its slips or the precision study on the page's input and sets it beside an independent
oracle (torch SDPA in float64, plain ``attention``, ``torch.softmax``), with the tolerance from
``attn_core.oracle``. Mask convention: boolean, True = may attend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import torch

from attn_core.attention import attention, check_shapes, expand_kv
from attn_core.cost.units import format_flops
from attn_core.dtypes import DTYPES as TRACE_DTYPES
from attn_core.dtypes import UNIT_ROUNDOFF
from attn_core.experiments.precision import precision_study
from attn_core.limits import LIMITS
from attn_core.masks import causal_mask
from attn_core.online import (
    MergeResult,
    OnlineTrace,
    PartialState,
    merge_partials,
    online_attention,
    online_softmax_trace,
    partial_state,
    tile_step,
)
from attn_core.oracle import MATCH_TOL, SDPA_TOL, TRACE_TOL, max_abs_diff, sdpa_reference
from attn_core.slips.online import SLIPS
from attn_core.views.inputs import QKV, InputKind

__all__ = [  # what the page reads (the page import rule: tests/pages/test_page_shape.py)
    "CODE",
    "MAX_TILES",
    "NEEDS_QKV",
    "QKV",
    "SLIPS",
    "TRACE_DTYPES",
    "OnlineView",
    "PrecisionView",
    "RowWalk",
    "Section",
    "drill_11",
    "format_flops",
    "precision_view",
    "smallest_block",
    "view",
]

MAX_TILES = LIMITS.online_tiles
PRECISION_T = (64, 256, 1024, 4096)  # keys per row of the precision section: 4 × 6 runs, each 16 rows, d = 64


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


def _check_head_row(scores: torch.Tensor, head: int, row: int) -> None:
    H, L = scores.shape[-3], scores.shape[-2]
    if not (0 <= head < H and 0 <= row < L):
        raise ValueError(f"head {head} / row {row} outside {H} heads × {L} rows")


def _sdpa_row(q, k, values, allowed, head: int, row: int, scale: float) -> torch.Tensor:
    """The oracle for one row: torch SDPA in float64 on query ``row`` of ``head`` (batch 0).
    k (1, Hq, S, d_k) already GQA-expanded; values (S, d_v) of that head. Returns (d_v,)."""
    mask_row = None
    if allowed is not None:
        shape = (*q.shape[:-1], k.shape[-2])  # (1, Hq, L, S)
        mask_row = torch.broadcast_to(torch.as_tensor(allowed, dtype=torch.bool), shape)
        mask_row = mask_row[:1, head : head + 1, row : row + 1]  # (1, 1, 1, S)
    q_row, k_head = q[:1, head : head + 1, row : row + 1], k[:1, head : head + 1]
    return sdpa_reference(q_row, k_head, values[None, None], mask_row, scale=scale)[0, 0, 0]


def walk_row(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    head: int = 0,
    row: int = 0,
    block_size: int = 1,
    scale: float | None = None,
    slip: str | None = None,
    dtype: str = "float64",
    logit_scale: float = 1.0,
) -> RowWalk:
    """The step-through of the page: query ``row`` of ``head`` (batch 0) through the (m, ℓ, u)
    recurrence in blocks of ``block_size`` keys, in ``dtype``, optionally with one of ``SLIPS``.

    q (1, Hq, L, d_k), k (1, Hkv, S, d_k), v (1, Hkv, S, d_v); allowed broadcastable to
    (1, Hq, L, S), True = may attend. ``logit_scale`` multiplies the row's scores (a sharper
    row: the fp16 overflow of the no-max slip needs a score above 11.09). The oracle is torch
    SDPA in float64 with the scale multiplied by ``logit_scale``.
    """
    if dtype not in TRACE_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(TRACE_DTYPES)}, not {dtype!r}")
    if slip is not None and slip not in SLIPS:
        raise ValueError(f"unknown slip {slip!r}; choose one of {', '.join(SLIPS)}")
    if not (math.isfinite(logit_scale) and logit_scale > 0):
        raise ValueError(f"the logit scale must be a positive number, got {logit_scale}")
    full = attention(q, k, v, allowed, scale=scale)  # validates shapes and fully masked rows
    _check_head_row(full.scores, head, row)
    if block_size < 1:
        raise ValueError(f"block size must be at least 1, got {block_size}")
    group = check_shapes(q, k, v)
    scores = full.scores[0, head]  # (L, S)
    values = expand_kv(v, group)[0, head]  # (S, d_v)
    walk = online_softmax_trace if slip is None else SLIPS[slip].fn
    trace = walk(
        (scores[row] * logit_scale).to(TRACE_DTYPES[dtype]), values.to(TRACE_DTYPES[dtype]), block_size
    )

    direct = _sdpa_row(q, expand_kv(k, group), values, allowed, head, row, full.scale * logit_scale)
    return RowWalk(
        scores=scores,
        head=head,
        row=row,
        block_size=block_size,
        dtype=dtype,
        logit_scale=logit_scale,
        trace=trace,
        direct=direct,
        max_abs_diff=max_abs_diff(trace.output.to(torch.float64), direct),
        tolerance=TRACE_TOL[dtype],
    )


# ----------------------------------------------------------------------------------------------
# The whole input, tile by tile, at one block size and across a ladder of them
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockSweepRow:
    block_size: int
    tiles_computed: int
    tiles_skipped: int
    tiles_total: int
    max_abs_error: float  # max |online - attention| over the whole output, same dtype


def block_size_sweep(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    block_sizes: Sequence[int],
    causal: bool = False,
    scale: float | None = None,
) -> tuple[BlockSweepRow, ...]:
    """For each block size (queries and keys alike): tiles computed/skipped and the max error
    against plain ``attention`` in the same dtype. Shapes and mask as ``online_attention``."""
    if causal:
        cm = causal_mask(q.shape[-2], k.shape[-2]).to(q.device)  # (L, S), bottom-right
        mask = cm if allowed is None else (torch.as_tensor(allowed, dtype=torch.bool) & cm)
    else:
        mask = allowed
    reference = attention(q, k, v, mask, scale=scale).output
    rows = []
    for b in block_sizes:
        r = online_attention(q, k, v, mask, scale=scale, block_size=int(b), query_block_size=int(b))
        err = float((r.output - reference).abs().max())
        rows.append(BlockSweepRow(int(b), r.tiles_computed, r.tiles_skipped, r.tiles_total, err))
    return tuple(rows)


@dataclass(frozen=True)
class TileView:
    """The whole input through the tiled kernel at one block size."""

    block_size: int
    computed: torch.Tensor  # (n_q, n_k) bool, True = the tile ran
    tiles_computed: int
    tiles_skipped: int
    tiles_total: int
    max_abs_diff: float  # vs torch SDPA (float64)
    tolerance: float  # SDPA_TOL: both sides float64, summation order differs
    lse_max_abs_diff: float  # lse vs torch.logsumexp of the masked scores
    sweep: tuple[BlockSweepRow, ...]  # error and tiles at every block size of the ladder


def tile_count(L: int, S: int, block_size: int) -> int:
    """⌈L/b⌉·⌈S/b⌉ square tiles of b queries × b keys."""
    return -(-L // block_size) * -(-S // block_size)


def smallest_block(L: int, S: int, max_tiles: int = MAX_TILES) -> int:
    """The smallest block size whose tile count stays within ``max_tiles``."""
    return next(b for b in range(1, max(L, S) + 1) if tile_count(L, S, b) <= max_tiles)


def tile_view(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    block_size: int,
    scale: float | None = None,
    max_tiles: int = MAX_TILES,
) -> TileView:
    """Run ``online_attention`` at ``block_size`` (square tiles) and at a ladder of block sizes
    (1, 2, 4, … and S) capped at ``max_tiles`` tiles each; compare with torch SDPA. Shapes and
    mask as ``online_attention``. Raises ValueError over the cap, naming the smallest size."""
    L, S = q.shape[-2], k.shape[-2]
    if block_size < 1:
        raise ValueError(f"block size must be at least 1, got {block_size}")
    if tile_count(L, S, block_size) > max_tiles:
        raise ValueError(
            f"block size {block_size} cuts {L} × {S} into {tile_count(L, S, block_size):,} tiles, over the "
            f"cap of {max_tiles:,} per rerun; choose a block size of at least {smallest_block(L, S, max_tiles)}"
        )
    r = online_attention(q, k, v, allowed, scale=scale, block_size=block_size, query_block_size=block_size)
    reference = sdpa_reference(q, k, v, allowed, scale=r.scale)
    scores = attention(q, k, v, allowed, scale=scale).scores
    computed = torch.zeros(-(-L // block_size), -(-S // block_size), dtype=torch.bool)
    for i, j in r.computed_tiles:
        computed[i, j] = True
    ladder = sorted({b for b in (1 << n for n in range(S.bit_length())) if b <= S} | {S, block_size})
    ladder = [b for b in ladder if tile_count(L, S, b) <= max_tiles]
    return TileView(
        block_size=block_size,
        computed=computed,
        tiles_computed=r.tiles_computed,
        tiles_skipped=r.tiles_skipped,
        tiles_total=r.tiles_total,
        max_abs_diff=max_abs_diff(r.output, reference),
        tolerance=SDPA_TOL,
        lse_max_abs_diff=max_abs_diff(r.lse, torch.logsumexp(scores, -1)),
        sweep=block_size_sweep(q, k, v, allowed, block_sizes=ladder, scale=scale),
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
            {"partial": name, "start": start, "stop": stop, "m": float(p.m), "ℓ": float(p.l),
             "u": p.u.tolist(), "u / ℓ": p.output.tolist() if float(p.l) > 0 else None}
            for name, start, stop, p in named
        ]  # fmt: skip


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


def row_split_merge(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    head: int = 0,
    row: int = 0,
    split: int = 1,
    scale: float | None = None,
) -> SplitMerge:
    """Split-K for one query row of one head (batch 0): keys [0, split) on "device a", the rest
    on "device b", partial states merged and compared with softmax over all keys. Shapes and
    mask as ``walk_row``; a half with no allowed key is the empty state and merges as a no-op."""
    full = attention(q, k, v, allowed, scale=scale)
    _check_head_row(full.scores, head, row)
    values = expand_kv(v, check_shapes(q, k, v))[0, head]  # (S, d_v)
    return split_merge(full.scores[0, head, row], values, split)


# ----------------------------------------------------------------------------------------------
# Precision per dtype (cards 2 and 15)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrecisionView:
    """The precision study as a table (one dict per run) and one error curve per (dtype, state)."""

    T_values: tuple[int, ...]
    rows: list[dict]  # T (keys), dtype, state in, relative error, error / unit roundoff, ...
    curves: dict[str, list[float]]  # "float16 (state in float32)" → relative error at each T


def precision_view(T_values: Sequence[int] = PRECISION_T) -> PrecisionView:
    """``precision_study`` at ``T_values``, each error also in units of its dtype's unit roundoff
    (≤ 1 means: no worse than rounding the output once)."""
    runs = precision_study(tuple(T_values))
    rows = [
        {
            "T (keys)": r.T,
            "dtype": r.dtype,
            "state in": r.dtype if r.accumulate == "input" else "float32",
            "relative error": r.rel_error,
            "error / unit roundoff": r.rel_error / UNIT_ROUNDOFF[r.dtype],
            "input rounding (abs.)": r.input_rounding_error,
            "finite": r.finite,
        }
        for r in runs
    ]
    curves: dict[str, list[float]] = {}
    for r in rows:
        curves.setdefault(f"{r['dtype']} (state in {r['state in']})", []).append(r["relative error"])
    return PrecisionView(tuple(T_values), rows, curves)


# -- what the page reads ------------------------------------------------------------------------
class Section(StrEnum):
    """The page's sections; the value is the label shown, a link keeps the member's name, lower-cased."""

    STEP = "Step through"
    TILES = "Tiles & block size"
    MERGE = "Merge (split-K)"
    PRECISION = "Precision"
    MEMORY = "Memory bill"


NEEDS_QKV = (Section.STEP, Section.TILES, Section.MERGE)  # the sections drawn from the shared input
CODE = tile_step  # what the page's "show the code" shows


def is_toy(qkv: QKV) -> bool:
    """The spec's toy row: the page narrates card 15's numbers for it."""
    return qkv.kind is InputKind.TOY


@dataclass(frozen=True)
class OnlineView:
    """The page's one view call: the sidebar's input, mask, head and row (``qkv`` None when the
    input is not valid: the sections that need it are not drawn); each section's part is
    computed on demand from them and the section's own controls."""

    qkv: QKV | None
    allowed: torch.Tensor | None
    head: int
    row: int

    @property
    def toy(self) -> bool:
        return self.qkv is not None and is_toy(self.qkv)

    def walk(self, block_size: int, dtype: str, logit_scale: float, slip: str | None = None) -> RowWalk:
        """The chosen row, walked block by block (with ``slip``: the slip's walk)."""
        q, k, v = self.qkv.q, self.qkv.k, self.qkv.v
        return walk_row(
            q,
            k,
            v,
            self.allowed,
            head=self.head,
            row=self.row,
            block_size=block_size,
            dtype=dtype,
            logit_scale=logit_scale,
            slip=slip,
        )

    def tiles(self, block_size: int) -> TileView:
        return tile_view(self.qkv.q, self.qkv.k, self.qkv.v, self.allowed, block_size=block_size)

    def merge(self, split: int) -> SplitMerge:
        q, k, v = self.qkv.q, self.qkv.k, self.qkv.v
        return row_split_merge(q, k, v, self.allowed, head=self.head, row=self.row, split=split)


def view(qkv: QKV | None, allowed: torch.Tensor | None, head: int, row: int) -> OnlineView:
    """The page's input as the sections read it."""
    return OnlineView(qkv, allowed, head, row)
