"""Classroom rooms: a presenter's view, published so that students' screens can follow it.

A room holds one JSON payload (the presenter's page and widget values) and a version number
that goes up by one each time the presenter publishes a different payload, and the latest frame
(the page as drawn, lab_ui.classroom.frames) named by the payload it was drawn from. Followers
poll the version (one small read) and fetch the payload and frame only when it changed.

Two backends behind one small interface (`RoomStore`):
- `MemoryRooms`: a dict in this process, the default for a single server;
- `RedisRooms`: Redis, for several replicas behind a proxy (set ``ATTN_LAB_ROOMS=redis://…``).

Only the holder of a room's secret can publish. The server issues it: a random nonce and the
issue time, signed with HMAC-SHA-256 under the server's key (ATTN_LAB_SECRET, which deploy/serve.sh
makes and hands every replica; else one generated and kept in Redis for every replica, or in this
process's memory). Stores keep the secret's SHA-256. A room the store lost (aged out, a Redis
restart) comes back only to a secret the server signed for that room id, and only while no other
room holds the id; a restore counts against the per-client room limit like a new room. The bounds that keep one visitor from spoiling the classroom for everyone:
- at most MAX_ROOMS live rooms, and MAX_CREATES_PER_CLIENT (or the operator's
  ATTN_LAB_ROOMS_PER_CLIENT) new rooms per client address per
  CREATE_WINDOW_S;
- the presenter's screen checks in every second; a room whose presenter has not been seen for
  PRESENTER_TTL_S ends and frees its slot (a closed tab ages out its room);
- a room seats what the deployment serves (`room_seats`: SEATS_PER_REPLICA per replica, or the
  operator's ATTN_LAB_ROOM_SEATS); one client address holds at most SEATS_PER_CLIENT of them
  unless the room's presenter raises that (a class behind one NAT address); a follower that has
  not checked in for FOLLOWER_TTL_S frees its seat.
A room may hold one live question (`Asked`: a Practice drill as card, seed and difficulty, so
every screen draws the same numbers) and its answers, one per follower seat (a rewrite replaces
it), each at most MAX_ANSWER_CHARS, at most `answer_cap` of them; a seat must be seated to answer.
The answers live and die with the room (in Redis a hash whose expiry the presenter's check-in
refreshes), and asking a new question deletes the last one's. They are keyed by the seat's random
id: nothing names a student, and nothing of theirs outlives the room.
In Redis, creating, publishing, following and answering are each one Lua script, so the caps hold between
replicas and no room is ever written without its expiry. A Redis that cannot be reached raises
`RoomsUnavailable` (a `RoomError` with a plain message), never a redis exception. This module
imports no Streamlit, so it is tested on its own.
"""

from __future__ import annotations

import dataclasses
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

MAX_ROOMS = 64  # live rooms per store: a lecture hall needs one, a department a handful
PRESENTER_TTL_S = 180  # a room whose presenter's screen has not checked in for 3 minutes ends
PRESENTER_AWAY_S = 10  # followers are told once the presenter has not been seen for this long
MAX_CREATES_PER_CLIENT = 3  # new rooms per client address per window (a reload reclaims, not creates)
CREATES_ENV = "ATTN_LAB_ROOMS_PER_CLIENT"  # the operator's instead (a department behind one address)
CREATE_WINDOW_S = 600
SEATS_PER_REPLICA = 150  # follower screens one replica serves per room (README "Serving a classroom")
SEATS_ENV = "ATTN_LAB_ROOM_SEATS"  # the operator's seats per room, instead of the default
REPLICAS_ENV = "ATTN_LAB_REPLICAS"  # replicas serving the rooms (deploy/serve.sh sets it)
MAX_SEATS = 10_000  # the most seats an operator may set: bounds the per-room follower sets
SEATS_PER_CLIENT = 10  # seats one client address may hold in a room until its presenter raises it
FOLLOWER_TTL_S = 90  # a follower's seat is freed 90 s after its last check (a background tab
#                      may be throttled to one timer a minute)
ISSUED_TTL_S = 12 * 3600  # a presenter's secret restores its room for this long (the cookie's life)
KEY_ENV = "ATTN_LAB_SECRET"  # the key that signs presenter secrets (any string of 32+ characters)
ENDED_TTL_S = 600  # how long "the presenter ended this room" is remembered for late followers
MAX_PAYLOAD_BYTES = 64 * 1024  # a view is a page name and a few dozen widget values (UTF-8 JSON:
#                                three 4,000-character text areas of 4-byte characters fit)
PUBLISH_EVERY_S = 0.5  # a room takes a new view at most this often (each wakes every follower)
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


class RoomBusy(RoomError):
    """The room took a new view less than its store's interval (PUBLISH_EVERY_S) ago: send this
    one again shortly."""


