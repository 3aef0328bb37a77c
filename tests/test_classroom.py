"""Follow the presenter, through AppTest: two sessions of the whole app share one room store."""

from __future__ import annotations

import pytest

from lab_ui import classroom, rooms


@pytest.fixture(autouse=True)
def fresh_store(monkeypatch):
    monkeypatch.setattr(rooms, "_store", rooms.MemoryRooms())


def start_room(app, page="pages/playground.py"):
    presenter = app(page)
    presenter.button(key="classroom_start").click().run()
    room = presenter.session_state[classroom._ROOM]
    assert room["role"] == "present" and rooms.valid_room_id(room["id"])
    return presenter, room["id"]


def test_follower_opens_on_the_presenters_page_and_values(app):
    presenter, room_id = start_room(app)
    presenter.radio(key="in_src").set_value("random").run()
    presenter.slider(key="in_L").set_value(9).run()
    follower = app(room=room_id)
    assert follower.slider(key="in_L").value == 9  # the Playground, with the presenter's L
    assert follower.radio(key="in_src").value == "random"
    assert not follower.exception


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
    assert follower.session_state[classroom._ROOM]["following"] is False
    presenter.slider(key="in_L").set_value(11).run()
    follower.run()
    assert follower.slider(key="in_L").value == 3  # the student's own view is kept
    follower.button(key="classroom_rejoin").click().run()
    assert follower.slider(key="in_L").value == 11


def test_the_secret_never_reaches_a_follower(app):
    presenter, room_id = start_room(app)
    secret = presenter.session_state[classroom._ROOM]["secret"]
    follower = app(room=room_id)
    shown = " ".join(
        str(e.value) for kind in ("markdown", "code", "caption", "text") for e in follower.get(kind)
    )
    assert secret not in shown and secret not in str(dict(follower.query_params))
    assert "secret" not in follower.session_state[classroom._ROOM]
    # the presenter's link does not carry it either
    link = presenter.sidebar.code[0].value
    assert secret not in link and f"room={room_id}" in link


def test_unknown_or_hostile_room_links_are_refused_kindly(app):
    for bad in ("nosuch", "x" * 100_000, "<script>", "../../etc"):
        at = app(room=bad)
        assert not at.exception
        assert any("no live room" in w.value for w in at.warning)
        assert classroom._ROOM not in at.session_state or at.session_state[classroom._ROOM] is None


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
    assert follower.session_state[classroom._ROOM]["following"] is False
    presenter.radio(key="in_src").set_value("random").run()  # the presenter moves on
    follower.run()
    assert follower.title[0].value == "Gradients"
    follower.button(key="classroom_rejoin").click().run()
    assert follower.title[0].value == "Attention Playground"
    assert follower.radio(key="in_src").value == "random"
