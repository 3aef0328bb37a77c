"""Lessons: the file format (attn_core.lessons), every shipped step through AppTest, the writer's
download, and a room's follower moving with the presenter's step.

Oracles: the page registry (lab_ui/nav.py), the Practice drill registry, and each page's own
widgets: a step's URL state must land in the widget of that key (the value the widget keeps,
written back as its URL text), and no widget may refuse it."""

from __future__ import annotations

import json

import pytest
from markdown_it import MarkdownIt

from attn_core import lessons as model
from classroom_store import rooms
from classroom_store.memory_rooms import MemoryRooms
from lab_ui import lesson_writer
from lab_ui.classroom import follower_screen, session
from lab_ui.nav import HOME, PAGES
from lab_ui.widgets import KEEP_PREFIX, url_id

PAGE_IDS = {p.url_path for p in (HOME, *PAGES)}
TITLE = {p.url_path: p.title for p in (HOME, *PAGES)}
SHIPPED = model.shipped(PAGE_IDS)
NOT_A_WIDGET_KEY = {"pr_cards"}  # Practice's card list is read from the link by the page itself
REFUSED = "is not allowed here"  # lab_ui.widgets' note under a widget that refused a link's value


def _step(**over):
    return {"page": "scaling", "state": {"sc_dk": 64}, "title": "t", "narration": ["a line"], **over}


def _lesson(**over):
    return {"id": "x", "title": "X", "steps": [_step()], **over}


# ---------------------------------------------------------------------------------- the format


def test_at_least_four_lessons_ship_and_each_names_real_pages_and_drills():
    assert len(SHIPPED) >= 4
    from attn_core.practice.drills import DRILLS

    for lesson in SHIPPED.values():
        assert 3 <= len(lesson.steps) <= model.MAX_STEPS
        for step in lesson.steps:
            assert step.page in PAGE_IDS and 1 <= len(step.narration) <= model.MAX_NARRATION_LINES
            assert step.question is None or step.question in DRILLS


def test_a_lesson_round_trips_through_its_file():
    for lesson in SHIPPED.values():
        assert model.loads(lesson.to_json(), PAGE_IDS, model.drill_ids()) == lesson


def test_state_values_are_written_as_the_url_writes_them():
    step = model.parse_step(_step(state={"a": 128, "b": 0.5, "c": True, "d": "causal"}), "s")
    assert step.state == {"a": "128", "b": "0.5", "c": "true", "d": "causal"}
    assert int(step.state["a"]) == 128  # an integer widget parses it: never "128.0"


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (_lesson(id="Bad Id"), "may use only"),
        (_lesson(steps=[]), "list of steps"),
        (_lesson(steps=[_step(page="nowhere")]), "no page 'nowhere'"),
        (_lesson(steps=[_step(question="99")]), "no Practice drill '99'"),
        (_lesson(steps=[_step(narration=[])]), "narration"),
        (_lesson(steps=[_step(narration=["x"] * 9)]), "at most 8"),
        (_lesson(steps=[_step(state={"a b": 1})]), "not a URL key"),
        (_lesson(steps=[_step(state={"a": float("nan")})]), "finite"),
        (_lesson(steps=[_step(extra=1)]), "unknown field"),
        (_lesson(steps=[_step()] * 31), "at most 30"),
        ([1, 2], "JSON object"),
    ],
)
def test_bad_lessons_are_refused_with_the_reason(raw, words):
    with pytest.raises(ValueError, match=words):
        model.parse(raw, PAGE_IDS, model.drill_ids())


def test_files_that_are_not_lessons_are_refused():
    with pytest.raises(ValueError, match="not JSON"):
        model.loads(b"\xff\xfe{", PAGE_IDS)
    with pytest.raises(ValueError, match="nested too deeply"):
        model.loads(b"[" * 100_000, PAGE_IDS)  # what the fuzzer uploads
    with pytest.raises(ValueError, match="at most 256 KiB"):
        model.loads(b" " * (model.MAX_FILE_BYTES + 1), PAGE_IDS)


