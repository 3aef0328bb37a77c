"""Classroom rooms: a presenter's view, published so that students' screens can follow it.

A room holds one JSON payload (the presenter's page and widget values) and a version number
that goes up by one each time the presenter publishes a different payload. Followers poll the
version (one small read) and fetch the payload only when it changed.

Two backends behind one small interface (`RoomStore`):
- `MemoryRooms`: a dict in this process, the default for a single server;
- `RedisRooms`: Redis, for several replicas behind a proxy (set ``ATTN_LAB_ROOMS=redis://…``).

Only the holder of a room's secret (``secrets.token_urlsafe``, compared with
``hmac.compare_digest``) can publish. Rooms are bounded in number and expire when idle. This
module imports no Streamlit, so it is tested on its own.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

MAX_ROOMS = 64  # live rooms per store: a lecture hall needs one, a department a handful
IDLE_TTL_S = 3 * 3600  # a room nobody published to for 3 hours is gone
MAX_PAYLOAD_BYTES = 64 * 1024  # a view is a page name and a few dozen widget values
ROOM_ID = re.compile(r"^[a-z2-9]{6}$")  # what a room id looks like in a link
_ID_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"  # no 0/o, 1/l: ids are read off a projector


_LOG = logging.getLogger(__name__)
_listeners: list[Callable[[str], None]] = []


def on_change(callback: Callable[[str], None]) -> None:
    """Call ``callback(room_id)`` whenever a room's version moves or the room ends, in whichever
    process (replica) it happened. Callbacks must be quick; they run on the publisher's thread
    (memory) or on the store's listener thread (Redis)."""
    if callback not in _listeners:
        _listeners.append(callback)


def _notify(room_id: str) -> None:
    for callback in list(_listeners):
        try:
            callback(room_id)
        except Exception:  # a listener's failure must never fail the presenter's run
            _LOG.exception("room listener failed")


class RoomError(ValueError):
    """A room that cannot be created, found or driven; the message says which."""


@dataclass(frozen=True)
class Snapshot:
    version: int
    payload: dict[str, Any]


class RoomStore(Protocol):
    def create(self) -> tuple[str, str]:
        """A new room: (room id, presenter secret)."""

    def publish(self, room_id: str, secret: str, payload: dict[str, Any]) -> int:
        """Store the presenter's view; returns the version (unchanged if the payload is)."""

    def version(self, room_id: str) -> int | None:
        """The room's version, or None when there is no such (live) room."""

    def snapshot(self, room_id: str) -> Snapshot | None:
        """The room's version and payload, or None when there is no such room."""

    def close(self, room_id: str, secret: str) -> None:
        """End the room (presenter only)."""


def new_room_id() -> str:
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(6))


def valid_room_id(room_id: object) -> bool:
    return isinstance(room_id, str) and bool(ROOM_ID.match(room_id))


def _digest(secret: str) -> str:
    """Stores keep a hash of the secret, never the secret itself."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _check_secret(stored_digest: str, secret: object) -> None:
    if not isinstance(secret, str) or not hmac.compare_digest(stored_digest, _digest(secret)):
        raise RoomError("only the presenter who started this room can change it")


def encode_payload(payload: dict[str, Any]) -> str:
    """Canonical JSON (sorted keys) so that equal views compare equal; bounded in size."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    if len(text.encode()) > MAX_PAYLOAD_BYTES:
        raise RoomError(f"a room's view is limited to {MAX_PAYLOAD_BYTES // 1024} KiB")
    return text


