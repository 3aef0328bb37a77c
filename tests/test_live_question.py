"""A live question in a room (lab_ui.classroom.rooms): the presenter asks a drill, seated followers
answer, one answer per seat, and the counts come out grouped by slip, with both room backends.

Oracle: card 13's KV cache per token computed here from the question's own drawn numbers,
2 · L · H_kv · d_h · b bytes (the right answer), and the same product with the query heads H (the
"query heads" slip); the expected counts are written down from the answers the followers give."""

from __future__ import annotations

import pytest

from attn_core.practice import drills
from attn_core.practice.tally import tally
from lab_ui.classroom import rooms

BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1, "fp8": 1}


@pytest.fixture(params=["memory", "redis"])
def store(request, tmp_path):
    if request.param == "memory":
        yield rooms.MemoryRooms(publish_every_s=0)
        return
    from redis_server import RedisServer

    server = RedisServer(tmp_path, persist=False).start()
    try:
        yield rooms.RedisRooms(server.url, publish_every_s=0)
    finally:
        server.stop()


def kib(asked: rooms.Asked) -> tuple[float, float]:
    """(right answer, the query-heads slip) in KiB per token, from the drawn numbers."""
    i = drills.draw(asked.card, asked.seed, asked.difficulty).inputs
    b = BYTES[i["dtype"]]
    return 2 * i["layers"] * i["kv_heads"] * i["d_h"] * b / 1024, 2 * i["layers"] * i["heads"] * i[
        "d_h"
    ] * b / 1024


def seated_room(store, n: int):
    room_id, secret = store.create("teacher")
    seats = [f"seat{i}" for i in range(n)]
    for i, seat in enumerate(seats):
        assert store.follow(room_id, seat, f"10.0.0.{i}") is rooms.Seat.TAKEN
    return room_id, secret, seats


def test_a_room_of_answers_is_tallied_by_slip(store):
    room_id, secret, seats = seated_room(store, 4)
    asked = store.ask(room_id, secret, "13", "medium")
    assert store.question(room_id) == asked and asked.open
    assert store.status(room_id).question == asked.tag
    right, slip = kib(asked)
    assert right != slip  # GQA: fewer KV heads than query heads
    store.answer(room_id, seats[0], asked.id, f"{right:g}")
    store.answer(room_id, seats[1], asked.id, f"{slip:g} KiB")
    store.answer(room_id, seats[2], asked.id, f"{slip * 1024:.0f} B")  # the same slip in bytes
    # seats[3] gives no answer
    answers, seated = store.answers(room_id, secret)
    assert sorted(seated) == sorted(seats)
    t = tally(drills.draw(asked.card, asked.seed, asked.difficulty), answers, seats=seated)
    assert (t.seats, t.answered, t.right, t.wrong, t.no_answer) == (4, 3, 1, 2, 1)
    i = drills.draw(asked.card, asked.seed, asked.difficulty).inputs
    assert t.by_slip == ((f"used the {i['heads']} query heads instead of the {i['kv_heads']} KV heads", 2),)


def test_one_answer_per_seat_and_a_rewrite_replaces_it(store):
    room_id, secret, seats = seated_room(store, 1)
    asked = store.ask(room_id, secret, "13", "easy")
    right, slip = kib(asked)
    store.answer(room_id, seats[0], asked.id, f"{slip:g}")
    store.answer(room_id, seats[0], asked.id, f"{right:g}")
    answers, _ = store.answers(room_id, secret)
    assert answers == {seats[0]: f"{right:g}"}


def test_forged_oversize_and_unseated_answers_are_refused(store):
    room_id, secret, seats = seated_room(store, 1)
    asked = store.ask(room_id, secret, "13", "medium")
    with pytest.raises(rooms.RoomError, match="at most 2,000 characters"):
        store.answer(room_id, seats[0], asked.id, "1" * (rooms.MAX_ANSWER_CHARS + 1))
    with pytest.raises(rooms.RoomError, match="seated"):
        store.answer(room_id, "not-a-seat", asked.id, "1")  # a seat id that never followed
    with pytest.raises(rooms.RoomError, match="closed or has been replaced"):
        store.answer(room_id, seats[0], "forged", "1")  # not the room's question
    with pytest.raises(rooms.RoomError, match="only the presenter"):
        store.answers(room_id, "forged-secret")
    with pytest.raises(rooms.RoomError, match="only the presenter"):
        store.ask(room_id, "forged-secret", "13", "medium")
    with pytest.raises(rooms.RoomError, match="card number"):
        store.ask(room_id, secret, "13; DROP", "medium")
    with pytest.raises(rooms.RoomError, match="difficulty"):
        store.ask(room_id, secret, "13", "impossible")
    assert store.answers(room_id, secret) == ({}, seats)