class RoomsUnavailable(RoomError):
    """The room store (Redis) cannot be reached; retrying later may work."""


def _unavailable() -> RoomsUnavailable:
    return RoomsUnavailable("the classroom server (Redis) cannot be reached right now")


@dataclass(frozen=True)
class Snapshot:
    version: int
    payload: dict[str, Any]
    view: str = field(default="", compare=False)  # view_key of the stored text: names its frame


@dataclass(frozen=True)
class Status:
    version: int
    presenter_age_s: float  # seconds since the presenter's screen last checked in
    followers: int = 0  # screens that checked in within FOLLOWER_TTL_S
    per_client: int = SEATS_PER_CLIENT  # seats one client address may hold in this room
    question: str = ""  # the live question's `Asked.tag`, "" when there is none


@dataclass(frozen=True)
class Asked:
    """The room's question: a drill (attn_core.practice.drills.draw) and whether it is still open
    for answers (closed: followers are shown the answer and its worked steps)."""

    id: str  # names this asking: an answer sent for an older question is refused
    card: str
    seed: int
    difficulty: str
    open: bool = True

    @property
    def tag(self) -> str:
        """What a follower's poll compares: changes when a question is asked or closed."""
        return f"{self.id}:{'open' if self.open else 'closed'}"

    def encode(self) -> str:
        return json.dumps(
            {"id": self.id, "card": self.card, "seed": self.seed, "difficulty": self.difficulty}
        )

    @staticmethod
    def decode(text: str, state: str) -> Asked:
        got = json.loads(text)
        return Asked(got["id"], got["card"], int(got["seed"]), got["difficulty"], state == "open")


MAX_ANSWER_CHARS = 2000  # a typed answer (attn_core.practice.answers' own limit)
MAX_ANSWERS = 1024  # answers a room keeps per question, whatever its seats (attn_core.practice.tally)
_CARD = re.compile(r"^[0-9]{1,3}$")
DIFFICULTIES = ("easy", "medium", "hard")  # attn_core.practice.question.Difficulty's values


def _asked(card: object, difficulty: object) -> Asked:
    """A new question for the room: a fresh seed and id."""
    if not isinstance(card, str) or not _CARD.match(card):
        raise RoomError("a room's question is a drill's card number")
    if difficulty not in DIFFICULTIES:
        raise RoomError(f"difficulty must be one of {', '.join(DIFFICULTIES)}")
    return Asked(secrets.token_hex(6), card, secrets.randbelow(2**31), str(difficulty))


def _check_answer(question_id: object, seat: object, text: object) -> None:
    if not isinstance(question_id, str) or not isinstance(seat, str) or not 0 < len(seat) <= 64:
        raise RoomError("an answer names its question and seat")
    if not isinstance(text, str):
        raise RoomError("an answer is text")
    if len(text) > MAX_ANSWER_CHARS:
        raise RoomError(f"an answer is at most {MAX_ANSWER_CHARS:,} characters; this one is {len(text):,}")


def _not_open() -> RoomError:
    return RoomError("this question is closed or has been replaced by a new one")


def _not_seated() -> RoomError:
    return RoomError("only a screen seated in the room can answer")


def _answers_full(cap: int) -> RoomError:
    return RoomError(f"the room has taken {cap:,} answers, as many as it keeps")


class Seat(Enum):
    """What `follow` answers."""

    TAKEN = "taken"  # this screen has (or kept) a seat
    ROOM_FULL = "room full"  # every seat of the room is taken
    CLIENT_FULL = "client full"  # this client address holds all the seats it may in this room


def _int_env(name: str, env: Mapping[str, str]) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_SEATS:
        raise RoomError(f"{name} must be a whole number from 1 to {MAX_SEATS:,}, got {raw[:20]!r}")
    return int(raw)


def creates_per_client(env: Mapping[str, str] = os.environ) -> int:
    """New rooms one client address may start per CREATE_WINDOW_S: the operator's
    ATTN_LAB_ROOMS_PER_CLIENT (1 to MAX_ROOMS; every teacher of a campus may share one address),
    else MAX_CREATES_PER_CLIENT."""
    raw = env.get(CREATES_ENV, "").strip()
    if not raw:
        return MAX_CREATES_PER_CLIENT
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_ROOMS:
        raise RoomError(f"{CREATES_ENV} must be a whole number from 1 to {MAX_ROOMS}, got {raw[:20]!r}")
    return int(raw)


