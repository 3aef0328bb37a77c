"""A live question in a room (classroom_store.rooms): the presenter asks a drill, seated followers
answer, one answer per seat, and the counts come out grouped by slip, with both room backends.

Oracle: card 13's KV cache per token computed here from the question's own drawn numbers,
2 · L · H_kv · d_h · b bytes (the right answer), and the same product with the query heads H (the
"query heads" slip); the expected counts are written down from the answers the followers give."""

from __future__ import annotations

import pytest

from attn_core.practice import drills
from attn_core.practice.tally import tally
from classroom_store import memory_rooms, question, records, redis_rooms, rooms

BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1, "fp8": 1}


@pytest.fixture(params=["memory", "redis"])
def store(request, tmp_path):
    if request.param == "memory":
        yield memory_rooms.MemoryRooms(publish_every_s=0)
        return
    from redis_server import RedisServer

    server = RedisServer(tmp_path, persist=False).start()
    try:
        yield redis_rooms.RedisRooms(server.url, publish_every_s=0)
    finally:
        server.stop()


def kv_heads(inputs: dict) -> str:
    """How card 13 names the KV heads of its question: "1 KV head", "4 KV heads"."""
    n = inputs["kv_heads"]
    return f"{n} KV head" if n == 1 else f"{n} KV heads"


def kib(asked: question.Asked) -> tuple[float, float]:
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
        assert store.follow(room_id, seat, f"10.0.0.{i}") is records.Seat.TAKEN
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
    assert t.by_slip == ((f"used the {i['heads']} query heads instead of the {kv_heads(i)}", 2),)


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
    with pytest.raises(records.RoomError, match="at most 2,000 characters"):
        store.answer(room_id, seats[0], asked.id, "1" * (question.MAX_ANSWER_CHARS + 1))
    with pytest.raises(records.RoomError, match="seated"):
        store.answer(room_id, "not-a-seat", asked.id, "1")  # a seat id that never followed
    with pytest.raises(records.RoomError, match="closed or has been replaced"):
        store.answer(room_id, seats[0], "forged", "1")  # not the room's question
    with pytest.raises(records.RoomError, match="only the presenter"):
        store.answers(room_id, "forged-secret")
    with pytest.raises(records.RoomError, match="only the presenter"):
        store.ask(room_id, "forged-secret", "13", "medium")
    with pytest.raises(records.RoomError, match="card number"):
        store.ask(room_id, secret, "13; DROP", "medium")
    with pytest.raises(records.RoomError, match="difficulty"):
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
    with pytest.raises(records.RoomError, match="closed or has been replaced"):
        store.answer(room_id, seats[0], first.id, "1")
    store.answer(room_id, seats[0], second.id, "2")
    store.close_question(room_id, secret)
    closed = store.question(room_id)
    assert closed.id == second.id and not closed.open
    assert store.status(room_id).question == f"{second.id}:closed"
    with pytest.raises(records.RoomError, match="closed"):
        store.answer(room_id, seats[0], second.id, "3")
    assert store.answers(room_id, secret)[0] == {seats[0]: "2"}  # kept for the presenter's tally


def test_the_answers_end_with_the_room(store):
    room_id, secret, seats = seated_room(store, 1)
    asked = store.ask(room_id, secret, "13", "medium")
    store.answer(room_id, seats[0], asked.id, "1")
    store.close(room_id, secret)
    assert store.question(room_id) is None
    if isinstance(store, redis_rooms.RedisRooms):
        assert not store._r.exists(store.ANSWERS + room_id)
        left = [k for k in store._r.keys("*") if room_id in k and "ended" not in k]
        # only the per-address seat set, holding random seat ids, expiring with the seats
        assert all(k.startswith(store.FOLLOWERS) for k in left), left
        assert all(0 < store._r.ttl(k) <= records.FOLLOWER_TTL_S for k in left)