def test_answers_are_capped_by_the_rooms_seats(store):
    store.seats = 2  # a room of two seats keeps two answers
    room_id, secret, seats = seated_room(store, 2)
    asked = store.ask(room_id, secret, "13", "medium")
    store.answer(room_id, seats[0], asked.id, "1")
    store.answer(room_id, seats[1], asked.id, "2")
    store.answer(room_id, seats[1], asked.id, "3")  # a rewrite is not a new answer
    assert store.answer_cap() == 2
    assert len(store.answers(room_id, secret)[0]) == 2


def test_a_new_question_or_a_closed_one_takes_no_old_answers(store):
    room_id, secret, seats = seated_room(store, 1)
    first = store.ask(room_id, secret, "13", "medium")
    store.answer(room_id, seats[0], first.id, "1")
    second = store.ask(room_id, secret, "13", "medium")
    assert second.id != first.id and second.seed != first.seed  # fresh numbers
    assert store.answers(room_id, secret)[0] == {}  # the last question's answers are gone
    with pytest.raises(rooms.RoomError, match="closed or has been replaced"):
        store.answer(room_id, seats[0], first.id, "1")
    store.answer(room_id, seats[0], second.id, "2")
    store.close_question(room_id, secret)
    closed = store.question(room_id)
    assert closed.id == second.id and not closed.open
    assert store.status(room_id).question == f"{second.id}:closed"
    with pytest.raises(rooms.RoomError, match="closed"):
        store.answer(room_id, seats[0], second.id, "3")
    assert store.answers(room_id, secret)[0] == {seats[0]: "2"}  # kept for the presenter's tally


def test_the_answers_end_with_the_room(store):
    room_id, secret, seats = seated_room(store, 1)
    asked = store.ask(room_id, secret, "13", "medium")
    store.answer(room_id, seats[0], asked.id, "1")
    store.close(room_id, secret)
    assert store.question(room_id) is None
    if isinstance(store, rooms.RedisRooms):
        assert not store._r.exists(store.ANSWERS + room_id)
        left = [k for k in store._r.keys("*") if room_id in k and "ended" not in k]
        # only the per-address seat set, holding random seat ids, expiring with the seats
        assert all(k.startswith(store.FOLLOWERS) for k in left), left
        assert all(0 < store._r.ttl(k) <= rooms.FOLLOWER_TTL_S for k in left)


def test_redis_answers_expire_with_the_room(tmp_path):
    """The answers hash carries the room's expiry, and a presenter's check-in refreshes both."""
    from redis_server import RedisServer

    server = RedisServer(tmp_path, persist=False).start()
    try:
        store = rooms.RedisRooms(server.url, ttl_s=30, publish_every_s=0)
        room_id, secret, seats = seated_room(store, 1)
        asked = store.ask(room_id, secret, "13", "medium")
        store.answer(room_id, seats[0], asked.id, "1")
        key = store.ANSWERS + room_id
        assert 0 < store._r.ttl(key) <= store._r.ttl(store._key_of(room_id)) <= 30
        store._r.expire(key, 5)
        store._r.expire(store._key_of(room_id), 5)
        store.publish(room_id, secret, None)  # the presenter's one-second check-in
        assert store._r.ttl(key) > 5 and store._r.ttl(store._key_of(room_id)) > 5
    finally:
        server.stop()


def test_memory_answers_age_out_with_the_room():
    now = [0.0]
    store = rooms.MemoryRooms(ttl_s=10, clock=lambda: now[0], publish_every_s=0)
    room_id, secret, seats = seated_room(store, 1)
    asked = store.ask(room_id, secret, "13", "medium")
    store.answer(room_id, seats[0], asked.id, "1")
    now[0] = 11.0  # the presenter has not checked in for longer than the room's TTL
    assert store.question(room_id) is None and store.status(room_id) is None
    assert room_id not in store._rooms  # the answers went with the room's dict
