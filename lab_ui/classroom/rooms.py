"""Classroom rooms: a presenter's view, published so that students' screens can follow it.

A room holds one JSON payload (the presenter's page and widget values) and a version number
that goes up by one each time the presenter publishes a different payload. Followers poll the
version (one small read) and fetch the payload only when it changed.

Two backends behind one small interface (`RoomStore`):
- `MemoryRooms`: a dict in this process, the default for a single server;
- `RedisRooms`: Redis, for several replicas behind a proxy (set ``ATTN_LAB_ROOMS=redis://…``).

Only the holder of a room's secret (``secrets.token_urlsafe``; stores keep its SHA-256) can
publish. The bounds that keep one visitor from spoiling the classroom for everyone:
- at most MAX_ROOMS live rooms, and MAX_CREATES_PER_CLIENT new rooms per client address per
  CREATE_WINDOW_S;
- the presenter's screen checks in every second; a room whose presenter has not been seen for
  PRESENTER_TTL_S ends and frees its slot (a closed tab ages out its room);
- at most MAX_FOLLOWERS screens follow one room; a follower that has not checked in for
  FOLLOWER_TTL_S frees its seat.
In Redis, creating, publishing and following are each one Lua script, so the caps hold between
replicas and no room is ever written without its expiry. A Redis that cannot be reached raises
`RoomsUnavailable` (a `RoomError` with a plain message), never a redis exception. This module
imports no Streamlit, so it is tested on its own.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

MAX_ROOMS = 64  # live rooms per store: a lecture hall needs one, a department a handful
PRESENTER_TTL_S = 180  # a room whose presenter's screen has not checked in for 3 minutes ends
PRESENTER_AWAY_S = 10  # followers are told once the presenter has not been seen for this long
MAX_CREATES_PER_CLIENT = 3  # new rooms per client address per window (a reload reclaims, not creates)
CREATE_WINDOW_S = 600
MAX_FOLLOWERS = 40  # screens per room: one server serves ~30 busy students (README, RESULTS.md)
FOLLOWER_TTL_S = 90  # a follower's seat is freed 90 s after its last check (a background tab
#                      may be throttled to one timer a minute)
ENDED_TTL_S = 600  # how long "the presenter ended this room" is remembered for late followers
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


class RoomGone(RoomError):
    """The room is not in the store: ended, expired, or lost by a store that restarted."""


class RoomsUnavailable(RoomError):
    """The room store (Redis) cannot be reached; retrying later may work."""


def _unavailable() -> RoomsUnavailable:
    return RoomsUnavailable("the classroom server (Redis) cannot be reached right now")


@dataclass(frozen=True)
class Snapshot:
    version: int
    payload: dict[str, Any]


@dataclass(frozen=True)
class Status:
    version: int
    presenter_age_s: float  # seconds since the presenter's screen last checked in


class RoomStore(Protocol):
    def create(self, client: str = "") -> tuple[str, str]:
        """A new room: (room id, presenter secret). RoomError when full or rate-limited."""

    def restore(self, room_id: str, secret: str, payload: dict[str, Any], version: int = 1) -> int:
        """Re-publish a room the store lost (a restart): same id and secret, starting at
        ``version`` (one past the presenter's last, so no follower mistakes it for a view it has);
        RoomError when the presenter ended it, its id is taken by another room, or the store is
        full."""

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

    def follow(self, room_id: str, session: str) -> bool:
        """Take or refresh ``session``'s seat; False when the room's MAX_FOLLOWERS seats are taken."""


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


def _full(max_rooms: int) -> RoomError:
    return RoomError(f"all {max_rooms} rooms are in use; try again when one has ended")


def _rate_limited() -> RoomError:
    return RoomError(
        f"you started {MAX_CREATES_PER_CLIENT} rooms in the last {CREATE_WINDOW_S // 60} minutes; "
        "end one, or wait a few minutes"
    )


def _gone(room_id: str) -> RoomGone:
    return RoomGone(f"room {room_id!r} has ended or expired")


class MemoryRooms:
    """Rooms in this process's memory (one Streamlit server)."""

    def __init__(
        self,
        max_rooms: int = MAX_ROOMS,
        ttl_s: float = PRESENTER_TTL_S,
        clock: Callable[[], float] = time.monotonic,
        max_followers: int = MAX_FOLLOWERS,
    ):
        self._rooms: dict[str, dict[str, Any]] = {}
        self._ended: dict[str, float] = {}
        self._creates: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self._max, self._ttl, self._clock = max_rooms, ttl_s, clock
        self._max_followers = max_followers

    def _expire(self) -> None:
        now = self._clock()
        for room_id in [r for r, room in self._rooms.items() if now - room["seen"] > self._ttl]:
            del self._rooms[room_id]
        for room_id in [r for r, t in self._ended.items() if now - t > ENDED_TTL_S]:
            del self._ended[room_id]

    def _insert(self, room_id: str, secret: str, version: int, text: str) -> None:
        self._expire()
        if len(self._rooms) >= self._max:
            raise _full(self._max)
        self._rooms[room_id] = {
            "digest": _digest(secret),
            "version": version,
            "text": text,
            "seen": self._clock(),
            "followers": {},
        }

    def create(self, client: str = "") -> tuple[str, str]:
        with self._lock:
            now = self._clock()
            made = self._creates.setdefault(client, deque())
            while made and now - made[0] > CREATE_WINDOW_S:
                made.popleft()
            if len(made) >= MAX_CREATES_PER_CLIENT:
                raise _rate_limited()
            room_id = new_room_id()
            while room_id in self._rooms or room_id in self._ended:
                room_id = new_room_id()
            secret = secrets.token_urlsafe(24)
            self._insert(room_id, secret, 0, "{}")
            made.append(now)
            return room_id, secret

    def restore(self, room_id: str, secret: str, payload: dict[str, Any], version: int = 1) -> int:
        text = encode_payload(payload)
        with self._lock:
            if room_id in self._ended:
                raise RoomGone(f"room {room_id!r} was ended by its presenter")
            room = self._live(room_id)
            if room is None:
                self._insert(room_id, secret, version, text)
        return self.publish(room_id, secret, payload)

    def _live(self, room_id: str) -> dict[str, Any] | None:
        room = self._rooms.get(room_id)
        if room is not None and self._clock() - room["seen"] > self._ttl:
            del self._rooms[room_id]
            return None
        return room

    def publish(self, room_id: str, secret: str, payload: dict[str, Any] | None) -> int:
        text = None if payload is None else encode_payload(payload)
        with self._lock:
            room = self._live(room_id)
            if room is None:
                raise _gone(room_id)
            _check_secret(room["digest"], secret)
            room["seen"] = self._clock()
            changed = text is not None and text != room["text"]
            if changed:
                room["text"], room["version"] = text, room["version"] + 1
            version = room["version"]
        if changed:
            _notify(room_id)
        return version

    def status(self, room_id: str) -> Status | None:
        with self._lock:
            room = self._live(room_id)
            return None if room is None else Status(room["version"], self._clock() - room["seen"])

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
            self._ended[room_id] = self._clock()
        _notify(room_id)

    def ended(self, room_id: str) -> bool:
        with self._lock:
            self._expire()
            return room_id in self._ended

    def follow(self, room_id: str, session: str) -> bool:
        with self._lock:
            room = self._live(room_id)
            if room is None:
                raise _gone(room_id)
            seats, now = room["followers"], self._clock()
            for other in [s for s, t in seats.items() if now - t > FOLLOWER_TTL_S]:
                del seats[other]
            if session not in seats and len(seats) >= self._max_followers:
                return False
            seats[session] = now
            return True

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._rooms)


