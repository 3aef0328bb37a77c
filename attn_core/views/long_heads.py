"""Long sequences on both heads pages: a model's attention at up to 4,096 tokens, tile by tile.

Attention sinks, local bands and heads that jump back thousands of tokens show only on long
inputs, where a full L × L map per head and layer no longer fits. This view captures every
layer's q and k (``hf.qk_capture`` or ``trained.analysis.capture_qk``, one layer at a time) and
summarises each head with ``attn_core.tile_maps``: a B × B tile map of its mass and max weight,
its head scores (those of ``attn_core.heads``) and their profiles by query position and by
distance. A stated ``Budget`` (bytes and seconds) decides the longest input, not a fixed cap
(``long_inputs``, re-exported here with the models and the text input).

For the pages, in the order they call it:
- a model: ``demo()`` | ``from_hf(loaded)`` | ``from_trained(model, name)`` → ``LongModel``;
- text in: ``sample_input(m, n)`` (what to put in the input box), ``read_input(m, text, n)`` →
  ``LongInput`` (token ids (1, L) and a label per position);
- the budget: ``estimate(m, L, budget)`` → ``Estimate`` (bytes, seconds, ``fits``, ``message``:
  "this input: …; budget: …"), ``longest_input(m, budget)``;
- the work: ``long_view(m, inp, budget)`` → ``LongHeadsView`` (``OverBudget`` when the estimate
  is over the budget; ``view.stopped`` when the read ran out of time: the layers done are kept);
  per layer ``view.layers[l]`` is a ``TileMaps`` (``.mass``, ``.max`` (Hq, n, n); ``.rows``;
  ``.distance_mass``; ``.profiles(bins)``); ``view.head_rows`` is the score table;
  ``profile_rows(view, l)`` and ``distance_rows(view, l)`` the tables behind the profiles;
- zoom: ``tile_bounds(view, a, b)`` and ``region(m, view, l, head, rows, cols)`` → ``Region``,
  the full-resolution weights of one rectangle, computed on demand.

One long read at a time on this server (``long_view``, and ``region`` when it re-runs the
forward): a second one while it runs gets ``Busy`` at once instead of waiting behind it, and a
read that runs past its budget's seconds (a busier server than the estimate assumed) stops after
the layer that crossed it and returns the layers finished so far: work done is never thrown away.
Short views never take this lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from itertools import pairwise

import torch

from attn_core.hf.qk_capture import capture_qk as hf_capture
from attn_core.limits import ServerSlot
from attn_core.tile_maps import BAND, POSITION_BINS, TILE, LayerQK, TileMaps, check_region, tile_maps
from attn_core.tile_maps import MAX_REGION as MAX_REGION  # re-exported for the page
from attn_core.tile_maps import region as tile_region
from attn_core.trained.analysis import capture_qk as trained_capture
from attn_core.views.long_inputs import DEFAULT_BUDGET as DEFAULT_BUDGET  # the page's names, in one place
from attn_core.views.long_inputs import DEFAULT_SHARE as DEFAULT_SHARE
from attn_core.views.long_inputs import MAX_LONG_TOKENS as MAX_LONG_TOKENS
from attn_core.views.long_inputs import Budget as Budget
from attn_core.views.long_inputs import Estimate as Estimate
from attn_core.views.long_inputs import Kind as Kind
from attn_core.views.long_inputs import LongInput as LongInput
from attn_core.views.long_inputs import LongModel as LongModel
from attn_core.views.long_inputs import OverBudget as OverBudget
from attn_core.views.long_inputs import default_length as default_length
from attn_core.views.long_inputs import demo as demo
from attn_core.views.long_inputs import estimate as estimate
from attn_core.views.long_inputs import from_hf as from_hf
from attn_core.views.long_inputs import from_trained as from_trained
from attn_core.views.long_inputs import longest_input as longest_input
from attn_core.views.long_inputs import measured_budget as measured_budget
from attn_core.views.long_inputs import read_input as read_input
from attn_core.views.long_inputs import sample_input as sample_input
from attn_core.views.long_inputs import sample_text as sample_text

# The view
# ----------------------------------------------------------------------------------------------

_LONG_READ = ServerSlot("long read")  # one at a time: each one takes every core for seconds


METRIC_LABELS = {
    "sink": "sink share",
    "previous": "previous token",
    "distance": "mean distance, tokens",
    "local": "local share",
    "entropy": "entropy, nats",
}  # TileMaps.rows' fields → the column shown


@dataclass(frozen=True)
class LongHeadsView:
    model_name: str
    tokens: list[str]
    idx: torch.Tensor  # (1, L): what was read (``region`` re-runs it when captures were not kept)
    layers: list[TileMaps]  # one per layer read (fewer than ``layers_asked`` when it stopped)
    captures: list[LayerQK] | None  # every layer's q, k when they fit KEEP_CAPTURES_BYTES
    head_rows: list[dict]  # one per (layer, head): the scores over rows t ≥ 1
    estimate: Estimate
    seconds: float  # measured
    n_heads: int
    n_kv_heads: int
    tile: int
    band: int
    layers_asked: int  # the layers the read set out to do

    @property
    def length(self) -> int:
        return self.idx.shape[1]

    @property
    def stopped(self) -> bool:
        """Whether the read hit its budget's seconds before its last layer."""
        return len(self.layers) < self.layers_asked


class _TimeUp(Exception):
    """Raised inside the capture to end the forward once the budget's seconds are spent."""


def _capture(m: LongModel) -> Callable:
    return hf_capture if m.kind is Kind.HF else trained_capture