def test_redis_answers_expire_with_the_room(tmp_path):
    """The answers hash carries the room's expiry, and a presenter's check-in refreshes both."""
    from redis_server import RedisServer

    server = RedisServer(tmp_path, persist=False).start()
    try:
        store = redis_rooms.RedisRooms(server.url, ttl_s=30, publish_every_s=0)
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
    store = memory_rooms.MemoryRooms(ttl_s=10, clock=lambda: now[0], publish_every_s=0)
    room_id, secret, seats = seated_room(store, 1)
    asked = store.ask(room_id, secret, "13", "medium")
    store.answer(room_id, seats[0], asked.id, "1")
    now[0] = 11.0  # the presenter has not checked in for longer than the room's TTL
    assert store.question(room_id) is None and store.status(room_id) is None
    assert room_id not in store._rooms  # the answers went with the room's dict


# -- the whole app, through AppTest: a presenter on a lesson step, followers on the frames path ----


@pytest.fixture
def app_store(request, tmp_path, monkeypatch, store):
    """The app's room store is ``store`` (each backend in turn), taking every view at once."""
    from lab_ui.classroom import follower_screen

    monkeypatch.setattr(records, "PUBLISH_EVERY_S", 0.0)
    monkeypatch.setattr(rooms, "_store", store)
    monkeypatch.setattr(follower_screen, "_frame_cache", {})
    monkeypatch.setattr(follower_screen, "VIEW_FRAMES", True)  # followers see the presenter's page as drawn
    return store


def _texts(at) -> str:
    kinds = ("markdown", "caption", "warning", "success", "info")
    return "\n".join(str(e.value) for kind in kinds for e in at.get(kind))


def test_a_lesson_steps_question_is_asked_answered_and_counted(app, app_store):
    from lab_ui.classroom import session

    presenter = app(lesson="memory-128k")
    presenter.button(key="classroom_start").click().run()
    room = presenter.session_state[session.ROOM_KEY]
    assert "Ask this lesson step's question: card 13" in _texts(presenter)
    followers = [app(room=room["id"]) for _ in range(3)]
    presenter.button(key="classroom_ask").click().run()
    asked = app_store.question(room["id"])
    assert asked is not None and asked.card == "13" and asked.difficulty == "medium"
    right, slip = kib(asked)
    for at in followers:
        at.run()
        assert not at.exception
        # the room's question alone: neither the presenter's frame nor a page run beside it
        assert not at.session_state[session.ROOM_KEY]["viewing"]
        assert at.session_state[session.ROOM_KEY]["question_tag"] == asked.tag
    followers[0].text_input(key=f"classroom_answer_{asked.id}").input(f"{right:g}")
    followers[0].button(key=f"classroom_send_{asked.id}").click().run()
    followers[1].text_input(key=f"classroom_answer_{asked.id}").input(f"{slip:g}")
    followers[1].button(key=f"classroom_send_{asked.id}").click().run()
    followers[1].text_input(key=f"classroom_answer_{asked.id}").input(f"{slip:g} KiB")  # a rewrite
    followers[1].button(key=f"classroom_send_{asked.id}").click().run()
    # followers[2] explores on its own (its page runs, the box is still above it) and sends an
    # empty answer, which is said and not taken: it counts as no answer
    followers[2].button(key="classroom_leave").click().run()
    assert not followers[2].session_state[session.ROOM_KEY]["following"]
    followers[2].button(key=f"classroom_send_{asked.id}").click().run()
    assert any(w.value == "Type an answer first." for w in followers[2].warning)
    assert "Sent:" in _texts(followers[0]) and "Sent:" not in _texts(followers[2])
    assert sorted(app_store.answers(room["id"], room["secret"])[0].values()) == sorted(
        [f"{right:g}", f"{slip:g} KiB"]
    )
    presenter.run()
    i = drills.draw(asked.card, asked.seed, asked.difficulty).inputs
    shown = _texts(presenter)
    assert "2 of 3 answered; 1 right." in shown
    assert f"1 used the {i['heads']} query heads instead of the {kv_heads(i)}." in shown

    presenter.button(key="classroom_close_question").click().run()
    for at in followers:
        at.run()
        assert "The answer:" in _texts(at)
    assert "right." in _texts(followers[0])
    assert f"when you used the {i['heads']} query heads" in _texts(followers[1])
    assert not any(at.exception for at in (presenter, *followers))


