"""The Online-softmax page's whole input, tile by tile (card 12): the tiled kernel at one block
size (tiles computed and skipped, the error against torch SDPA in float64) and across a ladder
of block sizes. Mask convention: boolean, True = may attend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attn_core.attention import attention
from attn_core.limits import LIMITS
from attn_core.masks import causal_mask
from attn_core.online import online_attention
from attn_core.oracle import SDPA_TOL, max_abs_diff, sdpa_reference

MAX_TILES = LIMITS.online_tiles


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
