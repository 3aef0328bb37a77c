"""The Online softmax page's memory bill (card 12): what naive attention stores (every T × T weight
matrix) against the online kernel (one fp32 logsumexp per query row), for a real model's preset.
Numbers come from `attn_core.cost.score_memory`, the bill the Cost page shows too."""

from __future__ import annotations

from dataclasses import dataclass

from attn_core.cost import score_memory
from attn_core.cost.config_reader import ModelShape, list_presets, load_preset
from attn_core.cost.dtypes import DTYPE_BYTES
from attn_core.cost.score_memory import MemoryBill

MEMORY_DTYPES = {d: DTYPE_BYTES[d] for d in ("fp16", "bf16", "fp32")}  # b, bytes per stored attention weight
MAX_BATCH = 4096  # sequences: the bill is exact integers far beyond this; a round cap for the page
MAX_T = score_memory.MAX_T  # tokens


@dataclass(frozen=True)
class MemoryView:
    """Card 12's bill at the chosen T, and the same bill over a grid of T for the plot."""

    model: ModelShape
    bill: MemoryBill
    grid: tuple[int, ...]  # 512 … 131,072 and the chosen T
    sweep: tuple[MemoryBill, ...]  # one bill per grid point


def memory_view(model: str, T: int, dtype: str = "fp16", batch: int = 1) -> MemoryView:
    """Naive (every T × T weight matrix stored) vs online (one fp32 logsumexp per row) for a
    preset ``model`` at context ``T``, weights stored as ``dtype`` (a ``MEMORY_DTYPES`` name)."""
    shape = load_preset(model)
    b = MEMORY_DTYPES[dtype]
    bill = score_memory.model_memory_bill(shape, T, b, batch)
    grid = tuple(sorted({1 << n for n in range(9, 18)} | {int(T)}))
    return MemoryView(shape, bill, grid, tuple(score_memory.model_memory_sweep(shape, grid, b, batch)))


MODELS = tuple(list_presets())  # the memory bill's presets
