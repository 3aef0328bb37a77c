"""lab_ui.lesson_shelf: an upload is its uploader's, under an id the server made, and the shelf's
bounds never take one uploader's only lesson to make room for another's.

Oracle: hand counts of who uploaded what, in which order (each case says what must be left)."""

from __future__ import annotations

import re

import pytest

from attn_core.lessons import Lesson, Step
from lab_ui.lesson_shelf import PREFIX, LessonShelf, ShelfFull

STEP = Step(page="scaling", state={}, title="t", narration=("a line",))


def _lesson(name: str) -> Lesson:
    return Lesson(id="same-id-in-every-file", title=name, summary="", steps=(STEP,))


def _titles(shelf: LessonShelf, owner: str) -> list[str]:
    return [lesson.title for lesson in shelf.owned_by(owner)]


def test_an_upload_gets_a_fresh_server_id_and_never_replaces_another():
    shelf = LessonShelf()
    teacher = shelf.add("teacher", _lesson("Teacher's"))
    stranger = shelf.add("stranger", _lesson("Stranger's"))
    assert re.fullmatch(PREFIX + r"[0-9a-f]{20}", teacher.id) and teacher.id != stranger.id
    assert shelf.get(teacher.id).title == "Teacher's" and shelf.get(stranger.id).title == "Stranger's"
    assert _titles(shelf, "teacher") == ["Teacher's"] and _titles(shelf, "stranger") == ["Stranger's"]
    assert shelf.get("same-id-in-every-file") is None


def test_the_same_lesson_uploaded_again_keeps_its_id():
    shelf = LessonShelf()
    first = shelf.add("teacher", _lesson("A"))
    assert shelf.add("teacher", _lesson("A")).id == first.id and len(shelf) == 1
    assert shelf.add("other", _lesson("A")).id != first.id  # another uploader's is its own


def test_an_uploader_past_its_cap_loses_its_own_oldest():
    shelf = LessonShelf(per_uploader=3, total=10)
    shelf.add("other", _lesson("other's"))
    for i in range(5):
        shelf.add("busy", _lesson(f"b{i}"))
    assert _titles(shelf, "busy") == ["b2", "b3", "b4"] and _titles(shelf, "other") == ["other's"]


def test_a_full_shelf_takes_the_largest_uploaders_oldest_first():
    shelf = LessonShelf(per_uploader=8, total=6)
    shelf.add("a", _lesson("a0"))
    for i in range(3):
        shelf.add("b", _lesson(f"b{i}"))
    shelf.add("c", _lesson("c0"))
    shelf.add("c", _lesson("c1"))  # 6: a holds 1, b 3, c 2
    shelf.add("d", _lesson("d0"))  # b is largest: b0 goes
    assert _titles(shelf, "b") == ["b1", "b2"]
    shelf.add("e", _lesson("e0"))  # b and c hold 2 each; b's lessons are the longest held
    assert _titles(shelf, "b") == ["b2"] and _titles(shelf, "c") == ["c0", "c1"]
    shelf.add("f", _lesson("f0"))  # c is largest now
    assert _titles(shelf, "c") == ["c1"]
    assert [_titles(shelf, o) for o in "adef"] == [["a0"], ["d0"], ["e0"], ["f0"]]


def test_never_another_uploaders_only_lesson():
    shelf = LessonShelf(per_uploader=8, total=3)
    for owner in "abc":
        shelf.add(owner, _lesson(owner))
    with pytest.raises(ShelfFull, match="only one"):
        shelf.add("d", _lesson("d"))
    assert [_titles(shelf, o) for o in "abc"] == [["a"], ["b"], ["c"]]
    shelf.add("a", _lesson("a again"))  # its own only lesson makes room for its next
    assert _titles(shelf, "a") == ["a again"] and len(shelf) == 3


def test_a_departed_uploaders_lessons_go_first():
    shelf = LessonShelf(per_uploader=8, total=3)
    for owner in "abb":
        shelf.add(owner, _lesson(owner + str(len(shelf))))
    shelf.add("d", _lesson("d"), alive=lambda owner: owner != "a")  # b is largest, but a has left
    assert _titles(shelf, "a") == [] and _titles(shelf, "b") == ["b1", "b2"]