def room_seats(env: Mapping[str, str] = os.environ) -> int:
    """Seats per room: the operator's ATTN_LAB_ROOM_SEATS, else SEATS_PER_REPLICA for each of the
    ATTN_LAB_REPLICAS replicas (one when unset: a single server)."""
    seats = _int_env(SEATS_ENV, env)
    if seats is not None:
        return seats
    return min(MAX_SEATS, SEATS_PER_REPLICA * (_int_env(REPLICAS_ENV, env) or 1))


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

    def question(self, room_id: str) -> Asked | None:
        """The room's question (open or closed), or None."""

    def answer(self, room_id: str, seat: str, question_id: str, text: str) -> None:
        """A seated follower's answer to the open question ``question_id`` (replaces its last)."""

    def answers(self, room_id: str, secret: str) -> tuple[dict[str, str], list[str]]:
        """The presenter's read: (seat → answer, seats seated now)."""


def new_room_id() -> str:
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(6))


def valid_room_id(room_id: object) -> bool:
    return isinstance(room_id, str) and bool(ROOM_ID.match(room_id))


def _digest(secret: str) -> str:
    """Stores keep a hash of the secret, never the secret itself."""
    return hashlib.sha256(secret.encode()).hexdigest()


def _env_key(env: Mapping[str, str] = os.environ) -> bytes | None:
    raw = env.get(KEY_ENV, "").strip()
    if raw and len(raw) < 32:
        raise RoomError(f"{KEY_ENV} must be at least 32 characters (deploy/serve.sh makes one)")
    return raw.encode() if raw else None


def _mac(key: bytes, room_id: str, issued: int, nonce: str) -> str:
    return hmac.new(key, f"{room_id}:{issued}:{nonce}".encode(), hashlib.sha256).hexdigest()[:32]


def issue_secret(key: bytes, room_id: str, now: float | None = None) -> str:
    """A presenter's secret for ``room_id``: ``<issue time, hex>-<nonce>-<HMAC>`` (hex and '-' only,
    so it travels in a cookie as it is)."""
    issued, nonce = int(time.time() if now is None else now), secrets.token_hex(12)
    return f"{issued:x}-{nonce}-{_mac(key, room_id, issued, nonce)}"


def signed_by(key: bytes, room_id: str, secret: object, now: float | None = None) -> bool:
    """Whether ``secret`` is one this server issued for ``room_id`` in the last ISSUED_TTL_S."""
    if not isinstance(secret, str) or len(secret) > 80 or secret.count("-") != 2:
        return False
    issued_hex, nonce, mac = secret.split("-")
    try:
        issued = int(issued_hex, 16)
    except ValueError:
        return False
    now = time.time() if now is None else now
    if not 0 <= now - issued <= ISSUED_TTL_S:
        return False
    return hmac.compare_digest(mac, _mac(key, room_id, issued, nonce))


def _not_issued(room_id: str) -> RoomError:
    return RoomError(f"room {room_id!r} was not started from this browser")


def _check_secret(stored_digest: str, secret: object) -> None:
    if not isinstance(secret, str) or not hmac.compare_digest(stored_digest, _digest(secret)):
        raise RoomError("only the presenter who started this room can change it")


def encode_payload(payload: dict[str, Any]) -> str:
    """Canonical JSON (sorted keys) so that equal views compare equal; bounded in size, measured
    on the UTF-8 bytes stored (not ASCII-escaped: a 4-byte character costs 4 bytes, not 12)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    size = len(text.encode())
    if size > MAX_PAYLOAD_BYTES:
        raise ViewTooLarge(
            f"this view is {size / 1024:,.1f} KiB, more than the {MAX_PAYLOAD_BYTES // 1024} KiB a room shares"
        )
    return text


class ViewTooLarge(RoomError):
    """A view over MAX_PAYLOAD_BYTES: not shared, the room goes on."""


def view_key(text: str) -> str:
    """What names a view (its canonical JSON, `encode_payload`) for the frame drawn from it."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


MAX_FRAME_BYTES = 4 * 2**20  # one page as drawn (lab_ui.classroom.frames); larger ones are not kept


def _check_frame(view: object, blob: object) -> None:
    if not isinstance(view, str) or len(view) != 32 or not isinstance(blob, bytes):
        raise RoomError("a frame is a view key and bytes")
    if len(blob) > MAX_FRAME_BYTES:
        raise RoomError(f"a room keeps frames up to {MAX_FRAME_BYTES // 2**20} MiB")


def _full(max_rooms: int) -> RoomError:
    return RoomError(f"all {max_rooms} rooms are in use; try again when one has ended")


def _rate_limited() -> RoomError:
    return RoomError(
        f"you started {creates_per_client()} rooms in the last {CREATE_WINDOW_S // 60} minutes; "
        "end one, or wait a few minutes"
    )


def _per_client(seats: object, room_seats: int) -> int:
    if isinstance(seats, bool) or not isinstance(seats, int) or not 1 <= seats <= room_seats:
        raise RoomError(f"seats per address must be a whole number from 1 to {room_seats:,}")
    return seats