def long_view(
    m: LongModel,
    inp: LongInput,
    budget: Budget = DEFAULT_BUDGET,
    *,
    tile: int = TILE,
    band: int = BAND,
    layers: int | None = None,
    on_layer: Callable[[int, int], None] | None = None,
) -> LongHeadsView:
    """Tile maps, scores and profiles of every head of layers 0 … ``layers`` − 1 (all by default;
    1 gives a first map fast: the forward stops after that layer). ``tile``: the map's B;
    ``band``: the local share's w. ``on_layer(done, total)`` is called after each layer (a
    progress bar). OverBudget (a ValueError) with ``estimate``'s message when it does not fit;
    Busy when another long read is running. A read past ``budget.max_seconds`` (checked after
    each layer) stops there and returns the layers done (``view.stopped``)."""
    if not 1 <= tile <= 1024 or not 1 <= band <= MAX_LONG_TOKENS:
        raise ValueError(f"tile {tile} must be 1…1024 and band {band} 1…{MAX_LONG_TOKENS}")
    est = estimate(m, inp.idx.shape[1], budget, tile=tile, layers=layers)
    if not est.fits:
        raise OverBudget(est.message)
    maps: list[TileMaps] = []
    kept: list[LayerQK] = []

    def each(i: int, c: LayerQK) -> None:
        maps.append(tile_maps(c, tile, band))
        if est.keeps_captures:
            kept.append(c)
        if on_layer is not None:
            on_layer(i + 1, est.layers)
        if time.perf_counter() - start > budget.max_seconds and i + 1 < est.layers:
            raise _TimeUp

    with _LONG_READ.take():
        start = time.perf_counter()
        with suppress(_TimeUp):  # out of time: the layers finished so far are the view
            _capture(m)(m.model, inp.idx, est.layers, each)
    return LongHeadsView(
        model_name=m.name,
        tokens=inp.tokens,
        idx=inp.idx,
        layers=maps,
        captures=kept if est.keeps_captures else None,
        head_rows=_head_rows(maps, m.n_heads // m.n_kv_heads),
        estimate=est,
        seconds=time.perf_counter() - start,
        n_heads=m.n_heads,
        n_kv_heads=m.n_kv_heads,
        tile=tile,
        band=band,
        layers_asked=est.layers,
    )


def _head_rows(maps: list[TileMaps], group: int) -> list[dict]:
    rows = []
    for layer, tm in enumerate(maps):
        scores = {k: v.tolist() for k, v in tm.scores().items()}
        for h in range(tm.mass.shape[0]):
            row = {"layer": layer, "head": h, "KV head": h // group}
            row.update({METRIC_LABELS[k]: v[h] for k, v in scores.items()})
            rows.append(row)
    return rows


def profile_rows(view: LongHeadsView, layer: int, bins: int = POSITION_BINS) -> list[dict]:
    """One row per (head, run of query positions [from, to)): each score's mean over that run."""
    edges, prof = view.layers[layer].profiles(bins)
    return [
        {"head": h, "from position": lo, "to position": hi}
        | {METRIC_LABELS[k]: float(v[h, b]) for k, v in prof.items()}
        for h in range(view.n_heads)
        for b, (lo, hi) in enumerate(pairwise(edges))
    ]


def distance_rows(view: LongHeadsView, layer: int) -> list[dict]:
    """One row per (head, distance bin [from, to) tokens back): the share of the mass there,
    over rows t ≥ 1 (each head's shares sum to 1)."""
    tm = view.layers[layer]
    edges = tm.distance_edges
    return [
        {"head": h, "distance from": lo, "distance to": hi, "mass": float(tm.distance_mass[h, b])}
        for h in range(view.n_heads)
        for b, (lo, hi) in enumerate(pairwise(edges))
    ]


# ----------------------------------------------------------------------------------------------
# Zoom
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Region:
    weights: torch.Tensor  # (rows, cols) P[t, j], 0 where the mask forbids
    rows: tuple[int, int]  # query positions [r0, r1)
    cols: tuple[int, int]  # key positions [c0, c1)
    row_tokens: list[str]
    col_tokens: list[str]
    recaptured: bool  # True: q and k were not kept, so the forward ran again up to this layer


def tile_bounds(view: LongHeadsView, a: int, b: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Query rows and keys of map tile (a, b): ([a·B, (a+1)·B), [b·B, (b+1)·B)), clipped to L."""
    L, B = view.length, view.tile
    if not (0 <= a * B < L and 0 <= b * B < L):
        raise ValueError(f"tile ({a}, {b}) is outside the {-(-L // B)} × {-(-L // B)} map")
    return (a * B, min((a + 1) * B, L)), (b * B, min((b + 1) * B, L))


def region(
    m: LongModel, view: LongHeadsView, layer: int, head: int, rows: tuple[int, int], cols: tuple[int, int]
) -> Region:
    """The weights of one head on query positions rows[0] … rows[1] − 1 and keys cols[0] …
    cols[1] − 1, at full resolution (at most ``MAX_REGION``), from the row lse the maps kept. When
    the view did not keep the captures, the forward re-runs up to ``layer`` (seconds, within the
    budget the view was computed under; a long read: Busy when another runs). ValueError naming a
    bad layer, head or rectangle."""
    if not 0 <= layer < len(view.layers):
        raise ValueError(f"layer {layer} is outside 0…{len(view.layers) - 1}")
    check_region(view.n_heads, view.length, head, rows, cols)  # before any forward
    recaptured = view.captures is None
    if recaptured:
        found: list[LayerQK] = []
        with _LONG_READ.take():
            _capture(m)(m.model, view.idx, layer + 1, lambda i, c: found.append(c) if i == layer else None)
        c = found[0]
    else:
        c = view.captures[layer]
    weights = tile_region(c, view.layers[layer].lse, head, rows, cols)
    return Region(
        weights, rows, cols, view.tokens[rows[0] : rows[1]], view.tokens[cols[0] : cols[1]], recaptured
    )
