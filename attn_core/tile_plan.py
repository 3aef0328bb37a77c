"""The tile plan of the online-softmax kernel: which (query tile, key tile) pairs run (card 15).

The tiled kernel (``attn_core.online.online_attention``) cuts the (L, S) scores into tiles of
B_q queries × B_k keys. Before any arithmetic, the mask decides each tile's fate:

- no (query, key) pair of the tile may attend → the tile is skipped (never multiplied, never
  exponentiated); under a causal mask that is the upper triangle of tiles;
- every pair may attend → the tile runs with no -inf fill;
- otherwise it runs with its slice of the mask.

A plain bottom-right causal mask, or a causal sliding window of ``window`` keys (query p reads
p − window + 1 … p), is planned in closed form and never materialized. Mask convention: boolean,
True = may attend.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class TilePlan:
    """Tile (i, j) covers query rows [i·B_q, (i+1)·B_q) and keys [j·B_k, (j+1)·B_k), clipped."""

    L: int
    S: int
    bq: int  # B_q
    bk: int  # B_k
    lead: tuple[int, ...]  # broadcast leading axes (..., Hq) of the scores
    runs: tuple[tuple[bool, ...], ...]  # [i][j]: some pair in tile (i, j) may attend, else skipped
    dense: tuple[tuple[bool, ...], ...]  # [i][j]: every pair may attend, so no -inf fill is needed
    allowed: torch.Tensor | None  # the mask with causal folded in; None: no mask, or causal alone
    window: int | None = None  # with allowed None: the causal sliding window, in closed form

    @property
    def shape(self) -> tuple[int, int]:
        """(n_q, n_k) = (⌈L / B_q⌉, ⌈S / B_k⌉)."""
        return len(self.runs), len(self.runs[0])

    def rows(self, i: int) -> tuple[int, int]:
        return i * self.bq, min((i + 1) * self.bq, self.L)

    def keys(self, j: int) -> tuple[int, int]:
        return j * self.bk, min((j + 1) * self.bk, self.S)

    def blocked(self, i: int, j: int, device: torch.device) -> torch.Tensor | None:
        """True = masked out, (BH, rows, keys) for tile (i, j); None when the tile is dense."""
        if self.dense[i][j]:
            return None
        (r0, r1), (c0, c1) = self.rows(i), self.keys(j)
        if self.allowed is None:
            tile = allowed_tile(self.L, self.S, r0, r1, c0, c1, device, self.window)
        else:  # a mask axis of size 1 broadcasts: slice only the axes it really has
            rows = slice(r0, r1) if self.allowed.shape[-2] != 1 else slice(None)
            cols = slice(c0, c1) if self.allowed.shape[-1] != 1 else slice(None)
            tile = self.allowed[..., rows, cols]
        return (~tile).expand(*self.lead, r1 - r0, c1 - c0).reshape(-1, r1 - r0, c1 - c0)


def _block_reduce(mask2d: torch.Tensor, bq: int, bk: int, op: str, pad: bool) -> torch.Tensor:
    """(L, S) bool → (n_q, n_k): any/all of each tile; the ragged edge is padded with ``pad``."""
    L, S = mask2d.shape
    n_q, n_k = -(-L // bq), -(-S // bk)
    padded = torch.full((n_q * bq, n_k * bk), pad, dtype=torch.bool)
    padded[:L, :S] = mask2d
    tiles = padded.reshape(n_q, bq, n_k, bk)
    return tiles.any(3).any(1) if op == "any" else tiles.all(3).all(1)


def allowed_tile(
    L: int, S: int, r0: int, r1: int, c0: int, c1: int, device: torch.device, window: int | None = None
) -> torch.Tensor:
    """Rows r0…r1-1, keys c0…c1-1 of causal_mask(L, S, 'bottom_right'), or of
    sliding_window_mask(L, S, window), built for one tile."""
    i = torch.arange(r0, r1, device=device).unsqueeze(-1) + (S - L)  # (B_q, 1)
    j = torch.arange(c0, c1, device=device).unsqueeze(0)  # (1, B_k)
    return (j <= i) if window is None else (j <= i) & (j > i - window)


def _mask_tiles(
    allowed: torch.Tensor,
    causal: bool,
    lead: tuple[int, ...],
    bq: int,
    bk: int,
    L: int,
    S: int,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """An explicit mask (causal folded in): the mask, rows with an allowed key, tiles that run
    (n_q, n_k) and tiles allowed throughout (n_q, n_k)."""
    allowed = torch.as_tensor(allowed, dtype=torch.bool, device=device)
    if allowed.ndim < 2:  # (S,) or a scalar: one row for every query
        allowed = allowed.reshape(1, -1)
    if causal:
        allowed = allowed & allowed_tile(L, S, 0, L, 0, S, device)
    try:
        full = torch.broadcast_to(allowed, (*lead, L, S))
    except RuntimeError as exc:
        raise ValueError(
            f"mask of shape {tuple(allowed.shape)} does not broadcast to scores {(*lead, L, S)}"
        ) from exc
    flat = full.reshape(-1, L, S) if full.ndim > 2 else full.unsqueeze(0)
    runs = _block_reduce(flat.any(0), bq, bk, "any", False)
    dense = _block_reduce(flat.all(0), bq, bk, "all", True)
    return allowed, full.any(-1), runs, dense


def _causal_tiles(
    causal: bool, bq: int, bk: int, L: int, S: int, window: int | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """No explicit mask: rows with an allowed key, tiles that run and tiles allowed throughout,
    in closed form."""
    if window is not None:
        return _window_tiles(window, bq, bk, L, S)
    if not causal:
        runs = torch.ones(-(-L // bq), -(-S // bk), dtype=torch.bool)
        return torch.ones(L, dtype=torch.bool), runs, runs
    r0, c0 = torch.arange(0, L, bq), torch.arange(0, S, bk)
    r1, c1 = torch.clamp(r0 + bq, max=L), torch.clamp(c0 + bk, max=S)
    # query i may see keys up to i + S - L. Tile (i, j) has an allowed pair iff its first key ≤ the
    # last row's horizon, and is entirely allowed iff its last key ≤ the first row's horizon.
    runs = c0[None, :] <= (r1[:, None] - 1 + S - L)
    dense = (c1[None, :] - 1) <= (r0[:, None] + S - L)
    return torch.arange(L) + (S - L) >= 0, runs, dense


def _window_tiles(
    window: int, bq: int, bk: int, L: int, S: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The causal sliding window in closed form: query i reads keys h − window < j ≤ h, with
    h = i + S − L its horizon. A tile has an allowed pair iff its key range meets the union of
    its rows' ranges, and is allowed throughout iff its key range lies inside their intersection."""
    r0, c0 = torch.arange(0, L, bq), torch.arange(0, S, bk)
    r1, c1 = torch.clamp(r0 + bq, max=L), torch.clamp(c0 + bk, max=S)
    first, last = r0[:, None] + S - L, r1[:, None] - 1 + S - L  # horizons of a tile's first, last row
    runs = (c0[None, :] <= last) & (c1[None, :] - 1 > first - window)
    dense = (c1[None, :] - 1 <= first) & (c0[None, :] > last - window)
    return torch.arange(L) + (S - L) >= 0, runs, dense