# ------------------------------------------------------------------------ every shipped step


def _check_step(at, lesson: model.Lesson, index: int) -> None:
    step = lesson.steps[index]
    assert not at.exception, at.exception
    assert at.error.len == 0, [e.value for e in at.error]
    assert at.title[0].value == ("Attention Lab" if step.page == HOME.url_path else TITLE[step.page])
    assert at.markdown[0].value == f"**{step.title}**"  # the narration, first thing under the title
    assert f"step {index + 1} of {len(lesson.steps)}" in at.caption[0].value
    assert not [c.value for c in at.caption if REFUSED in c.value]
    assert at.query_params["lesson"] == lesson.id and at.query_params["lesson_step"] == str(index + 1)
    for key, want in step.state.items():
        if key in NOT_A_WIDGET_KEY:
            continue
        assert KEEP_PREFIX + key in at.session_state, f"no widget {key} on {step.page}"
        got = at.session_state[KEEP_PREFIX + key]
        if isinstance(got, bool):
            assert got == (want == "true"), key
        elif isinstance(got, int | float):
            assert float(got) == float(want), key
        else:
            assert url_id(got) == want, key


@pytest.mark.parametrize("lesson_id", list(SHIPPED))
def test_every_step_opens_its_page_at_its_settings(app, lesson_id):
    """Play from step 1 with the → button to the end, then one step back with ←."""
    lesson = SHIPPED[lesson_id]
    at = app(lesson=lesson_id)  # a lesson link opened on Home goes to step 1's page
    _check_step(at, lesson, 0)
    assert at.button(key="lesson_prev").disabled
    for index in range(1, len(lesson.steps)):
        at.button(key="lesson_next").click().run()
        _check_step(at, lesson, index)
    assert at.button(key="lesson_next").disabled
    at.button(key="lesson_prev").click().run()
    _check_step(at, lesson, len(lesson.steps) - 2)


def test_a_step_forgets_the_settings_the_last_view_left(app):
    at = app("pages/scaling.py")
    at.number_input(key="sc_seed").set_value(7).run()
    at.session_state["_lesson_box_open"] = True  # open the Lessons box
    at.run()
    at.selectbox(key="lesson_pick").set_value("scale-sqrt-dk")
    at.button(key="lesson_play").click().run()
    _check_step(at, SHIPPED["scale-sqrt-dk"], 0)
    assert at.number_input(key="sc_seed").value == 0  # the seed was not part of the step


def test_a_steps_question_opens_practice_and_the_lesson_goes_on(app):
    at = app(lesson="memory-128k")
    at.button(key="lesson_question").click().run()
    assert at.title[0].value == "Practice" and not at.exception
    assert at.multiselect(key="pr_cards").value == ["13"]
    assert at.query_params["lesson_step"] == "1"
    at.button(key="lesson_again").click().run()
    _check_step(at, SHIPPED["memory-128k"], 0)


def test_closing_the_lesson_and_an_unknown_one(app):
    at = app(lesson="causal-mask")
    at.button(key="lesson_close").click().run()
    assert "lesson" not in at.query_params
    assert not [b for b in at.button if b.key == "lesson_next"]
    odd = app(lesson="no-such-[lesson](x)")
    assert not odd.exception
    assert any("There is no lesson" in c.value for c in odd.caption)
    assert "lesson" not in odd.query_params  # not carried on
    for bad_step, shown in (("abc", 1), ("999", 6), ("-4", 1)):
        at = app(lesson="causal-mask", lesson_step=bad_step)
        _check_step(at, SHIPPED["causal-mask"], shown - 1)


# ------------------------------------------------------------------------------ the writer