def _publish_every(store_s: float | None) -> float:
    """A store's least interval between new views: its own where it was built with one, else
    PUBLISH_EVERY_S as it stands now (read at each publish, never copied at construction)."""
    return PUBLISH_EVERY_S if store_s is None else store_s


def _busy(every_s: float) -> RoomBusy:
    return RoomBusy(f"a room takes a new view at most every {every_s:g} s")


def _gone(room_id: str) -> RoomGone:
    return RoomGone(f"room {room_id!r} has ended or expired")


class MemoryRooms:
    """Rooms in this process's memory (one Streamlit server)."""

    def __init__(
        self,
        max_rooms: int = MAX_ROOMS,
        ttl_s: float = PRESENTER_TTL_S,
        clock: Callable[[], float] = time.monotonic,
        max_followers: int | None = None,
        publish_every_s: float | None = None,
    ):
        self._rooms: dict[str, dict[str, Any]] = {}
        self._publish_every_s = publish_every_s  # None: PUBLISH_EVERY_S (_publish_every)
        self._ended: dict[str, float] = {}
        self._creates: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self._max, self._ttl, self._clock = max_rooms, ttl_s, clock
        self._key = _env_key() or secrets.token_bytes(32)
        self.seats = room_seats() if max_followers is None else max_followers

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
            "followers": {},  # session -> (last check-in, client address)
            "per_client": SEATS_PER_CLIENT,
            "published": -float("inf"),  # when the last new view was taken
        }

    def _creations(self, client: str) -> deque[float]:
        """``client``'s recent creations (and restores); RoomError when it may make no more."""
        now, made = self._clock(), self._creates.setdefault(client, deque())
        while made and now - made[0] > CREATE_WINDOW_S:
            made.popleft()
        if len(made) >= creates_per_client():
            raise _rate_limited()
        return made

    def create(self, client: str = "") -> tuple[str, str]:
        with self._lock:
            made = self._creations(client)
            room_id = new_room_id()
            while room_id in self._rooms or room_id in self._ended:
                room_id = new_room_id()
            secret = issue_secret(self._key, room_id)
            self._insert(room_id, secret, 0, "{}")
            made.append(self._clock())
            return room_id, secret

    def issued(self, room_id: str, secret: str) -> bool:
        return signed_by(self._key, room_id, secret)

    def restore(
        self, room_id: str, secret: str, payload: dict[str, Any], version: int = 1, client: str = ""
    ) -> int:
        text = encode_payload(payload)
        if not self.issued(room_id, secret):
            raise _not_issued(room_id)
        with self._lock:
            if room_id in self._ended:
                raise RoomGone(f"room {room_id!r} was ended by its presenter")
            if self._live(room_id) is None:
                made = self._creations(client)
                self._insert(room_id, secret, version, text)
                made.append(self._clock())
        return self.publish(room_id, secret, payload)  # a taken id's other secret fails here

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
            room["seen"] = now = self._clock()
            changed = text is not None and text != room["text"]
            every_s = _publish_every(self._publish_every_s)
            if changed and now - room["published"] < every_s:
                raise _busy(every_s)
            if changed:
                room["text"], room["version"], room["published"] = text, room["version"] + 1, now
            version = room["version"]
        if changed:
            _notify(room_id)
        return version

    def status(self, room_id: str) -> Status | None:
        with self._lock:
            room = self._live(room_id)
            if room is None:
                return None
            now = self._clock()
            following = sum(now - t <= FOLLOWER_TTL_S for t, _ in room["followers"].values())
            asked = room.get("question")
            tag = "" if asked is None else asked.tag
            return Status(room["version"], now - room["seen"], following, room["per_client"], tag)

    def version(self, room_id: str) -> int | None:
        with self._lock:
            room = self._live(room_id)
            return None if room is None else room["version"]

    def snapshot(self, room_id: str) -> Snapshot | None:
        with self._lock:
            room = self._live(room_id)
            if room is None:
                return None
            return Snapshot(room["version"], json.loads(room["text"]), view_key(room["text"]))

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

    def follow(self, room_id: str, session: str, client: str = "") -> Seat:
        with self._lock:
            room = self._live(room_id)
            if room is None:
                raise _gone(room_id)
            seats, now = room["followers"], self._clock()
            for other in [s for s, (t, _) in seats.items() if now - t > FOLLOWER_TTL_S]:
                del seats[other]
            if session not in seats:
                if len(seats) >= self.seats:
                    return Seat.ROOM_FULL
                if sum(c == client for _, c in seats.values()) >= room["per_client"]:
                    return Seat.CLIENT_FULL
            seats[session] = (now, client)
            return Seat.TAKEN

    def set_per_client(self, room_id: str, secret: str, seats: int) -> None:
        seats = _per_client(seats, self.seats)
        with self._lock:
            room = self._live(room_id)
            if room is None:
                raise _gone(room_id)
            _check_secret(room["digest"], secret)
            room["per_client"] = seats

    def answer_cap(self) -> int:
        return min(self.seats, MAX_ANSWERS)

    def _presenters(self, room_id: str, secret: str) -> dict[str, Any]:
        room = self._live(room_id)
        if room is None:
            raise _gone(room_id)
        _check_secret(room["digest"], secret)
        return room

    def ask(self, room_id: str, secret: str, card: str, difficulty: str) -> Asked:
        asked = _asked(card, difficulty)
        with self._lock:
            room = self._presenters(room_id, secret)
            room["question"], room["answers"] = asked, {}
        _notify(room_id)
        return asked

    def close_question(self, room_id: str, secret: str) -> None:
        with self._lock:
            room = self._presenters(room_id, secret)
            if room.get("question") is None:
                return
            room["question"] = dataclasses.replace(room["question"], open=False)
        _notify(room_id)

    def question(self, room_id: str) -> Asked | None:
        with self._lock:
            room = self._live(room_id)
            return None if room is None else room.get("question")

    def answer(self, room_id: str, seat: str, question_id: str, text: str) -> None:
        _check_answer(question_id, seat, text)
        with self._lock:
            room = self._live(room_id)
            if room is None:
                raise _gone(room_id)
            asked = room.get("question")
            if asked is None or asked.id != question_id or not asked.open:
                raise _not_open()
            seen = room["followers"].get(seat)
            if seen is None or self._clock() - seen[0] > FOLLOWER_TTL_S:
                raise _not_seated()
            answers = room["answers"]
            if seat not in answers and len(answers) >= self.answer_cap():
                raise _answers_full(self.answer_cap())
            answers[seat] = text

    def answers(self, room_id: str, secret: str) -> tuple[dict[str, str], list[str]]:
        with self._lock:
            room = self._presenters(room_id, secret)
            now = self._clock()
            seated = [s for s, (t, _) in room["followers"].items() if now - t <= FOLLOWER_TTL_S]
            return dict(room.get("answers", {})), seated

    def put_frame(self, room_id: str, secret: str, view: str, blob: bytes) -> None:
        _check_frame(view, blob)
        with self._lock:
            room = self._live(room_id)
            if room is None:
                raise _gone(room_id)
            _check_secret(room["digest"], secret)
            room["frame"] = (view, blob)

    def frame(self, room_id: str) -> tuple[str, bytes] | None:
        with self._lock:
            room = self._live(room_id)
            return None if room is None else room.get("frame")

    def frame_view(self, room_id: str) -> str | None:
        found = self.frame(room_id)
        return None if found is None else found[0]

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

