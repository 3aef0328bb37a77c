"""The server's training slots: who may train now, shared by every session of the process.

At most ``capacity`` runs at once, a slot taken without waiting (a visitor who presses Train
while the slots are taken is told so and keeps reading the page, never queued behind other
runs), one run per session, and a fair handover: sessions refused while a run held the slot
queue up (oldest first), and when that run ends the first of them has the slot to itself for
``handover_s``, so a visitor who presses Train again and again cannot keep it from someone who
asked in between. A refusal older than ``max_run_s + handover_s`` no longer holds a place.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

MAX_CONCURRENT_RUNS = 1  # the server has 2 cores; a second run would halve everyone's speed
MAX_RUN_S = 60  # one press of Train holds a slot for at most this
HANDOVER_S = 30  # when a run ends, a visitor who was refused during it has the slot this long
BUSY = "Another visitor's training run holds the server's training slot: try again in a minute."


class TrainingSlots:
    """``take(session)`` → "" (the session now holds a slot) or why not; ``give_back(session)``
    when its run ends, however it ends."""

    def __init__(
        self,
        capacity: int = MAX_CONCURRENT_RUNS,
        max_run_s: float = MAX_RUN_S,
        handover_s: float = HANDOVER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.capacity, self.handover_s, self.clock = capacity, handover_s, clock
        self.waiter_ttl_s = max_run_s + handover_s
        self._slots = threading.BoundedSemaphore(capacity)
        self._lock = threading.Lock()
        self._active: dict[str, float] = {}  # session -> when its run started
        self._waiting: dict[
            str, list[float]
        ] = {}  # session -> [first, last refusal]; insertion order = queue
        self._reserved: tuple[str | None, float] = (None, 0.0)  # (session the free slot waits for, until)

    def take(self, session: str) -> str:
        """ "" when ``session`` may train now (it then holds a slot), else the reason it may not."""
        with self._lock:
            now = self.clock()
            for old in [s for s, (_, last) in self._waiting.items() if now - last > self.waiter_ttl_s]:
                del self._waiting[old]
            if session in self._active:
                return "This tab is already training: wait for its run to end."
            reserved, until = self._reserved
            if reserved is not None and reserved != session and now < until:
                self._waiting.setdefault(session, [now, now])[1] = now
                return f"The training slot is kept for a visitor who was waiting: try again in {until - now:.0f} s."
            if not self._slots.acquire(blocking=False):
                self._waiting.setdefault(session, [now, now])[1] = now
                return BUSY
            self._active[session] = now
            self._waiting.pop(session, None)
            self._reserved = (None, 0.0)
            return ""

    def give_back(self, session: str) -> None:
        """``session``'s run ended: free its slot and reserve it for the longest-waiting other
        session that asked during that run (one that had its turn and let it pass lost its place)."""
        with self._lock:
            started = self._active.pop(session)
            self._slots.release()
            now = self.clock()
            waiting = [s for s, (_, last) in self._waiting.items() if s != session and last >= started]
            self._reserved = (waiting[0], now + self.handover_s) if waiting else (None, 0.0)

    def training(self) -> set[str]:
        """Sessions with a run in progress."""
        with self._lock:
            return set(self._active)