def test_the_practice_pages_drill_is_the_one_asked(app, app_store):
    """On Practice the presenter asks the card of the drill on her screen (read from the page's own
    keys), with the page's difficulty and a fresh seed."""
    from attn_core.views.practice import next_question
    from lab_ui.classroom import session

    presenter = app("pages/practice.py", pr_cards="6,13")
    presenter.selectbox(key="pr_diff").select("hard").run()
    presenter.button(key="classroom_start").click().run()
    state = presenter.session_state
    on_screen = next_question(list(state["pr_cards"]), "hard", state["pr_seed"], state["pr_n"])
    presenter.button(key="classroom_ask").click().run()
    asked = app_store.question(state[session.ROOM_KEY]["id"])
    assert (asked.card, asked.difficulty) == (on_screen.card, "hard")
    assert not presenter.exception


def test_a_question_reruns_a_screen_that_a_pushed_frame_would_leave_without_its_box(app, app_store):
    """A follower shown the presenter's frame with no run keeps the answer box its own last run
    drew; a new or closed question is a rerun instead (its run draws the box), never a frame."""
    from test_classroom import _Screen

    from lab_ui.classroom import follower_screen, session

    presenter = app(lesson="memory-128k")
    presenter.button(key="classroom_start").click().run()
    room_id, secret = (presenter.session_state[session.ROOM_KEY][k] for k in ("id", "secret"))
    follower = app(room=room_id)
    room = dict(follower.session_state[session.ROOM_KEY])
    assert room["viewing"] and room["question_tag"] == ""
    assert follower_screen.frame_pusher(room_id)(_Screen(dict(room)))  # nothing asked: the frame as before
    asked = app_store.ask(room_id, secret, "13", "medium")
    stale = _Screen(dict(room))
    assert not follower_screen.frame_pusher(room_id)(stale) and not stale.sent  # rerun: it draws the box
    follower.run()
    room = dict(follower.session_state[session.ROOM_KEY])
    assert room["question_tag"] == asked.tag and not room["viewing"]  # the question alone
    assert not follower_screen.frame_pusher(room_id)(_Screen(dict(room)))  # never a frame beside it
    app_store.close_question(room_id, secret)
    assert not follower_screen.frame_pusher(room_id)(_Screen(dict(room)))  # closed: rerun to show the answer
    app_store.clear_question(room_id, secret)
    follower.run()
    room = dict(follower.session_state[session.ROOM_KEY])
    assert room["question_tag"] == "" and room["viewing"]  # back to the presenter's frame
    assert follower_screen.frame_pusher(room_id)(_Screen(dict(room)))


def test_the_presenter_clears_a_question_and_its_answers(store):
    room_id, secret, seats = seated_room(store, 1)
    asked = store.ask(room_id, secret, "13", "medium")
    store.answer(room_id, seats[0], asked.id, "1")
    with pytest.raises(records.RoomError, match="only the presenter"):
        store.clear_question(room_id, "forged-secret")
    assert store.question(room_id) == asked
    store.clear_question(room_id, secret)
    assert store.question(room_id) is None and store.status(room_id).question == ""
    assert store.answers(room_id, secret)[0] == {}
    with pytest.raises(records.RoomError, match="closed or has been replaced"):
        store.answer(room_id, seats[0], asked.id, "2")
    store.clear_question(room_id, secret)  # nothing asked: nothing to do