class MemoryRooms:
    """Rooms in this process's memory (one Streamlit server)."""

    def __init__(
        self,
        max_rooms: int = MAX_ROOMS,
        ttl_s: float = IDLE_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._rooms: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._max, self._ttl, self._clock = max_rooms, ttl_s, clock

    def _expire(self) -> None:
        now = self._clock()
        for room_id in [r for r, room in self._rooms.items() if now - room["touched"] > self._ttl]:
            del self._rooms[room_id]

    def create(self) -> tuple[str, str]:
        with self._lock:
            self._expire()
            if len(self._rooms) >= self._max:
                raise RoomError(f"all {self._max} rooms are in use; try again when one has ended")
            room_id = new_room_id()
            while room_id in self._rooms:
                room_id = new_room_id()
            secret = secrets.token_urlsafe(24)
            self._rooms[room_id] = {
                "digest": _digest(secret),
                "version": 0,
                "text": "{}",
                "touched": self._clock(),
            }
            return room_id, secret

    def _live(self, room_id: str) -> dict[str, Any] | None:
        room = self._rooms.get(room_id)
        if room is not None and self._clock() - room["touched"] > self._ttl:
            del self._rooms[room_id]
            return None
        return room

    def publish(self, room_id: str, secret: str, payload: dict[str, Any]) -> int:
        text = encode_payload(payload)
        with self._lock:
            room = self._live(room_id)
            if room is None:
                raise RoomError(f"room {room_id!r} has ended or expired")
            _check_secret(room["digest"], secret)
            room["touched"] = self._clock()
            changed = text != room["text"]
            if changed:
                room["text"], room["version"] = text, room["version"] + 1
            version = room["version"]
        if changed:
            _notify(room_id)
        return version

    def version(self, room_id: str) -> int | None:
        with self._lock:
            room = self._live(room_id)
            return None if room is None else room["version"]

    def snapshot(self, room_id: str) -> Snapshot | None:
        with self._lock:
            room = self._live(room_id)
            return None if room is None else Snapshot(room["version"], json.loads(room["text"]))

    def close(self, room_id: str, secret: str) -> None:
        with self._lock:
            room = self._live(room_id)
            if room is None:
                return
            _check_secret(room["digest"], secret)
            del self._rooms[room_id]
        _notify(room_id)

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._rooms)


class RedisRooms:
    """Rooms in Redis, shared by every replica: one hash per room, expiring when idle.

    The version is bumped with a WATCH/MULTI transaction, so two replicas never hand out the
    same version for different views."""

    PREFIX = "attn_lab:room:"
    CHANNEL = "attn_lab:room-changed"  # every replica hears every room's changes

    def __init__(self, url: str, max_rooms: int = MAX_ROOMS, ttl_s: int = IDLE_TTL_S):
        import redis  # only where Redis is configured

        self._r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=2)
        self._max, self._ttl = max_rooms, int(ttl_s)
        self._url = url
        threading.Thread(target=self._listen, name="rooms-redis-listener", daemon=True).start()

    def _listen(self) -> None:
        """Relay the channel to this process's listeners; reconnect after a Redis restart."""
        import redis

        while True:
            try:
                pubsub = redis.Redis.from_url(self._url, decode_responses=True).pubsub()
                pubsub.subscribe(self.CHANNEL)
                for message in pubsub.listen():
                    if message["type"] == "message":
                        _notify(message["data"])
            except redis.RedisError:
                time.sleep(1)

    def _key(self, room_id: str) -> str:
        return self.PREFIX + room_id

    def create(self) -> tuple[str, str]:
        live = sum(1 for _ in self._r.scan_iter(match=self.PREFIX + "*", count=1000))
        if live >= self._max:
            raise RoomError(f"all {self._max} rooms are in use; try again when one has ended")
        secret = secrets.token_urlsafe(24)
        for _ in range(8):
            room_id = new_room_id()
            if self._r.hsetnx(self._key(room_id), "digest", _digest(secret)):  # claims a free id
                self._r.hset(self._key(room_id), mapping={"version": 0, "text": "{}"})
                self._r.expire(self._key(room_id), self._ttl)
                return room_id, secret
        raise RoomError("could not find a free room id; try again")

    def publish(self, room_id: str, secret: str, payload: dict[str, Any]) -> int:
        import redis

        text = encode_payload(payload)
        key = self._key(room_id)
        with self._r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)
                    digest, version, old = pipe.hmget(key, "digest", "version", "text")
                    if digest is None:
                        raise RoomError(f"room {room_id!r} has ended or expired")
                    _check_secret(digest, secret)
                    version = int(version)
                    pipe.multi()
                    if text != old:
                        version += 1
                        pipe.hset(key, mapping={"version": version, "text": text})
                    pipe.expire(key, self._ttl)
                    if text != old:
                        pipe.publish(self.CHANNEL, room_id)
                    pipe.execute()
                    return version
                except redis.WatchError:
                    continue

    def version(self, room_id: str) -> int | None:
        value = self._r.hget(self._key(room_id), "version")
        return None if value is None else int(value)

    def snapshot(self, room_id: str) -> Snapshot | None:
        version, text = self._r.hmget(self._key(room_id), "version", "text")
        return None if version is None else Snapshot(int(version), json.loads(text))

    def close(self, room_id: str, secret: str) -> None:
        digest = self._r.hget(self._key(room_id), "digest")
        if digest is not None:
            _check_secret(digest, secret)
            self._r.delete(self._key(room_id))
            self._r.publish(self.CHANNEL, room_id)


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
