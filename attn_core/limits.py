"""Every size cap of the interactive pages, in one place, each with its reason.

A page's rerun shares a 2-core server with a whole classroom: these caps keep any single request
to roughly a tenth of a second of one core. (The cost model's caps live in ``attn_core.cost``:
its numbers are O(1) in the sizes, so its caps guard integer ranges, not time.)
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
H = TypeVar("H")


@dataclass(frozen=True)
class Limits:
    max_len: int = 512  # L and S: a 512×512 heatmap is ~1 MB of float32 JSON per figure
    max_width: int = 256  # d_k and d_v
    max_heads: int = 16
    max_custom_len: int = 32  # typed matrices and painted masks: beyond this nobody types by hand
    # |entry| of a typed matrix. Every product a page forms from Q, K, V (scores d·x², gradients
    # up to d·x³ with d ≤ 256, the temperature's ×20) then stays below 1e21: far inside float64
    # (1.8e308) and the float32 of a cross-check (3.4e38), so no figure turns into inf or NaN.
    max_typed_abs: float = 1e6
    # heads · L · S · (d_k + d_v): the multiply-adds of QKᵀ and PV. 2^25 keeps a float64 rerun
    # (ours + the SDPA check) near 0.1 s on one core, e.g. 512 × 512 with d_k + d_v = 128.
    max_work: int = 2**25
    experiment_tokens: int = 64  # the Masks page's experiments: a 64 × 64 heatmap stays readable
    experiment_width: int = 32  # their d_k = d_v
    gallery_len: int = 64  # L, S of a gallery mask drawn cell by cell
    permutation_tokens: int = 32  # a permutation typed by hand, one heatmap row per token
    jacobian_keys: int = 64  # a T × T Jacobian heatmap with exact hover values
    precision_len: int = 16_384  # keys per precision-study run: one row costs O(queries · T · d)
    online_tiles: int = 1024  # tiles one rerun may step through the eager kernel (~0.1 ms each)
    # Finite differences: 2 forward passes per coordinate per ε.
    fd_coordinates: int = 1024  # numel(Q) + numel(K) + numel(V): 2 · 1024 · 3 = 6,144 forward passes
    fd_work: int = 2**21  # coordinates × entries of S: bounds the score entries computed per ε
    fd_chunk_entries: int = 2**21  # score entries per batched forward call (~16 MiB per float64 tensor)


LIMITS = Limits()


@dataclass(frozen=True)
class TheoryLimits:
    """The theory pages (Scaling, What one head can express): each cap keeps one simulation to a
    few million float64 entries (tens of milliseconds on one core)."""

    max_d_k: int = 1024  # head widths studied; wider than any production head (≤ 256)
    max_keys: int = 4096  # T of one simulated row: card 3's T = 4,096
    max_pairs: int = 50_000  # (q, k) pairs of a variance experiment (and pairs · d_k ≤ max_entries)
    # Entries drawn by one simulation (pairs · d_k, rows · T, …): 2^22 float64 = 32 MiB, ~30 ms.
    max_entries: int = 2**22
    max_rows: int = 1024  # rows of a row-statistics simulation
    max_tokens: int = 256  # tokens of a sink / collapse / rank experiment (a T × T heatmap)
    max_width: int = 128  # model width of those experiments
    max_layers: int = 24  # depth of a rank-collapse stack
    max_stacks: int = 64  # random stacks averaged in the collapse experiment
    max_points: int = 400  # data points / query points of the Nadaraya–Watson curve
    max_trials: int = 4096  # random instances of the d_k = 1 and uniform-head experiments


THEORY = TheoryLimits()


def check_range(name: str, value: int, low: int, high: int) -> int:
    """value, or a ValueError with a message fit to show next to the widget when it is outside
    low…high."""
    if not low <= value <= high:
        raise ValueError(f"{name} = {value} is outside the allowed range {low}…{high}")
    return int(value)


class Busy(ValueError):
    """Another visitor's long computation holds the server's slot for it (a ValueError: the page shows
    its words next to the input, as for any refused input)."""


class ServerSlot:
    """At most ``capacity`` holders of one kind of long work at a time in this server process; one
    more is refused at once (``busy()``, by default Busy naming ``what``), never queued behind the
    others (a queue would hold every visitor's page, and each run takes a whole core for seconds).

    The one slot mechanism of the server, held two ways: for a block of code in this process
    (`take`, `guard`: the Serving page's simulations, the long reads of the heads pages), or for
    as long as a child process runs (`start`, `release`, `running`: `attn_core.bounded_child`'s
    children, the Cost page's build check and `verify`). A slot is freed when its holder ends,
    however it ends."""

    def __init__(self, what: str, capacity: int = 1, busy: Callable[[], Exception] | None = None) -> None:
        self.what = what
        self.capacity = capacity
        self._busy = busy
        self._lock = threading.Lock()
        self._held: list = []  # the holders: a child, or a token of a block inside `take`

    def _refusal(self) -> Exception:
        if self._busy is not None:
            return self._busy()
        return Busy(f"another {self.what} is running on this server; try again in a few seconds")

    def _check_free(self) -> None:
        """(The lock held.) Drop holders that have ended; refused when every slot is still held."""
        self._held = [h for h in self._held if not getattr(h, "done", False)]
        if len(self._held) >= self.capacity:
            raise self._refusal()

    @contextmanager
    def take(self) -> Iterator[None]:
        """A slot held for the ``with`` block; refused at once when every slot is held."""
        token = object()
        with self._lock:
            self._check_free()
            self._held.append(token)
        try:
            yield
        finally:
            self.release(token)

    def guard(self, fn: Callable[P, R]) -> Callable[P, R]:
        """``fn`` run inside the slot (refused at once when every slot is held)."""

        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            with self.take():
                return fn(*args, **kwargs)

        return run

    def start(self, make: Callable[[Callable[[object], None]], H]) -> H:
        """A holder made in a free slot by ``make(release)``: a child that calls ``release(itself)``
        when it ends (its ``done`` also frees the slot); refused when every slot is held."""
        with self._lock:
            self._check_free()
            holder = make(self.release)
            self._held.append(holder)
        return holder

    def release(self, holder: object) -> None:
        """Free ``holder``'s slot (a child's watcher calls it when the child ends)."""
        with self._lock:
            if holder in self._held:
                self._held.remove(holder)

    def running(self) -> list:
        """The holders of a slot now."""
        with self._lock:
            return [h for h in self._held if not getattr(h, "done", False)]