def test_the_writer_saves_the_view_on_screen_and_downloads_a_lesson(app):
    at = app("pages/scaling.py")
    at.number_input(key="sc_dk").set_value(32).run()
    at.session_state["_lesson_writer_open"] = True  # open the "Write a lesson" box
    at.run()
    at.text_input(key="lesson_w_name").input("My first lesson")
    at.text_input(key="lesson_w_title").input("Narrow heads")
    at.text_area(key="lesson_w_text").input("Line one.\nLine two.")
    at.selectbox(key="lesson_w_question").set_value("3")
    at.button(key="lesson_w_save").click().run()
    at.switch_page("pages/masks.py").run()
    at.text_input(key="lesson_w_title").input("Masks")
    at.text_area(key="lesson_w_text").input("One line.")
    at.button(key="lesson_w_save").click().run()
    download = next(d for d in at.get("download_button") if "lesson_w_download" in d.proto.id)
    assert not download.proto.disabled
    # What the button serves: the draft, read back by the lesson reader.
    name = at.text_input(key="lesson_w_name").value
    raw = {"id": lesson_writer.slug(name), "title": name, "steps": at.session_state["_lesson_draft"]["steps"]}
    lesson = model.parse(raw, PAGE_IDS, model.drill_ids())
    assert lesson.id == "my-first-lesson" and [s.page for s in lesson.steps] == ["scaling", "masks"]
    assert lesson.steps[0].state["sc_dk"] == "32" and lesson.steps[0].question == "3"
    assert lesson.steps[0].narration == ("Line one.", "Line two.")
    # The file plays: loaded back by the same reader as the shipped ones.
    assert model.loads(lesson.to_json(), PAGE_IDS, model.drill_ids()) == lesson


# ----------------------------------------------------------------------------- in a room


@pytest.fixture
def memory_rooms(monkeypatch):
    """A fresh store that takes every view at once: a presenter stepping a lesson in AppTest
    changes views milliseconds apart, faster than a room's publish rate (which has its own tests
    in tests/classroom/test_rooms.py)."""
    monkeypatch.setattr(rooms, "_store", MemoryRooms(publish_every_s=0.0))
    # the follower runs the page itself (the path of a view changed in a fragment), so its widgets
    # and URL can be read here; the default path, the presenter's frame shown with no run, is
    # tests/browser/test_browser_lessons.py's follower on a phone
    monkeypatch.setattr(follower_screen, "VIEW_FRAMES", False)


def test_a_follower_moves_with_the_presenters_step(app, memory_rooms):
    presenter = app("pages/scaling.py")
    presenter.button(key="classroom_start").click().run()
    room_id = presenter.session_state[session.ROOM_KEY]["id"]
    presenter.session_state["_lesson_box_open"] = True
    presenter.run()
    presenter.selectbox(key="lesson_pick").set_value("causal-mask")
    presenter.button(key="lesson_play").click().run()
    follower = app(room=room_id)
    _check_step(follower, SHIPPED["causal-mask"], 0)
    presenter.button(key="lesson_next").click().run()
    presenter.button(key="lesson_next").click().run()
    follower.run()  # what the follower's poll triggers when the room's version moved
    _check_step(follower, SHIPPED["causal-mask"], 2)
    assert follower.session_state[session.ROOM_KEY]["following"]
    presenter.button(key="lesson_close").click().run()
    follower.run()
    assert not [b for b in follower.button if b.key == "lesson_next"]  # closed for the room too


# --------------------------------------------------------------------------- uploaded lessons


def _upload(at, raw: dict, name: str = "lesson.json"):
    """Upload ``raw`` through the Lessons box, as a visitor does; the upload plays at once."""
    at.session_state["_lesson_box_open"] = True
    at.run()
    at.file_uploader(key="lesson_upload").set_value(
        (name, json.dumps(raw).encode(), "application/json")
    ).run()
    assert not at.exception, at.exception
    return at


def _narrated(text: str, n: int = 2) -> dict:
    steps = [_step(title=f"{text} {i + 1}", narration=[f"{text}, line {i + 1}."]) for i in range(n)]
    return _lesson(id="shared", title=text, steps=steps)


