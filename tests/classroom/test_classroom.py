"""Follow the presenter, through AppTest: two sessions of the whole app share one room store."""

from __future__ import annotations

import json

import pytest

from classroom_store import records, rooms, signing
from classroom_store.memory_rooms import MemoryRooms
from classroom_store.redis_rooms import RedisRooms
from lab_ui.classroom import app_hooks as classroom
from lab_ui.classroom import follower_screen, session


@pytest.fixture(autouse=True)
def fresh_store(monkeypatch):
    """A fresh store that takes every view at once: these tests change views milliseconds apart
    (the publish rate limit has its own tests)."""
    monkeypatch.setattr(records, "PUBLISH_EVERY_S", 0.0)
    monkeypatch.setattr(rooms, "_store", MemoryRooms())
    monkeypatch.setattr(follower_screen, "_frame_cache", {})


@pytest.fixture(autouse=True)
def followers_run_the_page(request, monkeypatch):
    """Most tests here drive a follower's own widgets: the path a follower takes when there is no
    frame of the presenter's page (a view changed in a fragment, a frame too large). Tests that
    ask for `frames_on` see the presenter's frame instead, as followers do by default."""
    monkeypatch.setattr(follower_screen, "VIEW_FRAMES", "frames_on" in request.fixturenames)


@pytest.fixture
def frames_on():
    """Followers see the presenter's page as drawn (lab_ui.classroom.frames)."""


def start_room(app, page="pages/playground.py"):
    presenter = app(page)
    presenter.button(key="classroom_start").click().run()
    room = presenter.session_state[session.ROOM_KEY]
    assert room["role"] == "present" and records.valid_room_id(room["id"])
    return presenter, room["id"]


def test_follower_opens_on_the_presenters_page_and_values(app):
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("random").run()
    presenter.slider(key="in_L").set_value(9).run()
    follower = app(room=room_id)
    assert follower.slider(key="in_L").value == 9  # the Playground, with the presenter's L
    assert follower.radio(key="in_src").value == "random"
    assert not follower.exception


def test_each_screen_keeps_its_own_projector_mode_and_palette(app):
    """A presenter on a projector in high contrast does not restyle her students' phones, and a
    student who picks the colour-blind-safe palette is still following."""
    presenter, room_id = start_room(app)
    presenter.toggle(key="projector").set_value(True).run()
    presenter.selectbox(key="palette").select_index(2).run()
    assert presenter.selectbox(key="palette").index == 2
    follower = app(room=room_id)
    assert follower.toggle(key="projector").value is False
    assert follower.selectbox(key="palette").index == 0
    follower.selectbox(key="palette").select_index(1).run()
    presenter.radio(key="in_src").set_value("random").run()
    presenter.slider(key="in_L").set_value(9).run()
    follower.run()
    assert follower.slider(key="in_L").value == 9  # still following the presenter
    assert follower.session_state[session.ROOM_KEY]["following"] is True
    assert follower.selectbox(key="palette").index == 1
    assert presenter.selectbox(key="palette").index == 2 and not follower.exception


def test_follower_catches_up_on_the_next_poll(app):
    presenter, room_id = start_room(app)
    follower = app(room=room_id)
    version = rooms.store().version(room_id)
    presenter.switch_page("pages/masks.py").run()
    assert rooms.store().version(room_id) == version + 1
    follower.run()  # what the one-second fragment triggers when the version moved
    assert follower.title[0].value.startswith("Masks")


def test_a_follower_who_touches_a_widget_explores_alone_then_rejoins(app):
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("random").run()
    follower = app(room=room_id)
    follower.slider(key="in_L").set_value(3).run()
    assert follower.session_state[session.ROOM_KEY]["following"] is False
    presenter.slider(key="in_L").set_value(11).run()
    follower.run()
    assert follower.slider(key="in_L").value == 3  # the student's own view is kept
    follower.button(key="classroom_rejoin").click().run()
    assert follower.slider(key="in_L").value == 11