# KEYS: room hash, live-rooms zset, answers hash (its expiry follows the room's). ARGV: id, digest,
# ttl, text ('' = a check-in only), channel,
# seconds between new views. Returns the version, -1 missing, -2 wrong secret, -3 too soon (checked
# in, view not taken). The digest is compared with ==: it is the SHA-256 of a secret with a
# 96-bit random nonce and a 128-bit HMAC, so timing reveals nothing usable about the secret.
_PUBLISH = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'digest', 'version', 'text', 'published')
if not h[1] then return -1 end
if h[1] ~= ARGV[2] then return -2 end
local v = tonumber(h[2])
local busy = false
if ARGV[4] ~= '' and ARGV[4] ~= h[3] then
  if h[4] and now - tonumber(h[4]) < tonumber(ARGV[6]) then
    busy = true
  else
    v = v + 1
    redis.call('HSET', KEYS[1], 'version', v, 'text', ARGV[4], 'published', now)
    redis.call('PUBLISH', ARGV[5], ARGV[1])
  end
end
redis.call('HSET', KEYS[1], 'seen', now)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[3])
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
if busy then return -3 end
return v
"""
)

# KEYS: room hash, followers zset. ARGV: follower ttl, default seats per client.
# Returns {version, seconds since the presenter was seen, followers, seats per client, question tag}
# or nil.
_STATUS = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'version', 'seen', 'per_client', 'q_id', 'q_state')
if not h[1] then return nil end
local following = redis.call('ZCOUNT', KEYS[2], now - tonumber(ARGV[1]), '+inf')
local tag = ''
if h[4] then tag = h[4] .. ':' .. h[5] end
return {h[1], tostring(now - tonumber(h[2])), following, h[3] or ARGV[2], tag}
"""
)

# KEYS: room hash, followers zset (session -> last check-in), this client's followers zset.
# ARGV: session, seats, follower ttl, default seats per client.
# Returns 1 seated, 0 room full, -2 client full, -1 no such room.
_FOLLOW = (
    _NOW
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local since = now - tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', since)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', since)
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[2]) then return 0 end
  local per = tonumber(redis.call('HGET', KEYS[1], 'per_client') or ARGV[4])
  if redis.call('ZCARD', KEYS[3]) >= per then return -2 end