def _listed(at) -> list[str]:
    return list(at.selectbox(key="lesson_pick").options)


def test_another_visitors_upload_with_the_same_id_never_replaces_a_teachers_lesson(app):
    teacher = _upload(app(), _narrated("Teacher"))
    mine = teacher.query_params["lesson"]
    assert mine != "shared" and mine not in SHIPPED  # a server-made id, not the file's
    assert teacher.markdown[0].value == "**Teacher 1**"
    stranger = _upload(app(), _narrated("Stranger"))  # the same id in the file
    assert stranger.query_params["lesson"] != mine
    teacher.button(key="lesson_next").click().run()
    assert teacher.markdown[0].value == "**Teacher 2**"
    assert teacher.query_params["lesson"] == mine
    # listed to its uploader only; the stranger's list has its own upload and the shipped ones
    assert "Teacher" in _listed(teacher) and "Stranger" not in _listed(teacher)
    assert "Stranger" in _listed(stranger) and "Teacher" not in _listed(stranger)
    assert set(SHIPPED[i].title for i in SHIPPED) <= set(_listed(stranger))


def test_a_file_with_a_shipped_id_never_replaces_the_shipped_lesson(app):
    teacher = _upload(app(), _narrated("Mine") | {"id": "causal-mask"})
    assert teacher.query_params["lesson"] != "causal-mask"
    other = app(lesson="causal-mask")
    _check_step(other, SHIPPED["causal-mask"], 0)


def test_a_follower_plays_the_lesson_its_presenter_uploaded(app, memory_rooms):
    presenter = app("pages/scaling.py")
    presenter.button(key="classroom_start").click().run()
    room_id = presenter.session_state[session.ROOM_KEY]["id"]
    _upload(presenter, _narrated("Uploaded", 3))
    follower = app(room=room_id)
    assert follower.markdown[0].value == "**Uploaded 1**"
    presenter.button(key="lesson_next").click().run()
    follower.run()
    assert follower.markdown[0].value == "**Uploaded 2**"
    assert "Uploaded" not in _listed(_upload(follower, _narrated("Own")))  # played, never listed


def test_the_lessons_box_names_the_playing_lesson_and_its_step(app):
    at = app(lesson="causal-mask")
    at.session_state["_lesson_box_open"] = True
    at.run()
    at.button(key="lesson_next").click().run()
    box = [c.value for c in at.sidebar.caption] + [m.value for m in at.sidebar.markdown]
    title = SHIPPED["causal-mask"].title
    assert any(title in text and "step 2 of 6" in text for text in box), box


# ------------------------------------------------------------- narration is shown, never followed

MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
HOSTILE_NARRATION = [
    "# WRONG FACT: softmax is linear",
    "Read [the answers](https://evil.example/phish) first.",
    "![pixel](https://tracker.example/p.gif)",
    "<img src=https://tracker.example/p.gif>",
]


def _walk(tokens):
    for token in tokens:
        yield token
        yield from _walk(token.children or [])


def test_uploaded_narration_renders_no_heading_link_image_or_html(app):
    raw = _lesson(id="hostile", title="Hostile", steps=[_step(title="Look", narration=HOSTILE_NARRATION)])
    at = _upload(app(), raw)
    shown = [m.value for m in at.markdown][1 : 1 + len(HOSTILE_NARRATION)]
    assert len(shown) == len(HOSTILE_NARRATION)
    for text in shown:
        kinds = {t.type for t in _walk(MD.parse(text))}
        assert not kinds & {"heading_open", "link_open", "image", "html_inline", "html_block"}, text


def test_a_crafted_lesson_id_in_the_address_is_shown_as_code(app):
    at = app(lesson="x]( [click](https://evil.example) `")
    said = next(c.value for c in at.caption if "There is no lesson" in c.value)
    kinds = {t.type for t in _walk(MD.parse(said))}
    assert "link_open" not in kinds and "code_inline" in kinds, said