def test_the_secret_never_reaches_a_follower(app):
    presenter, room_id = start_room(app)
    secret = presenter.session_state[session.ROOM_KEY]["secret"]
    follower = app(room=room_id)
    shown = " ".join(
        str(e.value) for kind in ("markdown", "code", "caption", "text") for e in follower.get(kind)
    )
    assert secret not in shown and secret not in str(dict(follower.query_params))
    assert "secret" not in follower.session_state[session.ROOM_KEY]
    # the presenter's link does not carry it either
    link = presenter.sidebar.code[0].value
    assert secret not in link and f"room={room_id}" in link


def test_unknown_or_hostile_room_links_are_refused_kindly(app):
    for bad in ("nosuch", "x" * 100_000, "<script>", "../../etc"):
        at = app(room=bad)
        assert not at.exception
        assert any("no live room" in w.value for w in at.warning)
        assert session.ROOM_KEY not in at.session_state or at.session_state[session.ROOM_KEY] is None


def test_ending_the_room_releases_followers(app):
    presenter, room_id = start_room(app)
    follower = app(room=room_id)
    presenter.button(key="classroom_end").click().run()
    follower.run()
    assert any("ended the room" in w.value for w in follower.warning)
    assert rooms.store().version(room_id) is None


def test_a_follower_who_opens_another_page_explores_there(app):
    """A student who clicks a page link while following is not pulled back to the presenter's
    page until they rejoin."""
    presenter, room_id = start_room(app)
    follower = app(room=room_id)
    assert follower.title[0].value == "Attention Playground"
    follower.switch_page("pages/gradients.py").run()
    assert follower.title[0].value == "Gradients"
    assert follower.session_state[session.ROOM_KEY]["following"] is False
    presenter.radio(key="in_src").set_value("random").run()  # the presenter moves on
    follower.run()
    assert follower.title[0].value == "Gradients"
    follower.button(key="classroom_rejoin").click().run()
    assert follower.title[0].value == "Attention Playground"
    assert follower.radio(key="in_src").value == "random"


# ------------------------------------------------------------------ faults and floods


def test_a_reload_keeps_the_presenters_room(app, monkeypatch):
    """The presenter's browser keeps ``room.secret`` in a cookie; a reload of the page (whose address
    carries ?room=) presents again. Without the cookie the same address only follows."""
    presenter, room_id = start_room(app)
    secret = presenter.session_state[session.ROOM_KEY]["secret"]
    script = presenter.sidebar.get("html")[0].proto.body
    assert f'"{session.COOKIE}="' in script and f'max-age=" + (value ? {session.COOKIE_MAX_AGE_S}' in script
    assert f"{room_id}.{secret}" in [t.value for t in presenter.sidebar.text]  # what the script stores
    assert presenter.query_params[session.ROOM_PARAM] == room_id  # what a reload opens
    presenter.radio(key="in_src").set_value("random").run()
    presenter.slider(key="in_L").set_value(9).run()
    follower = app(room=room_id)
    version = rooms.store().version(room_id)
    monkeypatch.setattr(session, "cookies", lambda: {session.COOKIE: f"{room_id}.{secret}"})
    reloaded = app(room=room_id)  # a new session, as after a reload (or a second tab, the student link)
    monkeypatch.setattr(session, "cookies", dict)
    assert reloaded.session_state[session.ROOM_KEY]["role"] == "present"
    assert any(f"Presenting room **{room_id}**" in m.value for m in reloaded.sidebar.markdown)
    assert reloaded.slider(key="in_L").value == 9  # it took the room's view back, on its page
    assert rooms.store().version(room_id) == version  # and overwrote nothing
    reloaded.slider(key="in_L").set_value(4).run()
    follower.run()
    assert follower.slider(key="in_L").value == 4 and not follower.warning
    copied = app(room=room_id)  # the presenter's address pasted into a student's browser
    assert copied.session_state[session.ROOM_KEY]["role"] == "follow"


