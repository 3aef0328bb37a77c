"""Classroom rooms: a presenter's view, published so that students' screens can follow it.

A room holds one JSON payload (the presenter's page and widget values) and a version number
that goes up by one each time the presenter publishes a different payload, and the latest frame
(the page as drawn, lab_ui.classroom.frames) named by the payload it was drawn from. Followers
poll the version (one small read) and fetch the payload and frame only when it changed.

Two backends behind one small interface (`RoomStore`), chosen by `store()`:
- `memory_rooms.MemoryRooms`: a dict in this process, the default for a single server;
- `redis_rooms.RedisRooms`: Redis, for several replicas behind a proxy (set
  ``ATTN_LAB_ROOMS=redis://…``).

The parts, none of which imports Streamlit (so each is tested on its own):
- ``records``: what a store answers (`Snapshot`, `Status`, `Seat`), its errors and limits (the
  bounds that keep one visitor from spoiling the classroom for everyone), `on_change`;
- ``signing``: presenter secrets, signed by the server, kept by stores as a digest; a room the
  store lost comes back only to a secret signed for it, and a restore counts against the
  per-client room limit like a new room;
- ``question``: a room's live question (`Asked`) and the checks on its answers;
- ``memory_rooms``, ``redis_rooms`` (+ ``redis_scripts``, its Lua): the two stores.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Protocol

from classroom_store.memory_rooms import MemoryRooms
from classroom_store.question import Asked
from classroom_store.records import RoomError, Seat, Snapshot, Status
from classroom_store.redis_rooms import RedisRooms


class RoomStore(Protocol):
    def create(self, client: str = "") -> tuple[str, str]:
        """A new room: (room id, presenter secret). RoomError when full or rate-limited."""

    def restore(
        self, room_id: str, secret: str, payload: dict[str, Any], version: int = 1, client: str = ""
    ) -> int:
        """Re-publish a room the store lost (aged out, a restart): same id and secret, starting at
        ``version`` (one past the presenter's last, so no follower mistakes it for a view it has);
        counted as one of ``client``'s new rooms. RoomError when the secret is not one this server
        issued for the id, the presenter ended it, its id is taken by another room, the store is
        full or the client rate-limited."""

    def issued(self, room_id: str, secret: str) -> bool:
        """Whether this server issued ``secret`` for ``room_id`` (live or not)."""

    def publish(self, room_id: str, secret: str, payload: dict[str, Any] | None) -> int:
        """Store the presenter's view and mark the presenter seen; returns the version
        (unchanged if the payload is, or if it is None: a check-in only). RoomGone if missing."""

    def status(self, room_id: str) -> Status | None:
        """The room's version and the presenter's absence, or None when there is no live room."""

    def version(self, room_id: str) -> int | None:
        """The room's version, or None when there is no such (live) room."""

    def snapshot(self, room_id: str) -> Snapshot | None:
        """The room's version and payload, or None when there is no such room."""

    def close(self, room_id: str, secret: str) -> None:
        """End the room (presenter only)."""

    def ended(self, room_id: str) -> bool:
        """Whether the room's presenter ended it (in the last ENDED_TTL_S)."""

    def put_frame(self, room_id: str, secret: str, view: str, blob: bytes) -> None:
        """Keep the presenter's drawn page (lab_ui.classroom.frames) for the view whose
        `view_key` is ``view``; only the latest frame of a room is kept."""

    def frame(self, room_id: str) -> tuple[str, bytes] | None:
        """The room's latest frame: (its view key, its bytes), or None."""

    def frame_view(self, room_id: str) -> str | None:
        """The view key of the room's latest frame, or None (a small read)."""

    def follow(self, room_id: str, session: str, client: str = "") -> Seat:
        """Take or refresh ``session``'s seat (``client``: its address, for the per-client limit)."""

    def set_per_client(self, room_id: str, secret: str, seats: int) -> None:
        """The presenter sets how many seats one client address may hold (1..the room's seats)."""

    def ask(self, room_id: str, secret: str, card: str, difficulty: str) -> Asked:
        """The presenter asks the room ``card`` with a fresh seed; the last question's answers go."""

    def close_question(self, room_id: str, secret: str) -> None:
        """The presenter closes the question: no more answers, followers are shown the answer."""

    def clear_question(self, room_id: str, secret: str) -> None:
        """The presenter is done with the question: it and its answers go, screens show the page."""

    def question(self, room_id: str) -> Asked | None:
        """The room's question (open or closed), or None."""

    def answer(self, room_id: str, seat: str, question_id: str, text: str) -> None:
        """A seated follower's answer to the open question ``question_id`` (replaces its last); its
        address (as `follow` was told) gives at most as many answers as it may hold seats."""

    def answers(self, room_id: str, secret: str) -> tuple[dict[str, str], list[str]]:
        """The presenter's read: (seat → answer, seats seated now)."""


ROOMS_ENV = "ATTN_LAB_ROOMS"
_store: RoomStore | None = None
_store_lock = threading.Lock()


def store() -> RoomStore:
    """The process's room store: Redis when ATTN_LAB_ROOMS is a redis:// URL, else memory."""
    global _store
    with _store_lock:
        if _store is None:
            url = os.environ.get(ROOMS_ENV, "").strip()
            if url.startswith(("redis://", "rediss://", "unix://")):
                _store = RedisRooms(url)
            elif url in ("", "memory"):
                _store = MemoryRooms()
            else:
                raise RoomError(f"{ROOMS_ENV} must be 'memory' or a redis:// URL, got {url!r}")
        return _store
