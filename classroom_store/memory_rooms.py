"""Rooms in this process's memory (no Streamlit): the store for a single server, the default.
Every call holds one lock, so the caps hold between sessions; rooms, their followers' seats and
the creations per client age out by the store's clock."""

from __future__ import annotations

import dataclasses
import json
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

from classroom_store import signing
from classroom_store.question import (
    Asked,
    FirstAnswer,
    answer_cap,
    check_answer,
    make_way,
    new_question,
    not_open,
    not_seated,
)
from classroom_store.records import (
    CREATE_WINDOW_S,
    ENDED_TTL_S,
    FOLLOWER_TTL_S,
    MAX_ROOMS,
    PRESENTER_TTL_S,
    SEATS_PER_CLIENT,
    RoomGone,
    Seat,
    Snapshot,
    Status,
    busy,
    check_frame,
    creates_per_client,
    encode_payload,
    full,
    gone,
    new_room_id,
    notify,
    per_client_seats,
    publish_every,
    rate_limited,
    room_seats,
    view_key,
)


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
        self._creates: dict[str, dict[str, float]] = {}  # client -> {room id: when it was made}
        self._lock = threading.Lock()
        self._max, self._ttl, self._clock = max_rooms, ttl_s, clock
        self._key = signing.env_key() or secrets.token_bytes(32)
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
            raise full(self._max)
        self._rooms[room_id] = {
            "digest": signing.digest(secret),
            "version": version,
            "text": text,
            "seen": self._clock(),
            "followers": {},  # session -> (last check-in, client address)
            "per_client": SEATS_PER_CLIENT,
            "published": -float("inf"),  # when the last new view was taken
        }

    def _creations(self, client: str, room_id: str = "") -> dict[str, float]:
        """``client``'s rooms made (or restored) in the window, by id; RoomError when it may make
        no more. Restoring a room it made in the window is not another room."""
        now, made = self._clock(), self._creates.setdefault(client, {})
        for old in [r for r, t in made.items() if now - t > CREATE_WINDOW_S]:
            del made[old]
        if room_id not in made and len(made) >= creates_per_client():
            raise rate_limited()
        return made

    def create(self, client: str = "") -> tuple[str, str]:
        with self._lock:
            made = self._creations(client)
            room_id = new_room_id()
            while room_id in self._rooms or room_id in self._ended:
                room_id = new_room_id()
            secret = signing.issue_secret(self._key, room_id)
            self._insert(room_id, secret, 0, "{}")
            made[room_id] = self._clock()
            return room_id, secret

    def issued(self, room_id: str, secret: str) -> bool:
        return signing.signed_by(self._key, room_id, secret)

    def restore(
        self, room_id: str, secret: str, payload: dict[str, Any], version: int = 1, client: str = ""
    ) -> int:
        text = encode_payload(payload)
        if not self.issued(room_id, secret):
            raise signing.not_issued(room_id)
        with self._lock:
            if room_id in self._ended:
                raise RoomGone(f"room {room_id!r} was ended by its presenter")
            if self._live(room_id) is None:
                made = self._creations(client, room_id)
                self._insert(room_id, secret, version, text)
                made.setdefault(room_id, self._clock())
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
            room = self._presenters(room_id, secret)
            room["seen"] = now = self._clock()
            changed = text is not None and text != room["text"]
            every_s = publish_every(self._publish_every_s)
            if changed and now - room["published"] < every_s:
                raise busy(every_s)
            if changed:
                room["text"], room["version"], room["published"] = text, room["version"] + 1, now
            version = room["version"]
        if changed:
            notify(room_id)
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
            signing.check_secret(room["digest"], secret)
            del self._rooms[room_id]
            self._ended[room_id] = self._clock()
        notify(room_id)

    def ended(self, room_id: str) -> bool:
        with self._lock:
            self._expire()
            return room_id in self._ended

    def follow(self, room_id: str, session: str, client: str = "") -> Seat:
        with self._lock:
            room = self._found(room_id)
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
        seats = per_client_seats(seats, self.seats)
        with self._lock:
            self._presenters(room_id, secret)["per_client"] = seats

    def answer_cap(self) -> int:
        return answer_cap(self.seats)

    def _found(self, room_id: str) -> dict[str, Any]:
        """The live room (RoomGone when there is none); call under the lock."""
        room = self._live(room_id)
        if room is None:
            raise gone(room_id)
        return room

    def _presenters(self, room_id: str, secret: str) -> dict[str, Any]:
        """The live room, for its presenter only; call under the lock."""
        room = self._found(room_id)
        signing.check_secret(room["digest"], secret)
        return room

    def ask(self, room_id: str, secret: str, card: str, difficulty: str) -> Asked:
        asked = new_question(card, difficulty)
        with self._lock:
            room = self._presenters(room_id, secret)
            room["question"], room["answers"], room["answered_by"] = asked, {}, {}
        notify(room_id)
        return asked

    def close_question(self, room_id: str, secret: str) -> None:
        with self._lock:
            room = self._presenters(room_id, secret)
            if room.get("question") is None:
                return
            room["question"] = dataclasses.replace(room["question"], open=False)
        notify(room_id)

    def clear_question(self, room_id: str, secret: str) -> None:
        with self._lock:
            room = self._presenters(room_id, secret)
            if room.pop("question", None) is None:
                return
            room.pop("answers", None)
            room.pop("answered_by", None)
        notify(room_id)

    def question(self, room_id: str) -> Asked | None:
        with self._lock:
            room = self._live(room_id)
            return None if room is None else room.get("question")

    def answer(self, room_id: str, seat: str, question_id: str, text: str) -> None:
        check_answer(question_id, seat, text)
        with self._lock:
            room = self._found(room_id)
            asked = room.get("question")
            if asked is None or asked.id != question_id or not asked.open:
                raise not_open()
            now = self._clock()
            seen = room["followers"].get(seat)
            if seen is None or now - seen[0] > FOLLOWER_TTL_S:
                raise not_seated()
            answers = room["answers"]
            if seat not in answers:
                self._make_way(room, seat, seen[1], now)
            answers[seat] = text

    def _make_way(self, room: dict[str, Any], seat: str, client: str, now: float) -> None:
        """Room for a new answer from ``seat`` at ``client`` (the rule: `question.make_way`): the
        answer of a seat that has left goes where the room is full. Call under the lock."""
        by_client = room.setdefault("answered_by", {}).setdefault(client, set())
        answers, followers = room["answers"], room["followers"]
        first = FirstAnswer(
            seat in by_client, len(by_client), room["per_client"], len(answers), self.answer_cap()
        )

        def departed() -> str | None:
            return next(
                (s for s in answers if s not in followers or now - followers[s][0] > FOLLOWER_TTL_S), None
            )

        left = make_way(first, departed)
        if left is not None:
            del answers[left]
        by_client.add(seat)

    def answers(self, room_id: str, secret: str) -> tuple[dict[str, str], list[str]]:
        with self._lock:
            room = self._presenters(room_id, secret)
            now = self._clock()
            seated = [s for s, (t, _) in room["followers"].items() if now - t <= FOLLOWER_TTL_S]
            return dict(room.get("answers", {})), seated

    def put_frame(self, room_id: str, secret: str, view: str, blob: bytes) -> None:
        check_frame(view, blob)
        with self._lock:
            self._presenters(room_id, secret)["frame"] = (view, blob)

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