def test_a_forged_presenter_cookie_drives_nothing(app, monkeypatch):
    presenter, room_id = start_room(app)
    monkeypatch.setattr(session, "cookies", lambda: {session.COOKIE: f"{room_id}.guessed"})
    forger = app(room=room_id)
    assert not forger.exception
    assert forger.session_state[session.ROOM_KEY]["role"] == "follow"  # a student, like any other
    assert "secret" not in forger.session_state[session.ROOM_KEY]
    assert rooms.store().version(room_id) is not None  # the real room lives on


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_followers_are_told_when_the_presenter_is_away_and_the_room_then_ends(app, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(rooms, "_store", MemoryRooms(clock=clock))
    presenter, room_id = start_room(app)
    follower = app(room=room_id)
    assert not follower.warning
    clock.now = 30  # the presenter's tab stopped checking in 30 s ago
    follower.run()
    assert any("has not been seen for 30 s" in w.value for w in follower.warning)
    clock.now = records.PRESENTER_TTL_S - 20
    follower.run()
    clock.now += 21
    follower.run()
    assert any(
        f"not been back for {records.PRESENTER_TTL_S // 60} minutes" in w.value for w in follower.warning
    ), [w.value for w in follower.warning]
    assert not any("ended the room" in w.value for w in follower.warning)
    assert len(rooms.store()) == 0  # the slot is free


def test_room_creation_is_rate_limited_per_visitor(app):
    presenter = app()
    for _ in range(records.MAX_CREATES_PER_CLIENT):
        presenter.button(key="classroom_start").click().run()
        presenter.button(key="classroom_end").click().run()
    presenter.button(key="classroom_start").click().run()
    assert any(f"you started {records.MAX_CREATES_PER_CLIENT} rooms" in w.value for w in presenter.warning)
    assert presenter.session_state[session.ROOM_KEY] is None and not presenter.exception


def test_a_full_room_tells_the_one_refused(app, monkeypatch):
    monkeypatch.setattr(rooms, "_store", MemoryRooms(max_followers=1))
    presenter, room_id = start_room(app)
    first = app(room=room_id)
    second = app(room=room_id)
    assert first.session_state[session.ROOM_KEY]["following"]
    assert any("is full" in w.value for w in second.warning) and not second.exception
    assert second.session_state[session.ROOM_KEY] is None
    first.run()
    assert not first.warning  # the seated follower is untouched


def test_room_links_never_render_markdown(app):
    from markdown_it import MarkdownIt

    for bad in ("[x](//e.vu)", "**big**", "<b>x</b>", ":red[x]", "![i](//e.vu/i.png)"):
        at = app(room=bad)
        shown = [w.value for w in at.warning]
        assert shown and not at.exception
        for text in shown:
            html = MarkdownIt("commonmark").render(text)
            assert "<a " not in html and "<img" not in html and "<strong>" not in html, html


# ------------------------------------------------------------------ a real Redis, killed and restarted


@pytest.fixture
def redis_rooms(request, tmp_path, monkeypatch):
    """The whole app on a real redis-server (persistence as deploy/serve.sh runs it unless the
    test is parametrized with persist=False)."""
    from redis_server import RedisServer

    server = RedisServer(tmp_path, persist=getattr(request, "param", True)).start()
    monkeypatch.setattr(rooms, "_store", RedisRooms(server.url))
    yield server
    server.stop()


def _shown(at) -> str:
    return " ".join(
        str(e.value) for kind in ("warning", "markdown", "caption", "error") for e in at.get(kind)
    )


def test_a_redis_crash_is_a_notice_and_the_class_carries_on(app, redis_rooms):
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("random").run()
    follower = app(room=room_id)
    redis_rooms.stop()  # SIGKILL mid-class
    presenter.slider(key="in_L").set_value(7).run()
    follower.run()
    newcomer = app(room=room_id)  # a student opening the link now
    other = app()
    other.button(key="classroom_start").click().run()
    for at in (presenter, follower, newcomer, other):
        assert not at.exception
        assert "cannot be reached" in _shown(at)
        assert "redis.exceptions" not in _shown(at) and "Traceback" not in _shown(at)
        assert "ended" not in _shown(at)
    redis_rooms.start()  # same append-only file: the room is still there
    presenter.run()
    follower.run()
    newcomer.run()
    for at in (follower, newcomer):
        assert at.session_state[session.ROOM_KEY]["following"]
        assert at.slider(key="in_L").value == 7  # the change made during the outage arrives
        assert "cannot be reached" not in _shown(at) and "ended" not in _shown(at)


@pytest.mark.parametrize("redis_rooms", [False], indirect=True)
def test_a_redis_restart_without_data_is_repaired_by_the_presenter(app, redis_rooms):
    """Even a Redis that comes back empty does not end the class: followers wait (never told the
    presenter ended it) and the presenter's next check-in re-publishes the room."""
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("random").run()
    follower = app(room=room_id)
    redis_rooms.stop()
    redis_rooms.start()  # empty
    follower.run()
    assert not follower.exception and "ended" not in _shown(follower)
    assert "waiting for the presenter" in _shown(follower)
    presenter.slider(key="in_L").set_value(5).run()  # its check-in restores the room
    follower.run()
    assert follower.session_state[session.ROOM_KEY]["following"]
    assert follower.slider(key="in_L").value == 5 and "waiting" not in _shown(follower)
    presenter.button(key="classroom_end").click().run()
    follower.run()
    assert "presenter has ended the room" in _shown(follower)


# ------------------------------------------------------------------ seats, and rooms only the server issued


def test_the_presenter_sees_who_follows_and_raises_the_seats_per_address(app):
    """Every AppTest session comes from the same (unknown) address: a class behind one NAT."""
    presenter, room_id = start_room(app)
    seated = [app(room=room_id) for _ in range(records.SEATS_PER_CLIENT)]
    refused = app(room=room_id)
    assert any("your network address" in w.value for w in refused.warning) and not refused.exception
    assert refused.session_state[session.ROOM_KEY] is None
    presenter.run()
    assert any(f"**{records.SEATS_PER_CLIENT}** of" in c.value for c in presenter.sidebar.caption)
    presenter.number_input(key="classroom_per_client").set_value(40).run()
    late = app(room=room_id)
    assert late.session_state[session.ROOM_KEY]["following"]
    presenter.run()
    assert any(f"**{records.SEATS_PER_CLIENT + 1}** of" in c.value for c in presenter.sidebar.caption)
    assert all(f.session_state[session.ROOM_KEY]["following"] for f in seated)


def test_a_forged_cookie_makes_no_room(app, monkeypatch):
    """A cookie the server did not sign, with a room id nobody started: a student link to no room,
    and no room is made, however many are tried."""
    for i in range(5):
        room_id = records.new_room_id()
        monkeypatch.setattr(session, "cookies", lambda r=room_id, n=i: {session.COOKIE: f"{r}.forged-{n}"})
        forger = app(room=room_id)
        assert any("no live room" in w.value for w in forger.warning)
        forger.run()  # its publisher would have run by now
        assert not forger.exception
        assert forger.session_state[session.ROOM_KEY] is None
        assert rooms.store().status(room_id) is None
    assert len(rooms.store()) == 0


def test_a_room_that_aged_out_comes_back_to_its_presenter_only(app, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(rooms, "_store", MemoryRooms(clock=clock))
    presenter, room_id = start_room(app)
    secret = presenter.session_state[session.ROOM_KEY]["secret"]
    presenter.radio(key="in_src").set_value("random").run()
    clock.now = records.PRESENTER_TTL_S + 1  # the teacher's laptop slept: the room aged out
    assert rooms.store().status(room_id) is None
    forged = signing.issue_secret(b"not the server's key, 32 bytes..", room_id)
    monkeypatch.setattr(session, "cookies", lambda: {session.COOKIE: f"{room_id}.{forged}"})
    taker = app(room=room_id)
    assert taker.session_state[session.ROOM_KEY] is None and rooms.store().status(room_id) is None
    monkeypatch.setattr(session, "cookies", lambda: {session.COOKIE: f"{room_id}.{secret}"})
    back = app(room=room_id)  # the teacher reloads her tab
    assert back.session_state[session.ROOM_KEY]["role"] == "present"
    assert rooms.store().snapshot(room_id).version >= 1  # her publish restored it
    monkeypatch.setattr(session, "cookies", dict)
    student = app(room=room_id)
    assert student.session_state[session.ROOM_KEY]["role"] == "follow" and not student.exception


# ------------------------------------------------------------------ a presenter is always present


def test_a_presenter_stopped_by_bad_input_still_publishes_and_followers_see_the_same_message(app):
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("typed matrices").run()
    follower = app(room=room_id)
    assert follower.text_area(key="in_Q").value == presenter.text_area(key="in_Q").value
    before = rooms.store().version(room_id)
    presenter.text_area(key="in_Q").set_value("1, 2\n3, x").run()  # a typo: the page stops at require()
    assert any(i.value.startswith("Fix ") for i in presenter.info)  # (the oracle: the page did stop)
    snap = rooms.store().snapshot(room_id)
    assert snap.version == before + 1 and snap.payload["values"]["in_Q"] == "1, 2\n3, x"
    follower.run()
    assert follower.text_area(key="in_Q").value == "1, 2\n3, x"
    assert [i.value for i in follower.info] == [i.value for i in presenter.info]  # the same "Fix …"
    assert [e.value for e in follower.error] == [e.value for e in presenter.error]
    assert follower.session_state[session.ROOM_KEY]["following"]  # still following, not exploring


def test_a_stopped_presenter_keeps_checking_in(app, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(rooms, "_store", MemoryRooms(clock=clock))
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("typed matrices").run()
    presenter.text_area(key="in_Q").set_value("oops").run()
    clock.now = 60
    presenter.run()  # what the sidebar publisher's one-second timer does, even on a stopped page
    assert rooms.store().status(room_id).presenter_age_s == 0.0


# ------------------------------------------------------------------ fair seats and pushes, honest addresses


def test_x_forwarded_for_is_believed_only_from_a_named_proxy(monkeypatch):
    assert session.client_of("203.0.113.5", "10.9.9.9", frozenset()) == "203.0.113.5"  # no proxy
    assert session.client_of("203.0.113.5", "10.9.9.9", frozenset({"127.0.0.1"})) == "203.0.113.5"
    proxy = frozenset({"127.0.0.1"})
    # the last entry is the one our nginx appended; earlier ones are whatever the client sent
    assert session.client_of("127.0.0.1", "6.6.6.6, 198.51.100.7", proxy) == "198.51.100.7"
    assert session.client_of("127.0.0.1", "", proxy) == "127.0.0.1"
    assert session.client_of(None, None, proxy) == "unknown"
    monkeypatch.setenv(session.TRUSTED_PROXIES_ENV, "127.0.0.1, 10.0.0.2  10.0.0.3")
    assert session.trusted_proxies() == {"127.0.0.1", "10.0.0.2", "10.0.0.3"}
    monkeypatch.delenv(session.TRUSTED_PROXIES_ENV)
    assert session.trusted_proxies() == frozenset()
    assert session.client_of("::ffff:127.0.0.1", "198.51.100.7", proxy) == "198.51.100.7"  # dual stack


def test_the_peer_is_the_sockets_not_the_one_a_header_put_in_its_place():
    """Streamlit's server may already have put the header's address in place of the peer: the
    socket's own peer is judged; where it cannot be read, a peer that is a word of the header is
    no one in particular."""
    assert session.peer_of("127.0.0.1", "6.6.6.6", "6.6.6.6") == "127.0.0.1"
    forged = session.peer_of(None, "6.6.6.6", "6.6.6.6")
    assert forged == session.UNVERIFIED and session.client_of(forged, "6.6.6.6", frozenset()) == forged
    assert session.peer_of(None, "203.0.113.5", "6.6.6.6") == "203.0.113.5"  # not rewritten
    assert session.peer_of(None, "203.0.113.5", None) == "203.0.113.5"
    assert (
        session.client_of(session.peer_of("127.0.0.1", "6.6.6.6", "6.6.6.6"), "6.6.6.6", frozenset())
        == "127.0.0.1"
    )


def test_a_view_of_non_ascii_text_reaches_followers_and_an_oversize_one_stops_nothing(app):
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("typed matrices").run()
    follower = app(room=room_id)
    text = "𝔸" * 4000  # the text areas' cap, 4-byte characters (not a matrix: the page says so)
    for key in ("in_Q", "in_K", "in_V"):
        presenter.text_area(key=key).set_value(text).run()
    follower.run()
    assert follower.text_area(key="in_V").value == text and not follower.exception
    room = presenter.session_state[session.ROOM_KEY]
    # a view over the limit (only a hostile presenter could make one): said, and the room goes on
    presenter.session_state["_keep_huge"] = "x" * records.MAX_PAYLOAD_BYTES
    presenter.run()
    assert any("keep your last view" in w.value for w in presenter.sidebar.warning)
    assert presenter.session_state[session.ROOM_KEY] is room and rooms.store().status(room_id) is not None


class _Loop:
    def __init__(self):
        self.later = []

    def call_later(self, delay, fn, *args):
        self.later.append((fn, args))


class _Session:
    def __init__(self, name, log):
        from streamlit.proto.ClientState_pb2 import ClientState

        self.name, self.log, self._client_state = name, log, ClientState()

    def request_rerun(self, state):
        assert state.fragment_id == ""  # the whole app
        self.log.append(self.name)


class _Manager:
    def __init__(self, names, log):
        self.sessions = {n: _Session(n, log) for n in names}

    def get_active_session_info(self, session_id):
        session = self.sessions.get(session_id)
        return None if session is None else type("Info", (), {"session": session})()


def test_pushed_reruns_take_turns_between_rooms():
    """A room whose 40 followers are all waiting delays another room's follower by one rerun, not
    by 40: each room with someone waiting gets one rerun per turn (one at a time, as finished()
    starts the next)."""
    from lab_ui.classroom import change_push

    busy = [f"busy-{i}" for i in range(40)]
    log: list[str] = []
    loop, manager = _Loop(), _Manager([*busy, "teacher-student", "other-student"], log)
    change_push._queues.clear(), change_push._turns.clear()
    change_push._running[0] = None
    change_push._enqueue(loop, manager, "busyroom", busy)
    change_push._enqueue(loop, manager, "teacher", ["teacher-student"])
    change_push._enqueue(loop, manager, "busyroom", busy[:5])  # woken again: queued once only
    change_push._enqueue(loop, manager, "gone", ["closed-tab"])  # a closed tab is passed over
    change_push._enqueue(loop, manager, "other", ["other-student"])
    while change_push._running[0] is not None:
        change_push._next(loop, manager)  # what finished() does when a rerun ends
    # busy-0 started at once, and busyroom's next turn was queued before the others arrived
    assert log[:4] == ["busy-0", "busy-1", "teacher-student", "other-student"]
    assert sorted(log) == sorted([*busy, "teacher-student", "other-student"])  # everyone, once
    assert not change_push._queues and not change_push._turns


# ------------------------------------------------------------------ followers see the presenter's page as drawn


def _figures(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_a_follower_sees_the_presenters_figures_and_they_update(app, frames_on):
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("random").run()
    follower = app(room=room_id)
    room = follower.session_state[session.ROOM_KEY]
    assert room["viewing"] and not follower.exception
    assert _figures(follower) == _figures(presenter) and len(_figures(presenter)) >= 3
    assert [t.value for t in follower.title] == ["Attention Playground"]
    assert not follower.get("slider")  # the presenter's controls are text on this screen...
    assert any(m.value == "L (queries): `6`" for m in follower.sidebar.markdown)  # ...with their values
    assert classroom._COOKIE_BOX not in str(follower.sidebar)  # nothing of the presenter's sidebar box
    before = _figures(follower)
    presenter.slider(key="in_L").set_value(9).run()
    follower.run()
    assert _figures(follower) == _figures(presenter) != before
    assert any(m.value == "L (queries): `9`" for m in follower.sidebar.markdown)
    # the page did not run for the follower: its own session never made the page's widgets
    assert "in_L" not in follower.session_state or follower.session_state["in_L"] == 9


def test_a_follower_takes_control_at_the_presenters_state(app, frames_on):
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("random").run()
    presenter.slider(key="in_L").set_value(9).run()
    presenter.slider(key="in_dk").set_value(5).run()
    follower = app(room=room_id)
    assert follower.session_state[session.ROOM_KEY]["viewing"]
    assert follower.sidebar.button(key="classroom_leave").label == "Take control"
    follower.button(key="classroom_leave").click().run()
    assert not follower.session_state[session.ROOM_KEY]["following"]
    assert follower.slider(key="in_L").value == 9 and follower.slider(key="in_dk").value == 5
    assert _figures(follower) == _figures(presenter)  # the full page, computed here, at her state
    follower.slider(key="in_L").set_value(3).run()  # and it is the student's to change
    assert _figures(follower) != _figures(presenter)
    follower.button(key="classroom_rejoin").click().run()
    assert _figures(follower) == _figures(presenter)


def test_followers_see_the_presenters_error_state(app, frames_on):
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("typed matrices").run()
    follower = app(room=room_id)
    presenter.text_area(key="in_Q").set_value("1, 2\n3, x").run()  # the page stops at require()
    follower.run()
    assert [i.value for i in follower.info] == [i.value for i in presenter.info] != []
    assert [e.value for e in follower.error] == [e.value for e in presenter.error]
    assert not follower.get("plotly_chart")  # not the stale figures of the last good view


def test_a_view_changed_in_a_fragment_is_run_by_the_follower(app, frames_on, monkeypatch):
    """No frame for the room's latest view (it came from a fragment run, or was too large): the
    follower runs the page at the presenter's values, as before frames existed."""
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("random").run()
    monkeypatch.setattr(rooms.store(), "frame", lambda room_id: None)
    monkeypatch.setattr(rooms.store(), "frame_view", lambda room_id: None)
    follower = app(room=room_id)
    assert not follower.session_state[session.ROOM_KEY]["viewing"]
    assert follower.slider(key="in_L").value == presenter.slider(key="in_L").value
    assert _figures(follower) == _figures(presenter)


def test_a_frame_never_carries_what_only_the_presenters_server_can_serve():
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    from lab_ui.classroom import frames

    def delta(path, fill):
        msg = ForwardMsg()
        msg.metadata.delta_path.extend(path)
        fill(msg.delta.new_element)
        return msg

    kept = [
        frames._keep(delta([0, 5], lambda e: setattr(e.markdown, "body", "hello"))),
        frames._keep(delta([0, 6], lambda e: e.imgs.imgs.add().__setattr__("url", "/media/x.png"))),
        frames._keep(delta([1, 7], lambda e: setattr(e.html, "body", "<script>x</script>"))),
        frames._keep(delta([1, 8], lambda e: setattr(e.download_button, "url", "/media/a.csv"))),
        frames._keep(delta([2, 0], lambda e: setattr(e.toast, "body", "hi"))),  # the event container
    ]
    assert kept[0].delta.new_element.markdown.body == "hello"
    for dropped in kept[1:4]:
        assert dropped.delta.new_element.WhichOneof("type") == "empty"
    assert kept[4] is None
    frame = frames.frame_of([k for k in kept if k is not None])
    assert [list(m.metadata.delta_path) for m in frame.messages] == [[0, 0], [0, 1], [1, 0], [1, 1]]
    again = frames.Frame.decode(frame.encode())
    assert [m.delta for m in again.messages] == [m.delta for m in frame.messages]


class _Screen:
    """A follower's server session as lab_ui.classroom.change_push sees it between runs."""

    def __init__(self, room, running=False):
        from streamlit.runtime.app_session import AppSessionState

        self.session_state = {session.ROOM_KEY: room}
        self._state = AppSessionState.APP_IS_RUNNING if running else AppSessionState.APP_NOT_RUNNING
        self.sent = []

    def _enqueue_forward_msg(self, msg):
        self.sent.append(msg)


def test_a_new_frame_goes_straight_to_a_viewing_screen_with_no_run(app, frames_on):
    """The presenter's change reaches a screen that shows her last frame on the same page as
    messages only: its two boxes emptied and refilled with the new frame, main area first."""
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("random").run()
    follower = app(room=room_id)
    room = dict(follower.session_state[session.ROOM_KEY])
    presenter.slider(key="in_L").set_value(9).run()
    version = rooms.store().version(room_id)
    put = follower_screen.frame_pusher(room_id)
    screen = _Screen(room)
    assert put(screen) and room["seen"] == version
    boxes = room["boxes"]
    main, side = boxes[0], boxes[1]
    paths = [list(m.metadata.delta_path) for m in screen.sent]
    assert paths[:4] == [side, side, main, main]  # each box emptied, then made again
    kinds = [m.delta.WhichOneof("type") for m in screen.sent[:4]]
    assert kinds == ["new_element", "add_block"] * 2
    body = screen.sent[4:]
    roots = [list(m.metadata.delta_path[: len(main)]) == main for m in body]
    assert roots == sorted(roots, reverse=True)  # the main area's messages first
    specs = [
        json.loads(m.delta.new_element.plotly_chart.spec)
        for m in body
        if m.delta.new_element.plotly_chart.spec
    ]
    assert specs == _figures(presenter)  # the presenter's figures, as she drew them
    assert any(m.delta.new_element.markdown.body == "L (queries): `9`" for m in body)
    assert put(screen) and len(screen.sent) == len(paths)  # already shown: nothing sent again
    for declined in (
        _Screen(dict(room, seen=-1), running=True),  # mid-run: its own deltas are on the way
        _Screen(dict(room, seen=-1, page="masks")),  # another page: it reruns (switch_page)
        _Screen(dict(room, seen=-1, viewing=False)),  # runs the page itself
        _Screen(dict(room, seen=-1, following=False)),  # exploring on its own
    ):
        assert not put(declined) and not declined.sent


def test_a_presenter_run_cut_short_by_a_rerun_shares_no_half_page(app, frames_on, monkeypatch):
    """A page that calls st.rerun halfway (or switches page) drew half of itself: that half is
    not the room's frame; the run that follows publishes the whole page."""
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("random").run()
    whole = rooms.store().frame(room_id)
    from lab_ui import page as page_module

    real_require, calls = page_module.require, []

    def rerun_once(*values, **kw):  # the Playground calls require() after its inputs
        calls.append(1)
        if len(calls) == 1:
            import streamlit as st

            st.rerun()
        return real_require(*values, **kw)

    monkeypatch.setattr(page_module, "require", rerun_once)  # page files import it at every run
    presenter.slider(key="in_L").set_value(8).run()
    assert len(calls) >= 2  # (the oracle: the run was cut short once, then ran again)
    frame = rooms.store().frame(room_id)
    snap = rooms.store().snapshot(room_id)
    assert frame is not None and frame != whole and frame[0] == snap.view
    follower = app(room=room_id)
    assert _figures(follower) == _figures(presenter) and len(_figures(follower)) >= 3


def test_a_presenter_takes_back_or_ends_her_rooms_from_a_new_tab(app, monkeypatch):
    """Three rooms left behind by closed tabs: a new tab of the same browser (its cookie) lists
    them, takes one back (and one the store lost, restored without counting as a fourth room) and
    ends another, though starting a fourth is refused. A forged cookie lists nothing."""
    jar = {}
    monkeypatch.setattr(session, "cookies", lambda: dict(jar))
    started = []
    for _ in range(records.MAX_CREATES_PER_CLIENT):
        tab = app()
        tab.button(key="classroom_start").click().run()
        room = tab.session_state[session.ROOM_KEY]
        started.append((room["id"], room["secret"]))
        jar[session.COOKIE] = tab.sidebar.get("text")[0].value  # what the tab's script stores
    new = app()
    new.button(key="classroom_start").click().run()
    assert any(f"you started {records.MAX_CREATES_PER_CLIENT} rooms" in w.value for w in new.warning)
    keys = {b.key for b in new.button}
    assert {f"classroom_take_{r}" for r, _ in started} <= keys and {
        f"classroom_end_{r}" for r, _ in started
    } <= keys
    new.button(key=f"classroom_end_{started[1][0]}").click().run()
    assert rooms.store().ended(started[1][0]) and rooms.store().status(started[1][0]) is None
    new.button(key=f"classroom_take_{started[0][0]}").click().run()
    room = new.session_state[session.ROOM_KEY]
    assert (room["role"], room["id"]) == ("present", started[0][0]) and not new.exception
    assert any(f"Presenting room **{started[0][0]}**" in m.value for m in new.sidebar.markdown)
    rooms.store()._rooms.pop(started[2][0])  # the store lost the last one (aged out, a restart)
    again = app()
    again.button(key=f"classroom_take_{started[2][0]}").click().run()
    assert again.session_state[session.ROOM_KEY]["role"] == "present"
    assert rooms.store().status(started[2][0]) is not None  # restored, within her three rooms
    jar[session.COOKIE] = "_".join(f"{r}.{s[:-4]}beef" for r, s in started) + "_abcdef.guessed"
    forger = app()
    assert not any(b.key.startswith(("classroom_take_", "classroom_end_")) for b in forger.button)
    assert len(rooms.store()) == 2 and not forger.exception
