"""Oracles for tiled attention maps: tiles of a dense map cut by hand, and a dispatch mode that records
the largest tensor torch allocates (no L × L may appear)."""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

F64 = torch.float64


def tiles_of(P: torch.Tensor, tile: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(mass, max) of P (H, L, L) by padding to whole tiles and reshaping."""
    H, L, _ = P.shape
    n = -(-L // tile)
    padded = torch.nn.functional.pad(P, (0, n * tile - L, 0, n * tile - L)).view(H, n, tile, n, tile)
    rows = torch.tensor([min(tile, L - a * tile) for a in range(n)], dtype=F64)
    return padded.sum((2, 4)) / rows[:, None], padded.amax((2, 4))


class LargestStorage(TorchDispatchMode):
    """The largest memory block any op of the kernel allocates (``size`` of each tensor an op
    returns: by default its storage's bytes, so a stride-0 view of one number costs one number,
    whatever its shape; ``torch.Tensor.numel`` counts elements instead)."""

    def __init__(self, size=lambda t: t.untyped_storage().nbytes()):
        super().__init__()
        self.size = size
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, tuple | list) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, self.size(t))
        return out