# Each script reads the server's clock (TIME) so that replicas on several machines agree.
_NOW = "local t = redis.call('TIME') local now = tonumber(t[1]) + tonumber(t[2]) / 1e6 "

# KEYS: room hash, live-rooms zset (id -> expiry), creations counter or ''.
# ARGV: id, digest, max rooms, ttl, max creations, window, version, text.
# Returns 1 made, 0 id taken, -1 full, -2 rate-limited.
_CREATE = (
    _NOW
    + """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if KEYS[3] ~= '' and tonumber(redis.call('GET', KEYS[3]) or '0') >= tonumber(ARGV[5]) then return -2 end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return -1 end
redis.call('HSET', KEYS[1], 'digest', ARGV[2], 'version', ARGV[7], 'text', ARGV[8], 'seen', now)
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
if KEYS[3] ~= '' then
  redis.call('INCR', KEYS[3])
  if redis.call('TTL', KEYS[3]) < 0 then redis.call('EXPIRE', KEYS[3], ARGV[6]) end
end
return 1
"""
)

# KEYS: room hash, live-rooms zset. ARGV: id, digest, ttl, text ('' = a check-in only), channel.
# Returns the version, -1 missing, -2 wrong secret. The digest is compared with ==: it is the
# SHA-256 of a 192-bit random secret, so timing reveals nothing usable about the secret.
_PUBLISH = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'digest', 'version', 'text')
if not h[1] then return -1 end
if h[1] ~= ARGV[2] then return -2 end
local v = tonumber(h[2])
if ARGV[4] ~= '' and ARGV[4] ~= h[3] then
  v = v + 1
  redis.call('HSET', KEYS[1], 'version', v, 'text', ARGV[4])
  redis.call('PUBLISH', ARGV[5], ARGV[1])
end
redis.call('HSET', KEYS[1], 'seen', now)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return v
"""
)

# KEYS: room hash. Returns {version, seconds since the presenter was seen} or nil.
_STATUS = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'version', 'seen')
if not h[1] then return nil end
return {h[1], tostring(now - tonumber(h[2]))}
"""
)

