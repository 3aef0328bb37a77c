"""What the Online-softmax page shows, one call per section (cards 2, 12 and 15).

Each section runs the code of ``attn_core.online`` (the one-row recurrence, the tiled kernel, the
merge), its slips or the precision study on the page's input and sets it beside an independent
oracle (torch SDPA in float64, plain ``attention``, ``torch.softmax``), with the tolerance from
``attn_core.oracle``. One query row (step through, split-K) is ``online_rows``; the whole input
tile by tile is ``online_tiles``; the precision study and the page's one view call are here.
Mask convention: boolean, True = may attend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import torch

from attn_core.cost.units import format_flops
from attn_core.dtypes import DTYPES as TRACE_DTYPES
from attn_core.dtypes import UNIT_ROUNDOFF
from attn_core.experiments.precision import precision_study
from attn_core.online import tile_step
from attn_core.slips.online import SLIPS
from attn_core.views.inputs import QKV, InputKind
from attn_core.views.online_rows import (
    HeadRow,
    RowWalk,
    SplitMerge,
    drill_11,
    head_row,
    row_split_merge,
    walk_row,
)
from attn_core.views.online_tiles import MAX_TILES, TileView, smallest_block, tile_view

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

PRECISION_T = (64, 256, 1024, 4096)  # keys per row of the precision section: 4 × 6 runs, each 16 rows, d = 64

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

    def chosen(self) -> HeadRow:
        """The sidebar's head and row of the input (raises ValueError outside it)."""
        return head_row(self.qkv.q, self.qkv.k, self.qkv.v, self.allowed, head=self.head, row=self.row)

    def walk(self, block_size: int, dtype: str, logit_scale: float, slip: str | None = None) -> RowWalk:
        """The chosen row, walked block by block (with ``slip``: the slip's walk)."""
        return walk_row(self.chosen(), block_size=block_size, dtype=dtype, logit_scale=logit_scale, slip=slip)

    def tiles(self, block_size: int) -> TileView:
        return tile_view(self.qkv.q, self.qkv.k, self.qkv.v, self.allowed, block_size=block_size)

    def merge(self, split: int) -> SplitMerge:
        return row_split_merge(self.chosen(), split)


def view(qkv: QKV | None, allowed: torch.Tensor | None, head: int, row: int) -> OnlineView:
    """The page's input as the sections read it."""
    return OnlineView(qkv, allowed, head, row)