end
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('ZADD', KEYS[3], now, ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[3])
return 1
"""
)

# KEYS: room hash, frame hash. ARGV: digest, view key, frame bytes, ttl.
# Returns 1 kept, -1 no room, -2 wrong secret.
_PUT_FRAME = """
local d = redis.call('HGET', KEYS[1], 'digest')
if not d then return -1 end
if d ~= ARGV[1] then return -2 end
redis.call('HSET', KEYS[2], 'view', ARGV[2], 'blob', ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
"""

# KEYS: room hash. ARGV: digest, seats per client. Returns 1 set, -1 missing, -2 wrong secret.
_PER_CLIENT = """
local d = redis.call('HGET', KEYS[1], 'digest')
if not d then return -1 end
if d ~= ARGV[1] then return -2 end
redis.call('HSET', KEYS[1], 'per_client', ARGV[2])
return 1
"""


# KEYS: room hash, answers hash. ARGV: digest, question id, question JSON, channel, room id.
# Returns 1 asked, -1 missing, -2 wrong secret. The last question's answers go with it.
_ASK = """
local d = redis.call('HGET', KEYS[1], 'digest')
if not d then return -1 end
if d ~= ARGV[1] then return -2 end
redis.call('HSET', KEYS[1], 'q_id', ARGV[2], 'question', ARGV[3], 'q_state', 'open')
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
"""

# KEYS: room hash. ARGV: digest, channel, room id. Returns 1 closed (or none asked), -1, -2.
_CLOSE_QUESTION = """
local h = redis.call('HMGET', KEYS[1], 'digest', 'q_id')
if not h[1] then return -1 end
if h[1] ~= ARGV[1] then return -2 end
if h[2] then
  redis.call('HSET', KEYS[1], 'q_state', 'closed')
  redis.call('PUBLISH', ARGV[2], ARGV[3])
end
return 1
"""

# KEYS: room hash, answers hash, followers zset. ARGV: question id, seat, text, most answers,
# follower ttl. Returns 1 kept, -1 no room, -2 not the open question, -3 not seated, -4 full.
# The answers expire with the room (its remaining TTL, refreshed by each presenter check-in).
_ANSWER = (
    _NOW
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local h = redis.call('HMGET', KEYS[1], 'q_id', 'q_state')
if h[1] ~= ARGV[1] or h[2] ~= 'open' then return -2 end
local seen = redis.call('ZSCORE', KEYS[3], ARGV[2])
if not seen or tonumber(seen) < now - tonumber(ARGV[5]) then return -3 end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[4]) then
  return -4
end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
local ttl = redis.call('TTL', KEYS[1])
if ttl > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
return 1
"""
)