# KEYS: room hash, followers zset. ARGV: session, max followers, follower ttl.
# Returns 1 seated, 0 full, -1 no such room.
_FOLLOW = (
    _NOW
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - tonumber(ARGV[3]))
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 1
"""
)


def _redis_call(method):
    """Turn the redis client's errors into RoomsUnavailable (logged once per call)."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        import redis

        try:
            return method(self, *args, **kwargs)
        except redis.RedisError as err:
            _LOG.warning("room store: %s", err)
            raise _unavailable() from err

    return call


class RedisRooms:
    """Rooms in Redis, shared by every replica: one hash per room, expiring when its presenter
    has not been seen for the TTL, and a sorted set of live rooms (id -> expiry) for the cap."""

    PREFIX = "attn_lab:room:"
    LIVE = "attn_lab:rooms"
    ENDED = "attn_lab:ended:"
    CREATES = "attn_lab:creates:"
    FOLLOWERS = "attn_lab:followers:"
    CHANNEL = "attn_lab:room-changed"  # every replica hears every room's changes

    def __init__(
        self,
        url: str,
        max_rooms: int = MAX_ROOMS,
        ttl_s: int = PRESENTER_TTL_S,
        max_followers: int = MAX_FOLLOWERS,
    ):
        import redis  # only where Redis is configured

        self._r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=2, socket_connect_timeout=2)
        self._max, self._ttl, self._max_followers = max_rooms, int(ttl_s), max_followers
        self._url = url
        self._create = self._r.register_script(_CREATE)
        self._publish = self._r.register_script(_PUBLISH)
        self._status = self._r.register_script(_STATUS)
        self._follow = self._r.register_script(_FOLLOW)
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

    def _insert(self, room_id: str, secret: str, client: str | None, version: int, text: str) -> int:
        keys = [self._key(room_id), self.LIVE, "" if client is None else self.CREATES + client]
        args = [room_id, _digest(secret), self._max, self._ttl, MAX_CREATES_PER_CLIENT, CREATE_WINDOW_S]
        made = int(self._create(keys=keys, args=[*args, version, text]))
        if made == -1:
            raise _full(self._max)
        if made == -2:
            raise _rate_limited()
        return made

    @_redis_call
    def create(self, client: str = "") -> tuple[str, str]:
        secret = secrets.token_urlsafe(24)
        for _ in range(8):
            room_id = new_room_id()
            if self._r.exists(self.ENDED + room_id):
                continue
            if self._insert(room_id, secret, client, 0, "{}"):
                return room_id, secret
        raise RoomError("could not find a free room id; try again")

    @_redis_call
    def restore(self, room_id: str, secret: str, payload: dict[str, Any], version: int = 1) -> int:
        if self._r.exists(self.ENDED + room_id):
            raise RoomGone(f"room {room_id!r} was ended by its presenter")
        self._insert(room_id, secret, None, version, encode_payload(payload))
        return self.publish(room_id, secret, payload)  # a wrong secret for a taken id fails here

    @_redis_call
    def publish(self, room_id: str, secret: str, payload: dict[str, Any] | None) -> int:
        text = "" if payload is None else encode_payload(payload)
        if not isinstance(secret, str):
            raise RoomError("only the presenter who started this room can change it")
        keys = [self._key(room_id), self.LIVE]
        version = int(
            self._publish(keys=keys, args=[room_id, _digest(secret), self._ttl, text, self.CHANNEL])
        )
        if version == -1:
            raise _gone(room_id)
        if version == -2:
            raise RoomError("only the presenter who started this room can change it")
        return version

    @_redis_call
    def status(self, room_id: str) -> Status | None:
        got = self._status(keys=[self._key(room_id)])
        return None if got is None else Status(int(got[0]), max(0.0, float(got[1])))

    @_redis_call
    def version(self, room_id: str) -> int | None:
        value = self._r.hget(self._key(room_id), "version")
        return None if value is None else int(value)

    @_redis_call
    def snapshot(self, room_id: str) -> Snapshot | None:
        version, text = self._r.hmget(self._key(room_id), "version", "text")
        return None if version is None else Snapshot(int(version), json.loads(text))

    @_redis_call
    def close(self, room_id: str, secret: str) -> None:
        digest = self._r.hget(self._key(room_id), "digest")
        if digest is not None:
            _check_secret(digest, secret)
            with self._r.pipeline() as pipe:  # MULTI: the tombstone and the deletion together
                pipe.set(self.ENDED + room_id, 1, ex=ENDED_TTL_S)
                pipe.delete(self._key(room_id), self.FOLLOWERS + room_id)
                pipe.zrem(self.LIVE, room_id)
                pipe.publish(self.CHANNEL, room_id)
                pipe.execute()

    @_redis_call
    def ended(self, room_id: str) -> bool:
        return bool(self._r.exists(self.ENDED + room_id))

    @_redis_call
    def follow(self, room_id: str, session: str) -> bool:
        keys = [self._key(room_id), self.FOLLOWERS + room_id]
        seated = int(self._follow(keys=keys, args=[session, self._max_followers, FOLLOWER_TTL_S]))
        if seated == -1:
            raise _gone(room_id)
        return seated == 1


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