def plan_tiles(
    L: int,
    S: int,
    lead: tuple[int, ...],
    bq: int,
    bk: int,
    allowed: torch.Tensor | None = None,
    causal: bool = False,
    device: torch.device | None = None,
    window: int | None = None,
) -> TilePlan:
    """Which tiles of the (..., L, S) scores hold an allowed pair (True = may attend) and which
    are allowed throughout. ``window``: the causal sliding window of ``sliding_window_mask``
    (implies causal), planned in closed form; only without an explicit mask. ValueError when a
    query row may attend to no key, or the mask does not broadcast to (*lead, L, S)."""
    if window is not None and (window < 1 or allowed is not None):
        raise ValueError(f"a sliding window is ≥ 1 key and comes without an explicit mask, got {window}")
    if allowed is None:
        row_any, runs, dense = _causal_tiles(causal, bq, bk, L, S, window)
    else:
        allowed, row_any, runs, dense = _mask_tiles(allowed, causal, lead, bq, bk, L, S, device)
    empty = ~row_any
    if empty.any():
        rows = sorted({int(i) for i in empty.nonzero()[:, -1].tolist()})
        raise ValueError(f"query row(s) {rows[:8]} may attend to no key: a fully masked row has no softmax")
    return TilePlan(L, S, bq, bk, tuple(lead), _as_rows(runs), _as_rows(dense), allowed, window)


def _as_rows(tiles: torch.Tensor) -> tuple[tuple[bool, ...], ...]:
    """(n_q, n_k) bool tensor → nested tuples: the loop looks tiles up as Python bools (fast)."""
    return tuple(tuple(r) for r in tiles.tolist())
