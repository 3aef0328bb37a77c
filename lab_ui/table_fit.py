"""Fit a table to the page's width: every column shows at a 1,400 px window, long text wraps.

Streamlit's data grid sizes each column to its content and scrolls sideways when the sum is wider
than the page, so the right-hand columns of a wide table are cut off (a 1,400 px window leaves a
938 px grid beside the sidebar). `fit` estimates each column's width from its text (characters ×
the grid's average glyph width), keeps the narrow columns whole and shares what is left between
the wide ones (water-filling); where a cell no longer fits on one line the rows get taller, which
is what lets the grid wrap text (Streamlit wraps only when a row is taller than 4 rem).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

PAGE_WIDTH_PX = 880  # the grid at a 1,400 px window is 938 px wide; leave room for borders and scrollbar
CHAR_PX = 7.6  # the grid's 14 px sans-serif, average advance of digits and lower-case letters
PAD_PX = 26  # a cell's padding and its sort icon
MIN_PX = 64  # narrower than this a number or a header is unreadable
HEADER_MAX_PX = 170  # a long header may be cut (its full text is the tooltip) rather than the table
LINE_PX = 21  # one wrapped line of a cell
WRAP_ROW_PX = 66  # the least row height at which the grid wraps text (4 rem = 64 px, plus a margin)
MAX_LINES = 4


@dataclass(frozen=True)
class Fit:
    """Column widths in px (only when the table would not fit as drawn) and the row height that
    lets the squeezed columns wrap (None: one line per row)."""

    widths: dict[str, int]
    row_height: int | None


def text_px(text: Any) -> float:
    """Estimated drawn width of one cell or header."""
    return len(str(text)) * CHAR_PX + PAD_PX


def column_px(df: pd.DataFrame, name: Any) -> tuple[float, float]:
    """(width the column's longest cell needs, width its header needs, capped)."""
    cells = max((text_px(v) for v in df[name].head(500).tolist()), default=MIN_PX)
    return cells, min(text_px(name), HEADER_MAX_PX)


def _shrink(widths: dict[Any, float], budget_px: float) -> dict[Any, float]:
    """Scale the widths above `MIN_PX` down until the sum fits ``budget_px`` (none below MIN_PX)."""
    out = dict(widths)
    for _ in range(len(out)):
        fixed = [n for n, w in out.items() if w <= MIN_PX]
        room = budget_px - MIN_PX * len(fixed)
        wide = sum(w for n, w in out.items() if n not in fixed)
        if wide <= room or wide <= 0:
            break
        out = {n: (w if n in fixed else max(MIN_PX, w * room / wide)) for n, w in out.items()}
    return out


def fit(df: pd.DataFrame, budget_px: int = PAGE_WIDTH_PX) -> Fit:
    """Widths that make ``df`` (index hidden) fit in ``budget_px``; no widths when it already does."""
    need = {name: column_px(df, name) for name in df.columns}
    full = {name: max(cells, header, MIN_PX) for name, (cells, header) in need.items()}
    if sum(full.values()) <= budget_px or not len(df.columns):
        return Fit({}, None)
    floor = {name: max(header, MIN_PX) for name, (_, header) in need.items()}
    if sum(floor.values()) > budget_px:  # even the headers do not fit: cut the wide ones alike
        floor = _shrink(floor, budget_px)
    widths = dict(floor)
    left = budget_px - sum(floor.values())
    wanting = sorted((n for n in df.columns if full[n] > floor[n]), key=lambda n: full[n] - floor[n])
    for i, name in enumerate(wanting):  # smallest extra need first: narrow columns end up whole
        share = max(0.0, left / (len(wanting) - i))
        extra = min(full[name] - floor[name], share)
        widths[name] += extra
        left -= extra
    lines = max(math.ceil((full[n] - PAD_PX) / max(widths[n] - PAD_PX, 1)) for n in df.columns)
    row_height = None if lines <= 1 else max(WRAP_ROW_PX, LINE_PX * min(lines, MAX_LINES) + 8)
    return Fit({str(n): int(w) for n, w in widths.items()}, row_height)
