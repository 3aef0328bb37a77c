"""A room's records and the bounds it keeps (no Streamlit): what a store answers (`Snapshot`,
`Status`, `Seat`), its errors, its limits (the operator's from the environment), and the checks
every store makes the same way (a room id, a view's size, a frame's). Used by both stores
(memory_rooms, redis_rooms) and by the screens that drive them.

The bounds that keep one visitor from spoiling the classroom for everyone:
- at most MAX_ROOMS live rooms, and MAX_CREATES_PER_CLIENT (or the operator's
  ATTN_LAB_ROOMS_PER_CLIENT) new rooms per client address per CREATE_WINDOW_S;
- the presenter's screen checks in every second; a room whose presenter has not been seen for
  PRESENTER_TTL_S ends and frees its slot (a closed tab ages out its room);
- a room seats what the deployment serves (`room_seats`: SEATS_PER_REPLICA per replica, or the
  operator's ATTN_LAB_ROOM_SEATS); one client address holds at most SEATS_PER_CLIENT of them
  unless the room's presenter raises that (a class behind one NAT address); a follower that has
  not checked in for FOLLOWER_TTL_S frees its seat.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

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


def notify(room_id: str) -> None:
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


def unavailable() -> RoomsUnavailable:
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


class Seat(Enum):
    """What `follow` answers."""

    TAKEN = "taken"  # this screen has (or kept) a seat
    ROOM_FULL = "room full"  # every seat of the room is taken
    CLIENT_FULL = "client full"  # this client address holds all the seats it may in this room


def _int_env(name: str, env: Mapping[str, str], most: int = MAX_SEATS) -> int | None:
    """The operator's whole number ``name`` from 1 to ``most``; None when unset."""
    raw = env.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 1 <= int(raw) <= most:
        raise RoomError(f"{name} must be a whole number from 1 to {most:,}, got {raw[:20]!r}")
    return int(raw)


def creates_per_client(env: Mapping[str, str] = os.environ) -> int:
    """New rooms one client address may start per CREATE_WINDOW_S: the operator's
    ATTN_LAB_ROOMS_PER_CLIENT (1 to MAX_ROOMS; every teacher of a campus may share one address),
    else MAX_CREATES_PER_CLIENT."""
    return _int_env(CREATES_ENV, env, MAX_ROOMS) or MAX_CREATES_PER_CLIENT


def room_seats(env: Mapping[str, str] = os.environ) -> int:
    """Seats per room: the operator's ATTN_LAB_ROOM_SEATS, else SEATS_PER_REPLICA for each of the
    ATTN_LAB_REPLICAS replicas (one when unset: a single server)."""
    seats = _int_env(SEATS_ENV, env)
    if seats is not None:
        return seats
    return min(MAX_SEATS, SEATS_PER_REPLICA * (_int_env(REPLICAS_ENV, env) or 1))


def new_room_id() -> str:
    return "".join(secrets.choice(_ID_ALPHABET) for _ in range(6))


def valid_room_id(room_id: object) -> bool:
    return isinstance(room_id, str) and bool(ROOM_ID.match(room_id))


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


def check_frame(view: object, blob: object) -> None:
    if not isinstance(view, str) or len(view) != 32 or not isinstance(blob, bytes):
        raise RoomError("a frame is a view key and bytes")
    if len(blob) > MAX_FRAME_BYTES:
        raise RoomError(f"a room keeps frames up to {MAX_FRAME_BYTES // 2**20} MiB")


def full(max_rooms: int) -> RoomError:
    return RoomError(f"all {max_rooms} rooms are in use; try again when one has ended")


def rate_limited() -> RoomError:
    return RoomError(
        f"you started {creates_per_client()} rooms in the last {CREATE_WINDOW_S // 60} minutes; "
        "end one, or wait a few minutes"
    )


def per_client_seats(seats: object, room_seats: int) -> int:
    if isinstance(seats, bool) or not isinstance(seats, int) or not 1 <= seats <= room_seats:
        raise RoomError(f"seats per address must be a whole number from 1 to {room_seats:,}")
    return seats


def publish_every(store_s: float | None) -> float:
    """A store's least interval between new views: its own where it was built with one, else
    PUBLISH_EVERY_S as it stands now (read at each publish, never copied at construction)."""
    return PUBLISH_EVERY_S if store_s is None else store_s


def busy(every_s: float) -> RoomBusy:
    return RoomBusy(f"a room takes a new view at most every {every_s:g} s")


def gone(room_id: str) -> RoomGone:
    return RoomGone(f"room {room_id!r} has ended or expired")


def not_presenter() -> RoomError:
    return RoomError("only the presenter who started this room can change it")
