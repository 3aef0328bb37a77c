"""Rooms in Redis, shared by every replica behind a proxy (``ATTN_LAB_ROOMS=redis://…``; no
Streamlit). Creating, publishing, following and answering are each one Lua script
(redis_scripts), so the caps hold between replicas and no room is ever written without its expiry.
A Redis that cannot be reached raises `RoomsUnavailable` (a `RoomError` with a plain message),
never a redis exception. Every replica hears every room's changes on one channel and tells this
process's listeners (records.on_change)."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import secrets
import threading
import time
from typing import Any

from classroom_store import redis_scripts as scripts
from classroom_store import signing
from classroom_store.question import (
    Asked,
    answer_cap,
    answers_full,
    answers_per_client,
    check_answer,
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
    RoomError,
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
    not_presenter,
    notify,
    per_client_seats,
    publish_every,
    rate_limited,
    room_seats,
    unavailable,
    view_key,
)

_LOG = logging.getLogger(__name__)


def _redis_call(method):
    """Turn the redis client's errors into RoomsUnavailable (logged once per call)."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        import redis

        try:
            return method(self, *args, **kwargs)
        except redis.RedisError as err:
            _LOG.warning("room store: %s", err)
            raise unavailable() from err

    return call


class RedisRooms:
    """Rooms in Redis, shared by every replica: one hash per room, expiring when its presenter
    has not been seen for the TTL, and a sorted set of live rooms (id -> expiry) for the cap."""

    PREFIX = "attn_lab:room:"
    LIVE = "attn_lab:rooms"
    ENDED = "attn_lab:ended:"
    CREATES = "attn_lab:created:"  # per client: a zset of the room ids it made in the window
    FOLLOWERS = "attn_lab:followers:"
    FRAME = "attn_lab:frame:"  # a room's latest drawn page (view key, bytes)
    ANSWERS = "attn_lab:answers:"  # the question's answers: seat -> text, expiring with the room
    SEAT_CLIENTS = "attn_lab:seat-clients:"  # seat -> its address key, as follow was told
    ANSWERED = "attn_lab:answered:"  # who answered it: s:<seat> -> address key, c:<address key> -> count
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
        self._env_key = signing.env_key()
        self._key: bytes | None = self._env_key
        self._create = self._r.register_script(scripts.CREATE)
        self._publish = self._r.register_script(scripts.PUBLISH)
        self._status = self._r.register_script(scripts.STATUS)
        self._follow = self._r.register_script(scripts.FOLLOW)
        self._per_client = self._r.register_script(scripts.PER_CLIENT)
        self._ask = self._r.register_script(scripts.ASK)
        self._close_question = self._r.register_script(scripts.CLOSE_QUESTION)
        self._clear_question = self._r.register_script(scripts.CLEAR_QUESTION)
        self._answer = self._r.register_script(scripts.ANSWER)
        self._answers = self._r.register_script(scripts.ANSWERS)
        # frames are bytes: a client that does not decode them
        self._raw = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self._put_frame = self._raw.register_script(scripts.PUT_FRAME)
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
                        notify(message["data"])
            except redis.RedisError:
                time.sleep(1)

    def _key_of(self, room_id: str) -> str:
        return self.PREFIX + room_id

    def _insert(self, room_id: str, secret: str, client: str | None, version: int, text: str) -> int:
        keys = [self._key_of(room_id), self.LIVE, "" if client is None else self.CREATES + client]
        args = [room_id, signing.digest(secret), self._max, self._ttl, creates_per_client(), CREATE_WINDOW_S]
        made = int(self._create(keys=keys, args=[*args, version, text]))
        if made == -1:
            raise full(self._max)
        if made == -2:
            raise rate_limited()
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
            secret = signing.issue_secret(key, room_id)
            if self._insert(room_id, secret, client, 0, "{}"):
                return room_id, secret
        raise RoomError("could not find a free room id; try again")

    @_redis_call
    def issued(self, room_id: str, secret: str) -> bool:
        return signing.signed_by(self._signing_key(), room_id, secret)

    @_redis_call
    def restore(
        self, room_id: str, secret: str, payload: dict[str, Any], version: int = 1, client: str = ""
    ) -> int:
        if not self.issued(room_id, secret):
            raise signing.not_issued(room_id)
        if self._r.exists(self.ENDED + room_id):
            raise RoomGone(f"room {room_id!r} was ended by its presenter")
        if not self._r.exists(self._key_of(room_id)):
            self._insert(room_id, secret, client, version, encode_payload(payload))
        return self.publish(room_id, secret, payload)  # a taken id's other secret fails here

    @_redis_call
    def publish(self, room_id: str, secret: str, payload: dict[str, Any] | None) -> int:
        text = "" if payload is None else encode_payload(payload)
        keys = [self._key_of(room_id), self.LIVE, self.ANSWERS + room_id, self.ANSWERED + room_id]
        every_s = publish_every(self._publish_every_s)
        args = [room_id, signing.presenter_digest(secret), self._ttl, text, self.CHANNEL, every_s]
        version = int(self._publish(keys=keys, args=args))
        self._presenter_done(version, room_id)
        if version == -3:
            raise busy(every_s)
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
            signing.check_secret(digest, secret)
            with self._r.pipeline() as pipe:  # MULTI: the tombstone and the deletion together
                pipe.set(self.ENDED + room_id, 1, ex=ENDED_TTL_S)
                pipe.delete(
                    self._key_of(room_id),
                    self.FOLLOWERS + room_id,
                    self.FRAME + room_id,
                    self.ANSWERS + room_id,
                    self.ANSWERED + room_id,
                    self.SEAT_CLIENTS + room_id,
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
            self.SEAT_CLIENTS + room_id,
        ]
        args = [session, self.seats, FOLLOWER_TTL_S, SEATS_PER_CLIENT, _client_key(client)]
        seated = int(self._follow(keys=keys, args=args))
        if seated == -1:
            raise gone(room_id)
        return {1: Seat.TAKEN, 0: Seat.ROOM_FULL}.get(seated, Seat.CLIENT_FULL)

    @_redis_call
    def set_per_client(self, room_id: str, secret: str, seats: int) -> None:
        seats = per_client_seats(seats, self.seats)
        done = int(
            self._per_client(keys=[self._key_of(room_id)], args=[signing.presenter_digest(secret), seats])
        )
        self._presenter_done(done, room_id)

    def answer_cap(self) -> int:
        return answer_cap(self.seats)

    @staticmethod
    def _presenter_done(done: int, room_id: str) -> None:
        """A presenter's script's answer: -1 no room, -2 wrong secret (see redis_scripts)."""
        if done == -1:
            raise gone(room_id)
        if done == -2:
            raise not_presenter()

    @_redis_call
    def ask(self, room_id: str, secret: str, card: str, difficulty: str) -> Asked:
        asked = new_question(card, difficulty)
        keys = [self._key_of(room_id), self.ANSWERS + room_id, self.ANSWERED + room_id]
        args = [signing.presenter_digest(secret), asked.id, asked.encode(), self.CHANNEL, room_id]
        self._presenter_done(int(self._ask(keys=keys, args=args)), room_id)
        return asked

    @_redis_call
    def close_question(self, room_id: str, secret: str) -> None:
        args = [signing.presenter_digest(secret), self.CHANNEL, room_id]
        self._presenter_done(int(self._close_question(keys=[self._key_of(room_id)], args=args)), room_id)

    @_redis_call
    def clear_question(self, room_id: str, secret: str) -> None:
        keys = [self._key_of(room_id), self.ANSWERS + room_id, self.ANSWERED + room_id]
        args = [signing.presenter_digest(secret), self.CHANNEL, room_id]
        self._presenter_done(int(self._clear_question(keys=keys, args=args)), room_id)

    @_redis_call
    def question(self, room_id: str) -> Asked | None:
        text, state = self._r.hmget(self._key_of(room_id), "question", "q_state")
        return None if text is None else Asked.decode(text, state)

    @_redis_call
    def answer(self, room_id: str, seat: str, question_id: str, text: str) -> None:
        check_answer(question_id, seat, text)
        keys = [
            self._key_of(room_id),
            self.ANSWERS + room_id,
            self.FOLLOWERS + room_id,
            self.SEAT_CLIENTS + room_id,
            self.ANSWERED + room_id,
        ]
        args = [question_id, seat, text, self.answer_cap(), FOLLOWER_TTL_S, SEATS_PER_CLIENT]
        done = int(self._answer(keys=keys, args=args))
        if done == -1:
            raise gone(room_id)
        if done == -2:
            raise not_open()
        if done == -3:
            raise not_seated()
        if done == -4:
            raise answers_full(self.answer_cap())
        if done < -4:
            raise answers_per_client(-done - 4)

    @_redis_call
    def answers(self, room_id: str, secret: str) -> tuple[dict[str, str], list[str]]:
        keys = [self._key_of(room_id), self.ANSWERS + room_id, self.FOLLOWERS + room_id]
        got = self._answers(keys=keys, args=[signing.presenter_digest(secret), FOLLOWER_TTL_S])
        if not isinstance(got, list):
            self._presenter_done(int(got), room_id)
        flat, seated = got
        return dict(zip(flat[::2], flat[1::2], strict=True)), list(seated)

    @_redis_call
    def put_frame(self, room_id: str, secret: str, view: str, blob: bytes) -> None:
        check_frame(view, blob)
        keys = [self._key_of(room_id), self.FRAME + room_id]
        done = int(self._put_frame(keys=keys, args=[signing.presenter_digest(secret), view, blob, self._ttl]))
        self._presenter_done(done, room_id)

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
