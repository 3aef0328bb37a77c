"""Tile maps: a long sequence's attention summarised tile by tile, never forming L × S (card 15).

A head's map at 4,096 tokens is 16.8 M weights; what a reader needs is where its mass goes. From
one layer's captured q and k (after rotary, KV heads not repeated, the model's scale, causal with
an optional sliding window) we compute, per head, two numbers per B × B tile of the weights P:

    mass[a, b] = Σ_{t ∈ a, j ∈ b} P[t, j] / |a|     (each row block's masses sum to 1)
    max[a, b]  = max_{t ∈ a, j ∈ b} P[t, j]

and, from the same pass, the per-row values behind the head scores of ``attn_core.heads``
(sink P[t, 0], previous token P[t, t − 1], distance Σ_j P[t, j](t − j), the share of the last w
tokens, entropy) and the mass by distance in log₂ bins. Two passes over the tiles the mask
leaves (``attn_core.tile_plan``; the upper triangle is never visited), one query block at a time:

    pass 1  the online softmax of ``attn_core.online``: per row the running max m_i and
            normaliser ℓ_i, tile after tile (``tile_step`` with a value column of ones, so its
            accumulator is ℓ), then lse_t = m_t + log ℓ_t;
    pass 2  per tile P = e^{S − lse} (exact weights: every row already normalised), reduced at
            once to the tile summaries and the per-row sums; entropy = lse − Σ_j P[t, j] s_j.

GQA: query heads sharing a KV head are stacked in the rows of one GEMM (K is never repeated).
Memory: Q and K, O(H·L) of per-row state, O(H·tiles) of maps and one compute tile of
H·R·C scores (R = C = 256 by default): never H·L·L. Work: two passes of H·L²/2·d multiply-adds
and one exp per allowed score each (causal). ``region`` recomputes the full-resolution weights of
one rectangle on demand from the rows' lse. Mask convention: True = may attend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.heads import distance_edges, position_edges, position_profile
from attn_core.online import tile_step
from attn_core.tile_plan import TilePlan, allowed_tile, plan_tiles

TILE = 64  # summary tile B: a 4,096-token map is 64 × 64 tiles per head
COMPUTE_BLOCK = 256  # rows and keys per compute tile: eager torch pays per op, so fewer, larger tiles
BAND = 16  # the local band w of the local share: keys t − w + 1 … t
POSITION_BINS = 64  # runs of query positions in a profile
MAX_REGION = 512 * 512  # weights of one on-demand region (a 512² heatmap is ~1 MiB as float32)


@dataclass(frozen=True)
class LayerQK:
    """One attention layer's capture, batch 1: q (Hq, L, d) and k (Hkv, L, d) after rotary, the KV
    heads not repeated (query head h reads KV head h // (Hq / Hkv), as ``attention.expand_kv``),
    the model's score scale, and its causal sliding window (None: plain causal). Query t and key j
    are the positions 0 … L − 1."""

    q: torch.Tensor
    k: torch.Tensor
    scale: float
    sliding_window: int | None = None

    def __post_init__(self) -> None:
        if self.q.ndim != 3 or self.k.ndim != 3 or self.q.shape[1:] != self.k.shape[1:]:
            raise ValueError(
                f"q (Hq, L, d) and k (Hkv, L, d), got {tuple(self.q.shape)}, {tuple(self.k.shape)}"
            )
        if self.k.shape[0] == 0 or self.q.shape[0] % self.k.shape[0]:
            raise ValueError(f"{self.q.shape[0]} query heads cannot share {self.k.shape[0]} KV heads")

    @property
    def group(self) -> int:
        return self.q.shape[0] // self.k.shape[0]

    @property
    def length(self) -> int:
        return self.q.shape[1]


@dataclass(frozen=True)
class RowStats:
    """Per head and query row t, (Hq, L); row 0 is 0 (every score leaves it out: the causal mask
    forces its weight onto token 0)."""

    sink: torch.Tensor  # P[t, 0]
    previous: torch.Tensor  # P[t, t − 1]
    distance: torch.Tensor  # Σ_j P[t, j](t − j), tokens
    local: torch.Tensor  # Σ_{t − j < band} P[t, j]
    entropy: torch.Tensor  # −Σ_j P[t, j] ln P[t, j], nats

    def as_dict(self) -> dict[str, torch.Tensor]:
        return {name: getattr(self, name) for name in METRICS}


METRICS = ("sink", "previous", "distance", "local", "entropy")  # the per-row values, in table order


@dataclass(frozen=True)
class TileMaps:
    """One layer's summaries, every head: what ``tile_maps`` returns."""

    mass: torch.Tensor  # (Hq, n, n): Σ_{t∈a, j∈b} P[t, j] / |a|; every row block sums to 1
    max: torch.Tensor  # (Hq, n, n): the largest weight in the tile; 0 where the mask removes it
    lse: torch.Tensor  # (Hq, L): log Σ_j e^{s_tj} over each row's allowed keys (for ``region``)
    rows: RowStats
    distance_mass: torch.Tensor  # (Hq, bins): mass at t − j in [edges_b, edges_b+1), rows t ≥ 1; sums to 1
    distance_edges: list[int]
    tile: int  # B: tile (a, b) covers rows a·B … and keys b·B …, clipped to L
    band: int
    sliding_window: int | None
    tiles_run: int  # compute tiles visited per pass
    tiles_total: int  # compute tiles of the full L × L grid

    def scores(self) -> dict[str, torch.Tensor]:
        """Each per-row value averaged over rows t ≥ 1, (Hq,): the head scores of ``attn_core.heads``
        (sink_share, previous_token_score, mean_distance, local_share, mean_entropy)."""
        L = self.lse.shape[-1]
        return {name: (v[:, 1:] if L > 1 else v).mean(-1) for name, v in self.rows.as_dict().items()}

    def profiles(self, bins: int = POSITION_BINS) -> tuple[list[int], dict[str, torch.Tensor]]:
        """Query rows 1 … L − 1 in ≤ ``bins`` runs [edge_b, edge_b+1) and each per-row value's mean
        over every run, (Hq, runs): where in the sequence a head does its job."""
        edges = position_edges(self.lse.shape[-1], bins)
        return edges, {name: position_profile(v, edges) for name, v in self.rows.as_dict().items()}


# ----------------------------------------------------------------------------------------------
# The two passes
# ----------------------------------------------------------------------------------------------


class _Scratch:
    """Score and weight tiles reused across the loop, one per tile shape (eager torch pays for
    every fresh allocation)."""

    def __init__(self, dtype: torch.dtype, device: torch.device) -> None:
        self.dtype, self.device, self.bufs = dtype, device, {}

    def get(self, name: str, shape: tuple[int, ...], fill: float | None = None) -> torch.Tensor:
        key = (name, shape)
        if key not in self.bufs:
            buf = torch.empty(shape, dtype=self.dtype, device=self.device)
            self.bufs[key] = buf if fill is None else buf.fill_(fill)
        return self.bufs[key]


def _blocked(plan: TilePlan, i: int, j: int, group: int, device: torch.device) -> torch.Tensor | None:
    """True = masked out, (1, group·R, C): the tile's mask once per query head of a KV group."""
    blocked = plan.blocked(i, j, device)  # (1, R, C)
    return None if blocked is None else blocked.repeat(1, group, 1)


def _row_lse(plan: TilePlan, i: int, q_tile: torch.Tensor, K: torch.Tensor, group: int, scratch: _Scratch):
    """Pass 1 over query block i: lse (Hkv, group·R, 1) by the online-softmax recurrence."""
    Hkv, GR, _ = q_tile.shape
    m = torch.full((Hkv, GR, 1), -math.inf, dtype=q_tile.dtype, device=q_tile.device)
    l = torch.zeros((Hkv, GR, 1), dtype=q_tile.dtype, device=q_tile.device)  # ℓ: the accumulator
    for j in range(plan.shape[1]):
        if not plan.runs[i][j]:
            continue  # above the diagonal, or outside the window
        c0, c1 = plan.keys(j)
        ones = scratch.get("ones", (Hkv, c1 - c0, 1), fill=1.0)  # V = 1, so the accumulator is ℓ
        s_buf = scratch.get("s", (Hkv, GR, c1 - c0))
        m = tile_step(q_tile, K[:, c0:c1], ones, _blocked(plan, i, j, group, q_tile.device), m, l, s_buf)
    return m + l.log()  # (Hkv, GR, 1)


@dataclass
class _Accumulators:
    mass: torch.Tensor
    max: torch.Tensor
    rows: dict[str, torch.Tensor]  # each (Hq, L); "entropy" holds Σ_j P s_j until the end
    hist: torch.Tensor  # (Hq, bins)
    edges: torch.Tensor  # (bins + 1,)
    skip_row0: bool  # L > 1: the scores read rows t ≥ 1


def _summarise(P: torch.Tensor, S: torch.Tensor, r0: int, c0: int, tile: int, band: int, acc: _Accumulators):
    """One compute tile's weights P (Hq, R, C) and scores S (masked entries 0) into the maps and
    the per-row sums. Rows t ≥ 1 only, except the maps (and a sequence of the single row 0)."""
    Hq, R, C = P.shape
    nr, nc = -(-R // tile), -(-C // tile)
    padded = torch.nn.functional.pad(P, (0, nc * tile - C, 0, nr * tile - R)) if (R % tile or C % tile) else P
    blocks = padded.view(Hq, nr, tile, nc, tile)
    a0, b0 = r0 // tile, c0 // tile
    acc.mass[:, a0 : a0 + nr, b0 : b0 + nc] = blocks.sum((2, 4))  # each map tile: one compute tile
    acc.max[:, a0 : a0 + nr, b0 : b0 + nc] = blocks.amax((2, 4))
    if r0 == 0 and acc.skip_row0:
        P[:, 0].zero_()  # row 0 leaves every score (its weight is forced onto token 0)
    rows = slice(r0, r0 + R)
    row_sum = P.sum(-1)  # (Hq, R)
    t_minus_c0 = torch.arange(r0 - c0, r0 - c0 + R, dtype=P.dtype, device=P.device)  # t − c0 per row
    cols = torch.arange(C, dtype=P.dtype, device=P.device)  # j − c0 per key
    acc.rows["distance"][:, rows] += t_minus_c0 * row_sum - P @ cols  # Σ_j P (t − j)
    acc.rows["entropy"][:, rows] += torch.linalg.vecdot(P, S)  # Σ_j P s_j
    if c0 == 0:
        acc.rows["sink"][:, rows] = P[..., 0]
    off = r0 - c0 - 1  # P[a, a + off] is the weight of row t = r0 + a on key t − 1
    if -R < off < C:
        diag = P.diagonal(offset=off, dim1=1, dim2=2)
        t0 = r0 + max(0, -off)
        acc.rows["previous"][:, t0 : t0 + diag.shape[-1]] = diag
    d_lo, d_hi = max(0, r0 - (c0 + C - 1)), r0 + R - 1 - c0  # the distances t − j the tile spans
    dist = (r0 - c0) + torch.arange(R, device=P.device)[:, None] - torch.arange(C, device=P.device)  # t − j
    if d_hi < band:
        acc.rows["local"][:, rows] += row_sum
    elif d_lo < band:
        acc.rows["local"][:, rows] += (P * (dist < band)).sum(-1)  # t − j < 0 has P = 0
    b_lo, b_hi = (int(torch.bucketize(torch.tensor(d), acc.edges, right=True)) - 1 for d in (d_lo, d_hi))
    if b_lo == b_hi:
        acc.hist[:, b_lo] += row_sum.sum(-1)
    else:
        bins = (torch.bucketize(dist, acc.edges, right=True) - 1).clamp_(0, acc.hist.shape[1] - 1)
        acc.hist.scatter_add_(1, bins.view(1, -1).expand(Hq, -1), P.reshape(Hq, -1))


def _summarise_row_block(
    plan, i: int, q_tile, K, row_lse, scratch, acc, dims: tuple[int, int, int, int]
) -> int:
    """Pass 2 over row block i: each allowed key tile's exact weights P = exp(S − lse) summarised into
    ``acc``; returns how many tiles ran. dims = (Hq, group, tile, band)."""
    Hq, group, tile, band = dims
    Hkv, device = K.shape[0], K.device
    r0, r1 = plan.rows(i)
    runs = 0
    for j in range(plan.shape[1]):
        if not plan.runs[i][j]:
            continue
        c0, c1 = plan.keys(j)
        shape = (Hkv, group * (r1 - r0), c1 - c0)
        S = torch.bmm(q_tile, K[:, c0:c1].transpose(1, 2), out=scratch.get("s", shape))
        blocked = _blocked(plan, i, j, group, device)
        if blocked is not None:
            S.masked_fill_(blocked, -math.inf)
        P = torch.sub(S, row_lse, out=scratch.get("p", shape)).exp_()  # exact weights, ≤ 1
        if blocked is not None:
            S.masked_fill_(blocked, 0.0)  # 0 · s for the entropy's Σ P s, not 0 · (−∞)
        view = (Hq, r1 - r0, c1 - c0)
        _summarise(P.view(view), S.view(view), r0, c0, tile, band, acc)
        runs += 1
    return runs


def _compute_block(tile: int, band: int, block: int | None) -> int:
    """The rows and keys per compute tile: ``block``, else 256 rounded to a multiple of ``tile``."""
    if tile < 1 or band < 1:
        raise ValueError(f"tile and band must be at least 1, got {tile}, {band}")
    block = block or tile * max(1, COMPUTE_BLOCK // tile)
    if block % tile:
        raise ValueError(f"the compute block {block} is not a multiple of the tile {tile}")
    return block


def tile_maps(
    c: LayerQK,
    tile: int = TILE,
    band: int = BAND,
    *,
    block: int | None = None,
    dtype: torch.dtype = torch.float32,
) -> TileMaps:
    """The tile summaries and per-row statistics of every head of one layer (module docstring).

    c: the layer's capture (q (Hq, L, d), k (Hkv, L, d)); ``tile``: the summary tile B;
    ``band``: the local band w; ``block``: rows and keys per compute tile (a multiple of
    ``tile``; default 256 rounded to one); ``dtype``: the arithmetic (float32 by default: the
    model's own precision; float64 for the tests' oracle). Causal, with the capture's sliding
    window: query t reads keys t − window + 1 … t. Extra memory O(Hq·(L + tiles) + Hq·block²)."""
    block = _compute_block(tile, band, block)
    Hq, L, d = c.q.shape
    Hkv, group, device = c.k.shape[0], c.group, c.q.device
    plan = plan_tiles(L, L, (), block, block, causal=True, device=device, window=c.sliding_window)
    Q = (c.q.to(dtype) * c.scale).view(Hkv, group, L, d)  # (Hkv, g, L, d), scaled once
    K = c.k.to(dtype)  # (Hkv, L, d): never repeated
    n = -(-L // tile)
    edges = distance_edges(L)
    acc = _Accumulators(
        mass=torch.zeros(Hq, n, n, dtype=dtype, device=device),
        max=torch.zeros(Hq, n, n, dtype=dtype, device=device),
        rows={name: torch.zeros(Hq, L, dtype=dtype, device=device) for name in METRICS},
        hist=torch.zeros(Hq, len(edges) - 1, dtype=dtype, device=device),
        edges=torch.tensor(edges, device=device),
        skip_row0=L > 1,
    )
    lse = torch.empty(Hq, L, dtype=dtype, device=device)
    scratch, runs = _Scratch(dtype, device), 0
    for i in range(plan.shape[0]):
        r0, r1 = plan.rows(i)
        q_tile = Q[:, :, r0:r1].reshape(Hkv, group * (r1 - r0), d)  # (Hkv, g·R, d)
        row_lse = _row_lse(plan, i, q_tile, K, group, scratch)  # pass 1: (Hkv, g·R, 1)
        lse[:, r0:r1] = row_lse.view(Hq, r1 - r0)
        runs += _summarise_row_block(plan, i, q_tile, K, row_lse, scratch, acc, (Hq, group, tile, band))
    counts = torch.full((n,), float(tile), dtype=dtype, device=device)
    counts[-1] = L - (n - 1) * tile  # the ragged last row block
    rows = acc.rows
    rows["entropy"] = lse - rows["entropy"]  # H_t = lse_t − Σ_j P[t, j] s_j
    rows["entropy"][:, 0] = 0.0  # row 0: one allowed key, H = 0 (and left out when L > 1)
    return TileMaps(
        mass=acc.mass / counts[:, None],
        max=acc.max,
        lse=lse,
        rows=RowStats(**rows),
        distance_mass=acc.hist / max(L - 1, 1),
        distance_edges=edges,
        tile=tile,
        band=band,
        sliding_window=c.sliding_window,
        tiles_run=runs,
        tiles_total=plan.shape[0] * plan.shape[1],
    )


def check_region(Hq: int, L: int, head: int, rows: tuple[int, int], cols: tuple[int, int]) -> None:
    """ValueError naming the problem unless 0 ≤ head < Hq, the rectangle lies within 0 … L − 1 and
    holds at most ``MAX_REGION`` weights."""
    (r0, r1), (c0, c1) = rows, cols
    if not 0 <= head < Hq:
        raise ValueError(f"head {head} is outside 0…{Hq - 1}")
    if not (0 <= r0 < r1 <= L and 0 <= c0 < c1 <= L):
        raise ValueError(f"rows {r0}…{r1 - 1} and keys {c0}…{c1 - 1} must lie within 0…{L - 1}")
    if (r1 - r0) * (c1 - c0) > MAX_REGION:
        raise ValueError(f"{r1 - r0} × {c1 - c0} weights: a region holds at most {MAX_REGION:,}")


def region(
    c: LayerQK, lse: torch.Tensor, head: int, rows: tuple[int, int], cols: tuple[int, int]
) -> torch.Tensor:
    """The full-resolution weights P[t, j] of one head for t in rows[0] … rows[1] − 1 and j in
    cols[0] … cols[1] − 1: e^{s_tj − lse_t} from the rows' lse (``TileMaps.lse``), 0 where the
    mask (causal, and the window) forbids; only that rectangle's scores are formed, (R, C).
    ``check_region``'s ValueError for a bad head or rectangle."""
    Hq, L, _ = c.q.shape
    check_region(Hq, L, head, rows, cols)
    (r0, r1), (c0, c1) = rows, cols
    q = c.q[head, r0:r1].to(lse.dtype) * c.scale  # (R, d)
    k = c.k[head // c.group, c0:c1].to(lse.dtype)  # (C, d)
    allowed = allowed_tile(L, L, r0, r1, c0, c1, q.device, c.sliding_window)  # (R, C)
    P = (q @ k.T - lse[head, r0:r1, None]).exp()
    return P.masked_fill_(~allowed, 0.0)
