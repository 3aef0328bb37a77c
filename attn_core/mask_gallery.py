"""More mask kinds for the gallery: documents (block-diagonal), prefix-LM and a painted grid (card 6).

Every mask is boolean (L, S) with **True = may attend**. Query i of a block of L queries sits at
absolute position i + (S - L): the first S - L keys are a cached prefix (bottom-right alignment),
exactly as `attn_core.masks.causal_mask`. The basic kinds (causal, sliding window, padding) come
from `attn_core.masks`; this module only adds what the gallery needs beyond them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attn_core.limits import LIMITS
from attn_core.masks import allowed_fraction, causal_mask, padding_mask, sliding_window_mask

GALLERY_KINDS = (
    "causal (top-left)",
    "causal (bottom-right, cached prefix)",
    "sliding window",
    "padding",
    "document (block-diagonal)",
    "prefix-LM",
    "custom painted grid",
)

# Characters a painted grid may use. Anything else is an error naming the row and column.
ALLOWED_CHARS = frozenset("1#xX■█")
BLOCKED_CHARS = frozenset("0.·_-□")
MAX_GRID = LIMITS.max_custom_len


def _query_positions(L: int, S: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Absolute positions (L, 1) of the queries (bottom-right) and (1, S) of the keys."""
    if L < 1 or S < 1:
        raise ValueError(f"L and S must be at least 1, got L={L}, S={S}")
    if L > S:
        raise ValueError(f"L = {L} queries cannot sit at the end of S = {S} keys: need L ≤ S")
    i = torch.arange(L).unsqueeze(-1) + (S - L)  # (L, 1)
    j = torch.arange(S).unsqueeze(0)  # (1, S)
    return i, j


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
    i, j = _query_positions(L, S)
    same = doc_id[i] == doc_id[j]  # (L, S)
    return same & (j <= i) if causal else same


def prefix_lm_mask(L: int, S: int, prefix: int) -> torch.Tensor:
    """(L, S) prefix-LM mask: the first ``prefix`` positions see each other both ways (the prompt is
    encoded bidirectionally); every later position is causal. Allowed iff j ≤ i or j < prefix."""
    if not 0 <= prefix <= S:
        raise ValueError(f"prefix must lie in 0…{S}, got {prefix}")
    i, j = _query_positions(L, S)
    return (j <= i) | (j < prefix)


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


@dataclass(frozen=True)
class MaskView:
    """One gallery mask and the facts the page prints under it."""

    kind: str
    allowed: torch.Tensor  # (L, S) bool, True = may attend
    allowed_pairs: int
    total_pairs: int
    fraction: float  # allowed_pairs / total_pairs
    fully_masked_rows: tuple[int, ...]  # query rows with no key at all: their softmax is 0/0


def describe_mask(kind: str, allowed: torch.Tensor) -> MaskView:
    """Count what an (L, S) mask allows and list its fully masked rows."""
    allowed = allowed.to(torch.bool)
    empty = (~allowed.any(-1)).nonzero().flatten().tolist()
    return MaskView(
        kind=kind,
        allowed=allowed,
        allowed_pairs=int(allowed.sum()),
        total_pairs=allowed.numel(),
        fraction=allowed_fraction(allowed),
        fully_masked_rows=tuple(int(r) for r in empty),
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
    if kind == "custom painted grid":
        return describe_mask(kind, parse_grid(grid_text))
    for name, n in (("L", L), ("S", S)):
        if not 1 <= n <= LIMITS.max_len:
            raise ValueError(f"{name} = {n} is outside the allowed range 1…{LIMITS.max_len}")
    if kind == "causal (top-left)":
        allowed = causal_mask(L, S, align="top_left")
    elif kind == "causal (bottom-right, cached prefix)":
        allowed = causal_mask(L, S, align="bottom_right")
    elif kind == "sliding window":
        allowed = sliding_window_mask(L, S, window)
    elif kind == "padding":
        valid = S if valid_keys is None else valid_keys
        allowed = padding_mask([valid], S).reshape(1, S).expand(L, S)  # (L, S)
    elif kind == "document (block-diagonal)":
        allowed = document_mask(L, S, doc_lengths)
    elif kind == "prefix-LM":
        allowed = prefix_lm_mask(L, S, prefix)
    else:
        raise ValueError(f"unknown mask kind {kind!r}; choose one of {GALLERY_KINDS}")
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
