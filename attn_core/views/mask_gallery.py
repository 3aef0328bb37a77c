"""The Masks & leakage page's gallery: any mask kind of `attn_core.masks`, or a grid the user paints,
with the facts printed under it (card 6).

Every mask is boolean (L, S) with **True = may attend**. Where query i sits follows the mask's
alignment: top-left (SDPA ``is_causal``) puts it at position i; bottom-right (every other kind) at
i + (S - L), the first S - L keys being a cached prefix. A painted grid's rows are its lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attn_core.limits import LIMITS
from attn_core.masks import MaskKind, allowed_fraction, build_mask, prefix_lm_mask

PAINTED = "custom painted grid"
GALLERY_KINDS = (*(k for k in MaskKind if k is not MaskKind.NONE), PAINTED)

# Characters a painted grid may use. Anything else is an error naming the row and column.
ALLOWED_CHARS = frozenset("1#xX■█")
BLOCKED_CHARS = frozenset("0.·_-□")
MAX_GRID = LIMITS.max_custom_len


def parse_grid(text: str) -> torch.Tensor:
    """Parse a painted mask: one row per line, ``1 # x ■`` = may attend, ``0 . · _ -`` = blocked.

    Spaces and commas between cells are ignored. Returns bool (L, S); raises ValueError naming the
    first bad row or cell. At most `MAX_GRID` rows and columns."""
    rows = [line.replace(",", "").replace(" ", "").replace("\t", "") for line in text.splitlines()]
    rows = [r for r in rows if r]
    if not rows:
        raise ValueError("the grid is empty: paint one row per line, 1 = may attend, 0 = blocked")
    if len(rows) > MAX_GRID:
        raise ValueError(f"the grid has {len(rows)} rows; painted grids are capped at {MAX_GRID}")
    width = len(rows[0])
    if width > MAX_GRID:
        raise ValueError(f"row 1 has {width} cells; painted grids are capped at {MAX_GRID} columns")
    cells: list[list[bool]] = []
    for r, row in enumerate(rows, start=1):
        if len(row) != width:
            raise ValueError(f"row {r} has {len(row)} cells but row 1 has {width}: every row needs the same")
        parsed = []
        for c, ch in enumerate(row, start=1):
            if ch in ALLOWED_CHARS:
                parsed.append(True)
            elif ch in BLOCKED_CHARS:
                parsed.append(False)
            else:
                raise ValueError(f"row {r}, column {c}: {ch!r} is neither 1 (may attend) nor 0 (blocked)")
        cells.append(parsed)
    return torch.tensor(cells, dtype=torch.bool)


def format_grid(allowed: torch.Tensor) -> str:
    """Inverse of `parse_grid` for a bool (L, S) mask: what the paint box starts with."""
    return "\n".join("".join("1" if a else "0" for a in row) for row in allowed.tolist())


def default_grid() -> str:
    """What the paint box starts with: a 6 × 6 prefix-LM mask with a 2-token prompt."""
    return format_grid(prefix_lm_mask(6, 6, 2))


@dataclass(frozen=True)
class MaskView:
    """One gallery mask and the facts the page prints under it."""

    kind: str
    allowed: torch.Tensor  # (L, S) bool, True = may attend
    allowed_pairs: int
    total_pairs: int
    fraction: float  # allowed_pairs / total_pairs
    fully_masked_rows: tuple[int, ...]  # query rows with no key at all: their softmax is 0/0
    query_positions: tuple[int, ...]  # (L,) absolute position of each row, per the alignment


def query_offset(kind: str, L: int, S: int) -> int:
    """Position of row 0: 0 for top-left causal and painted grids, S - L for bottom-right kinds."""
    return 0 if kind in (MaskKind.CAUSAL_TOP_LEFT, PAINTED) else S - L


def alignment_caption(kind: str, L: int, S: int) -> str:
    """One line saying where query i sits for this kind, with the numbers filled in."""
    if kind == MaskKind.CAUSAL_TOP_LEFT:
        return "Top-left alignment (SDPA is_causal): query i sits at position i, whatever S − L is."
    return f"Bottom-right alignment (cached prefix): query i sits at position i + (S − L) = i + {S - L}."


def describe_mask(kind: str, allowed: torch.Tensor) -> MaskView:
    """Count what an (L, S) mask allows, list its fully masked rows and place its rows."""
    allowed = allowed.to(torch.bool)
    L, S = allowed.shape
    offset = query_offset(kind, L, S)
    empty = (~allowed.any(-1)).nonzero().flatten().tolist()
    return MaskView(
        kind=kind,
        allowed=allowed,
        allowed_pairs=int(allowed.sum()),
        total_pairs=allowed.numel(),
        fraction=allowed_fraction(allowed),
        fully_masked_rows=tuple(int(r) for r in empty),
        query_positions=tuple(range(offset, offset + L)),
    )


def gallery_mask(
    kind: str,
    L: int,
    S: int,
    *,
    window: int = 3,
    valid_keys: int | None = None,
    doc_lengths: Sequence[int] = (),
    prefix: int = 0,
    grid_text: str = "",
) -> MaskView:
    """Build the (L, S) mask of a gallery kind (see `GALLERY_KINDS`), True = may attend.

    L, S ≤ 512 (`LIMITS.max_len`); a painted grid sets its own L, S (≤ 32). Raises ValueError with a
    message fit to show next to the widget."""
    if kind == PAINTED:
        return describe_mask(kind, parse_grid(grid_text))
    for name, n in (("L", L), ("S", S)):
        if not 1 <= n <= LIMITS.max_len:
            raise ValueError(f"{name} = {n} is outside the allowed range 1…{LIMITS.max_len}")
    allowed = build_mask(
        kind, L, S, window=window, valid_keys=valid_keys, doc_lengths=doc_lengths, prefix=prefix
    )
    return describe_mask(kind, allowed.contiguous())


def parse_lengths(text: str) -> list[int]:
    """'3, 2, 4' -> [3, 2, 4] for document lengths; ValueError names the bad entry."""
    parts = [p for p in text.replace(";", ",").replace(" ", ",").split(",") if p]
    if not parts:
        raise ValueError("type the document lengths, e.g. 3, 2, 4")
    lengths = []
    for p in parts:
        try:
            n = int(p)
        except ValueError:
            raise ValueError(f"{p!r} is not a whole number of tokens") from None
        if n < 1:
            raise ValueError(f"a document needs at least one token, got {n}")
        lengths.append(n)
    return lengths