# KEYS: room hash, answers hash, followers zset. ARGV: digest, follower ttl.
# Returns {flat answers, seated seats}, or -1 missing, -2 wrong secret.
_ANSWERS = (
    _NOW
    + """
local d = redis.call('HGET', KEYS[1], 'digest')
if not d then return -1 end
if d ~= ARGV[1] then return -2 end
return {redis.call('HGETALL', KEYS[2]), redis.call('ZRANGEBYSCORE', KEYS[3], now - tonumber(ARGV[2]), '+inf')}
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
    FRAME = "attn_lab:frame:"  # a room's latest drawn page (view key, bytes)
    ANSWERS = "attn_lab:answers:"  # the question's answers: seat -> text, expiring with the room
    KEY = "attn_lab:signing-key"  # the shared key that signs presenter secrets (without ATTN_LAB_SECRET)
    CHANNEL = "attn_lab:room-changed"  # every replica hears every room's changes

    def __init__(
        self,
        url: str,
        max_rooms: int = MAX_ROOMS,
        ttl_s: int = PRESENTER_TTL_S,
        max_followers: int | None = None,
        publish_every_s: float | None = None,
    ):
        import redis  # only where Redis is configured

        self._publish_every_s = publish_every_s  # None: PUBLISH_EVERY_S (_publish_every)
        self._r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=2, socket_connect_timeout=2)
        self._max, self._ttl = max_rooms, int(ttl_s)
        self.seats = room_seats() if max_followers is None else max_followers
        self._url = url
        self._env_key = _env_key()
        self._key: bytes | None = self._env_key
        self._create = self._r.register_script(_CREATE)
        self._publish = self._r.register_script(_PUBLISH)
        self._status = self._r.register_script(_STATUS)
        self._follow = self._r.register_script(_FOLLOW)
        self._per_client = self._r.register_script(_PER_CLIENT)
        self._ask = self._r.register_script(_ASK)
        self._close_question = self._r.register_script(_CLOSE_QUESTION)
        self._answer = self._r.register_script(_ANSWER)
        self._answers = self._r.register_script(_ANSWERS)
        # frames are bytes: a client that does not decode them
        self._raw = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._put_frame = self._raw.register_script(_PUT_FRAME)
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

    def _key_of(self, room_id: str) -> str:
        return self.PREFIX + room_id

    def _insert(self, room_id: str, secret: str, client: str | None, version: int, text: str) -> int:
        keys = [self._key_of(room_id), self.LIVE, "" if client is None else self.CREATES + client]
        args = [room_id, _digest(secret), self._max, self._ttl, creates_per_client(), CREATE_WINDOW_S]
        made = int(self._create(keys=keys, args=[*args, version, text]))
        if made == -1:
            raise _full(self._max)
        if made == -2:
            raise _rate_limited()
        return made

    def _signing_key(self) -> bytes:
        """ATTN_LAB_SECRET, else the key every replica shares through Redis: the first replica
        to need one makes it (SET NX); a Redis that lost it gets this process's copy back."""
        if self._key is None:
            self._r.set(self.KEY, secrets.token_hex(32), nx=True)
            self._key = self._r.get(self.KEY).encode()
        elif not self._env_key:
            self._r.set(self.KEY, self._key.decode(), nx=True)
        return self._key

    @_redis_call
    def create(self, client: str = "") -> tuple[str, str]:
        key = self._signing_key()
        for _ in range(8):
            room_id = new_room_id()
            if self._r.exists(self.ENDED + room_id):
                continue
            secret = issue_secret(key, room_id)
            if self._insert(room_id, secret, client, 0, "{}"):
                return room_id, secret
        raise RoomError("could not find a free room id; try again")

    @_redis_call
    def issued(self, room_id: str, secret: str) -> bool:
        return signed_by(self._signing_key(), room_id, secret)

    @_redis_call
    def restore(
        self, room_id: str, secret: str, payload: dict[str, Any], version: int = 1, client: str = ""
    ) -> int:
        if not self.issued(room_id, secret):
            raise _not_issued(room_id)
        if self._r.exists(self.ENDED + room_id):
            raise RoomGone(f"room {room_id!r} was ended by its presenter")
        if not self._r.exists(self._key_of(room_id)):
            self._insert(room_id, secret, client, version, encode_payload(payload))
        return self.publish(room_id, secret, payload)  # a taken id's other secret fails here

    @_redis_call
    def publish(self, room_id: str, secret: str, payload: dict[str, Any] | None) -> int:
        text = "" if payload is None else encode_payload(payload)
        if not isinstance(secret, str):
            raise RoomError("only the presenter who started this room can change it")
        keys = [self._key_of(room_id), self.LIVE, self.ANSWERS + room_id]
        every_s = _publish_every(self._publish_every_s)
        args = [room_id, _digest(secret), self._ttl, text, self.CHANNEL, every_s]
        version = int(self._publish(keys=keys, args=args))
        if version == -1:
            raise _gone(room_id)
        if version == -2:
            raise RoomError("only the presenter who started this room can change it")
        if version == -3:
            raise _busy(every_s)
        return version

    @_redis_call
    def status(self, room_id: str) -> Status | None:
        got = self._status(
            keys=[self._key_of(room_id), self.FOLLOWERS + room_id], args=[FOLLOWER_TTL_S, SEATS_PER_CLIENT]
        )
        if got is None:
            return None
        return Status(int(got[0]), max(0.0, float(got[1])), int(got[2]), int(got[3]), got[4])

    @_redis_call
    def version(self, room_id: str) -> int | None:
        value = self._r.hget(self._key_of(room_id), "version")
        return None if value is None else int(value)

    @_redis_call
    def snapshot(self, room_id: str) -> Snapshot | None:
        version, text = self._r.hmget(self._key_of(room_id), "version", "text")
        return None if version is None else Snapshot(int(version), json.loads(text), view_key(text))

    @_redis_call
    def close(self, room_id: str, secret: str) -> None:
        digest = self._r.hget(self._key_of(room_id), "digest")
        if digest is not None:
            _check_secret(digest, secret)
            with self._r.pipeline() as pipe:  # MULTI: the tombstone and the deletion together
                pipe.set(self.ENDED + room_id, 1, ex=ENDED_TTL_S)
                pipe.delete(
                    self._key_of(room_id),
                    self.FOLLOWERS + room_id,
                    self.FRAME + room_id,
                    self.ANSWERS + room_id,
                )
                pipe.zrem(self.LIVE, room_id)
                pipe.publish(self.CHANNEL, room_id)
                pipe.execute()

    @_redis_call
    def ended(self, room_id: str) -> bool:
        return bool(self._r.exists(self.ENDED + room_id))

    @_redis_call
    def follow(self, room_id: str, session: str, client: str = "") -> Seat:
        keys = [
            self._key_of(room_id),
            self.FOLLOWERS + room_id,
            f"{self.FOLLOWERS}{room_id}:{_client_key(client)}",
        ]
        args = [session, self.seats, FOLLOWER_TTL_S, SEATS_PER_CLIENT]
        seated = int(self._follow(keys=keys, args=args))
        if seated == -1:
            raise _gone(room_id)
        return {1: Seat.TAKEN, 0: Seat.ROOM_FULL}.get(seated, Seat.CLIENT_FULL)

    @_redis_call
    def set_per_client(self, room_id: str, secret: str, seats: int) -> None:
        seats = _per_client(seats, self.seats)
        if not isinstance(secret, str):
            raise RoomError("only the presenter who started this room can change it")
        done = int(self._per_client(keys=[self._key_of(room_id)], args=[_digest(secret), seats]))
        if done == -1:
            raise _gone(room_id)
        if done == -2:
            raise RoomError("only the presenter who started this room can change it")

    def answer_cap(self) -> int:
        return min(self.seats, MAX_ANSWERS)

    @staticmethod
    def _presenter_done(done: int, room_id: str) -> None:
        if done == -1:
            raise _gone(room_id)
        if done == -2:
            raise RoomError("only the presenter who started this room can change it")

    @_redis_call
    def ask(self, room_id: str, secret: str, card: str, difficulty: str) -> Asked:
        asked = _asked(card, difficulty)
        if not isinstance(secret, str):
            raise RoomError("only the presenter who started this room can change it")
        keys = [self._key_of(room_id), self.ANSWERS + room_id]
        args = [_digest(secret), asked.id, asked.encode(), self.CHANNEL, room_id]
        self._presenter_done(int(self._ask(keys=keys, args=args)), room_id)
        return asked

    @_redis_call
    def close_question(self, room_id: str, secret: str) -> None:
        if not isinstance(secret, str):
            raise RoomError("only the presenter who started this room can change it")
        args = [_digest(secret), self.CHANNEL, room_id]
        self._presenter_done(int(self._close_question(keys=[self._key_of(room_id)], args=args)), room_id)

    @_redis_call
    def question(self, room_id: str) -> Asked | None:
        text, state = self._r.hmget(self._key_of(room_id), "question", "q_state")
        return None if text is None else Asked.decode(text, state)

    @_redis_call
    def answer(self, room_id: str, seat: str, question_id: str, text: str) -> None:
        _check_answer(question_id, seat, text)
        keys = [self._key_of(room_id), self.ANSWERS + room_id, self.FOLLOWERS + room_id]
        args = [question_id, seat, text, self.answer_cap(), FOLLOWER_TTL_S]
        done = int(self._answer(keys=keys, args=args))
        if done == -1:
            raise _gone(room_id)
        if done == -2:
            raise _not_open()
        if done == -3:
            raise _not_seated()
        if done == -4:
            raise _answers_full(self.answer_cap())

    @_redis_call
    def answers(self, room_id: str, secret: str) -> tuple[dict[str, str], list[str]]:
        if not isinstance(secret, str):
            raise RoomError("only the presenter who started this room can change it")
        keys = [self._key_of(room_id), self.ANSWERS + room_id, self.FOLLOWERS + room_id]
        got = self._answers(keys=keys, args=[_digest(secret), FOLLOWER_TTL_S])
        if not isinstance(got, list):
            self._presenter_done(int(got), room_id)
        flat, seated = got
        return dict(zip(flat[::2], flat[1::2], strict=True)), list(seated)

    @_redis_call
    def put_frame(self, room_id: str, secret: str, view: str, blob: bytes) -> None:
        _check_frame(view, blob)
        if not isinstance(secret, str):
            raise RoomError("only the presenter who started this room can change it")
        keys = [self._key_of(room_id), self.FRAME + room_id]
        done = int(self._put_frame(keys=keys, args=[_digest(secret), view, blob, self._ttl]))
        if done == -1:
            raise _gone(room_id)
        if done == -2:
            raise RoomError("only the presenter who started this room can change it")

    @_redis_call
    def frame(self, room_id: str) -> tuple[str, bytes] | None:
        view, blob = self._raw.hmget(self.FRAME + room_id, "view", "blob")
        return None if view is None or blob is None else (view.decode(), blob)

    @_redis_call
    def frame_view(self, room_id: str) -> str | None:
        """Only the latest frame's view key (a few bytes: is the frame I hold still the latest?)."""
        return self._r.hget(self.FRAME + room_id, "view")


def _client_key(client: str) -> str:
    """A client address as a fixed-length Redis key part (an address may be any string)."""
    return hashlib.sha256(client.encode()).hexdigest()[:24]


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