# -- ballot stuffing: answers per address are bounded like its seats ---------------------------------


def depart(store, room_id: str, seats: list[str]) -> None:
    """These seats leave, as if their screens stopped checking in (their seats' time lapsed)."""
    if isinstance(store, memory_rooms.MemoryRooms):
        for seat in seats:
            store._rooms[room_id]["followers"].pop(seat)
        return
    for key in store._r.keys(store.FOLLOWERS + room_id + "*"):
        store._r.zrem(key, *seats)


def test_one_address_gives_at_most_its_seats_in_answers_even_as_seats_come_and_go(store):
    room_id, secret = store.create("teacher")
    asked = store.ask(room_id, secret, "13", "medium")
    per = records.SEATS_PER_CLIENT
    for turn in range(3):  # ten seats from one address, then ten more once those left, ...
        seats = [f"t{turn}s{i}" for i in range(per)]
        for seat in seats:
            assert store.follow(room_id, seat, "10.0.0.1") is records.Seat.TAKEN
        for seat in seats:
            if turn == 0:
                store.answer(room_id, seat, asked.id, "1")
            else:
                with pytest.raises(records.RoomError, match="network address"):
                    store.answer(room_id, seat, asked.id, "1")
        depart(store, room_id, seats)
    assert len(store.answers(room_id, secret)[0]) == per  # the first ten, and no more
    store.follow(room_id, "other", "10.0.0.2")
    store.answer(room_id, "other", asked.id, "2")  # another address is not held back
    asked2 = store.ask(room_id, secret, "13", "medium")  # a new question: every address answers again
    store.follow(room_id, "fresh", "10.0.0.1")
    store.answer(room_id, "fresh", asked2.id, "1")


def test_a_seated_students_answer_is_taken_when_departed_seats_filled_the_room(store):
    store.seats = 4  # a room of four seats keeps four answers
    room_id, secret = store.create("teacher")
    asked = store.ask(room_id, secret, "13", "medium")
    gone = [f"g{i}" for i in range(4)]
    for i, seat in enumerate(gone):
        store.follow(room_id, seat, f"10.0.1.{i}")
        store.answer(room_id, seat, asked.id, "1")
    depart(store, room_id, gone)
    for i in range(4):  # four seated students, each from a new address: every answer is taken
        store.follow(room_id, f"s{i}", f"10.0.2.{i}")
        store.answer(room_id, f"s{i}", asked.id, "2")
    answers, seated = store.answers(room_id, secret)
    assert {f"s{i}" for i in range(4)} <= set(answers) and len(answers) == 4
    assert sorted(seated) == [f"s{i}" for i in range(4)]


@pytest.mark.parametrize(
    ("first", "departed", "expected"),
    [
        # (counted, by address, per address, kept, cap): hand-made cases of the three steps
        (question.FirstAnswer(False, 0, 10, 0, 4), None, None),  # room to spare: taken
        (question.FirstAnswer(False, 10, 10, 0, 4), None, "network address"),  # address spent
        (question.FirstAnswer(True, 10, 10, 0, 4), None, None),  # the seat already counted
        (question.FirstAnswer(False, 0, 10, 4, 4), "gone", "gone"),  # a departed seat makes way
        (question.FirstAnswer(False, 0, 10, 4, 4), None, "as many as it keeps"),  # all seated
    ],
)
def test_the_answers_rule_step_by_step(first, departed, expected):
    """question.make_way, the rule both stores apply: the address's bound first, then the room's."""
    if expected in (None, "gone"):
        assert question.make_way(first, lambda: departed) == expected
    else:
        with pytest.raises(records.RoomError, match=expected):
            question.make_way(first, lambda: departed)


def test_a_rooms_answer_cap_is_its_seats_up_to_max_answers():
    assert question.answer_cap(3) == 3
    assert question.answer_cap(question.MAX_ANSWERS + 1) == question.MAX_ANSWERS
