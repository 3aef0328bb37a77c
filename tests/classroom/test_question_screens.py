"""What each screen shows of a room's live question (lab_ui.classroom.ask): the presenter's
screen (the projector) shows exactly the room's question and no answer until she reveals it; a
follower's screen shows the room's question once, and nothing of the presenter's own page (whose
Practice drill has other numbers and an answer box of its own).

Oracle: the room's question drawn here from the room's own card, seed and difficulty
(attn_core.practice.drills.draw), its answer written by the same `show_answer` the screens use,
and the Practice page's own drill drawn here from that page's session keys."""

from __future__ import annotations

import pytest

from attn_core.practice import drills
from attn_core.views.practice import next_question, show_answer
from classroom_store import memory_rooms, records, rooms
from lab_ui.classroom import session


@pytest.fixture
def app_store(monkeypatch):
    from lab_ui.classroom import follower_screen

    store = memory_rooms.MemoryRooms(publish_every_s=0)
    monkeypatch.setattr(records, "PUBLISH_EVERY_S", 0.0)
    monkeypatch.setattr(rooms, "_store", store)
    monkeypatch.setattr(follower_screen, "_frame_cache", {})
    monkeypatch.setattr(follower_screen, "VIEW_FRAMES", True)  # followers see the presenter's page as drawn
    return store


def _texts(at) -> list[str]:
    kinds = ("markdown", "caption", "warning", "success", "info", "text", "code")
    return [str(e.value) for kind in kinds for e in at.get(kind)]


def _asked_on_practice(app, app_store):
    """A presenter on Practice (cards 6 and 13) who asked the room; her own page's drill too."""
    presenter = app("pages/practice.py", pr_cards="6,13")
    presenter.button(key="classroom_start").click().run()
    state = presenter.session_state
    own = next_question(list(state["pr_cards"]), state["pr_diff"], state["pr_seed"], state["pr_n"])
    room = state[session.ROOM_KEY]
    presenter.button(key="classroom_ask").click().run()
    asked = app_store.question(room["id"])
    return presenter, room, asked, own


def test_the_projector_shows_the_rooms_question_and_no_answer_until_revealed(app, app_store):
    presenter, room, asked, own = _asked_on_practice(app, app_store)
    question = drills.draw(asked.card, asked.seed, asked.difficulty)
    assert question.prompt != own.prompt  # the room's fresh numbers, not the page's
    shown = "\n".join(_texts(presenter))
    assert question.prompt in shown
    assert own.prompt not in shown  # the page's own drill is not on the projector
    assert "Answer:" not in shown and "The answer:" not in shown
    main = "\n".join(_texts(presenter.main)).replace(question.prompt, "")
    assert show_answer(question) not in main
    assert not presenter.text_input  # no "Your answer" box of the page's drill
    presenter.button(key="classroom_close_question").click().run()  # "Reveal the answer"
    shown = "\n".join(_texts(presenter))
    assert show_answer(question) in shown and question.prompt in shown
    assert not presenter.exception


def test_a_follower_sees_the_rooms_question_once_and_not_the_presenters_page(app, app_store):
    presenter, room, asked, own = _asked_on_practice(app, app_store)
    question = drills.draw(asked.card, asked.seed, asked.difficulty)
    follower = app(room=room["id"])
    texts = _texts(follower)
    assert sum(question.prompt in t for t in texts) == 1
    assert not any(own.prompt in t for t in texts)
    assert [t.label for t in follower.text_input] == ["Your answer"]  # its own box, once
    assert not any(t.startswith("Your answer") for t in texts)  # no frame's copy of the page's box
    presenter.button(key="classroom_close_question").click().run()
    follower.run()
    texts = _texts(follower)
    assert sum(question.prompt in t for t in texts) == 1 and not any(own.prompt in t for t in texts)
    assert any(show_answer(question) in t for t in texts)
    assert not follower.exception


def test_back_to_the_page_clears_the_question_on_every_screen(app, app_store):
    presenter, room, asked, own = _asked_on_practice(app, app_store)
    follower = app(room=room["id"])
    presenter.button(key="classroom_close_question").click().run()
    presenter.button(key="classroom_clear_question").click().run()
    assert app_store.question(room["id"]) is None
    assert any(own.prompt in t for t in _texts(presenter))  # her page is back
    follower.run()
    assert follower.session_state[session.ROOM_KEY]["viewing"]  # the presenter's frame again
    assert not follower.text_input and not any("The presenter asks" in t for t in _texts(follower))
