"""Every size cap of the theory simulations, in one place, each with its reason.

A theory page reruns on a 2-core server shared by a classroom: each cap keeps one simulation to
a few million float64 entries (tens of milliseconds on one core).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TheoryLimits:
    max_d_k: int = 1024  # head widths studied; wider than any production head (≤ 256)
    max_keys: int = 4096  # T of one simulated row: the card's T = 4,096
    max_pairs: int = 50_000  # (q, k) pairs of a variance experiment: n · d_k ≤ max_entries
    # Entries drawn by one simulation (pairs · d_k, rows · T, …): 2^22 float64 = 32 MiB, ~30 ms.
    max_entries: int = 2**22
    max_rows: int = 1024  # rows of a row-statistics simulation (a median of 1,024 rows)
    max_tokens: int = 256  # tokens of a sink / collapse / rank experiment (a T × T heatmap)
    max_width: int = 128  # model width of those experiments
    max_layers: int = 24  # depth of a rank-collapse stack
    max_stacks: int = 64  # random stacks averaged in the collapse experiment
    max_points: int = 400  # data points of the Nadaraya–Watson curve
    max_trials: int = 4096  # random instances of the d_k = 1 experiment


THEORY = TheoryLimits()


def check_size(name: str, value: int, low: int, high: int) -> int:
    """Return value, or raise a ValueError fit to show next to the widget when outside low…high."""
    if not low <= value <= high:
        raise ValueError(f"{name} = {value} is outside the allowed range {low}…{high}")
    return int(value)
