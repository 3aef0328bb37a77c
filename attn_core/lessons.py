"""Lessons: a scripted walk through the lab's pages, one step per view, each with a few lines of
narration and, optionally, a drill to ask the room.

A lesson is a small JSON file (``assets/lessons/*.json``, or one a teacher downloaded from the
lab's lesson writer)::

    {"id": "scale-sqrt-dk", "title": "Why scale by 1/√d_k", "summary": "…",
     "steps": [{"page": "scaling", "state": {"sc_section": "variance", "sc_dk": 128},
                "title": "…", "narration": ["a line", "another line"], "question": "3"}]}

``page`` is a page's url_path (lab_ui/nav.py), ``state`` the page's URL query parameters exactly
as the address bar carries them (lab_ui/widgets.py keeps every widget's value there), and
``question`` a Practice drill id (a card number, attn_core.practice.drills). Loading validates
everything and bounds every size, so a hand-edited or uploaded file is refused with one line
saying what is wrong, never half-loaded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LESSONS_DIR = Path(__file__).resolve().parents[1] / "assets" / "lessons"
MAX_FILE_BYTES = 256 * 1024  # a lesson is text: 30 steps of narration fit in a few KiB
MAX_STEPS = 30
MAX_TITLE = 120  # characters, lesson and step titles
MAX_NARRATION_LINES = 8  # "a few lines"
MAX_LINE = 400  # characters per narration line
MAX_STATE_KEYS = 40
MAX_VALUE = 4000  # characters per URL value (the longest widget text the lab accepts, widgets.text_area)
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,47}$")
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,47}$")


@dataclass(frozen=True)
class Step:
    """One view of the lesson: a page opened at ``state`` with ``narration`` beside it."""

    page: str  # a page's url_path (lab_ui/nav.py)
    state: dict[str, str]  # the page's URL query parameters, as text
    title: str
    narration: tuple[str, ...]  # a few lines, markdown
    question: str | None = None  # a Practice drill id (a card number)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"page": self.page, "state": dict(self.state), "title": self.title}
        out["narration"] = list(self.narration)
        if self.question is not None:
            out["question"] = self.question
        return out


@dataclass(frozen=True)
class Lesson:
    id: str  # lower-case letters, digits, - and _: what a link carries (?lesson=<id>)
    title: str
    summary: str
    steps: tuple[Step, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "summary": self.summary,
            "steps": [s.as_dict() for s in self.steps],
        }

    def to_json(self) -> str:
        """The lesson as the file the lab loads (and the lesson writer downloads)."""
        return json.dumps(self.as_dict(), ensure_ascii=False, indent=2) + "\n"


def _text(value: Any, what: str, limit: int, *, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be text, not {type(value).__name__}")
    value = value.strip()
    if not value and not empty:
        raise ValueError(f"{what} is empty")
    if len(value) > limit:
        raise ValueError(f"{what} is {len(value)} characters long; at most {limit}")
    return value


def url_text(value: Any, what: str) -> str:
    """A state value as the URL carries it: text as is, an integer without a decimal point (an
    integer widget reads "128", never "128.0"), a bool as ``true``/``false``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{what} is not a finite number")
        return repr(value)
    return _text(value, what, MAX_VALUE, empty=True)


def _state(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: state must be an object of URL keys and values")
    if len(raw) > MAX_STATE_KEYS:
        raise ValueError(f"{where}: state has {len(raw)} keys; at most {MAX_STATE_KEYS}")
    state = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not _KEY.match(key):
            raise ValueError(f"{where}: {str(key)[:40]!r} is not a URL key (letters, digits, _)")
        state[key] = url_text(value, f"{where}: the value of {key}")
    return state


def _narration(raw: Any, where: str) -> tuple[str, ...]:
    lines = [raw] if isinstance(raw, str) else raw
    if not isinstance(lines, list | tuple) or not lines:
        raise ValueError(f"{where}: narration must be a line or a list of lines")
    if len(lines) > MAX_NARRATION_LINES:
        raise ValueError(f"{where}: narration has {len(lines)} lines; at most {MAX_NARRATION_LINES}")
    return tuple(_text(line, f"{where}: a narration line", MAX_LINE) for line in lines)


def parse_step(
    raw: Any, where: str, pages: Collection[str] | None = None, drills: Collection[str] | None = None
) -> Step:
    """One step from its dict; ``pages`` and ``drills`` (when given) are the ids it may name."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} must be an object")
    unknown = set(raw) - {"page", "state", "title", "narration", "question"}
    if unknown:
        raise ValueError(f"{where}: unknown field {sorted(unknown)[0][:40]!r}")
    page = _text(raw.get("page"), f"{where}: page", 64)
    if pages is not None and page not in pages:
        raise ValueError(f"{where}: no page {page!r}; pages are {', '.join(sorted(pages))}")
    question = raw.get("question")
    if question is not None:
        question = url_text(question, f"{where}: question")
        if drills is not None and question not in drills:
            raise ValueError(f"{where}: no Practice drill {question[:40]!r}")
    return Step(
        page=page,
        state=_state(raw.get("state"), where),
        title=_text(raw.get("title"), f"{where}: title", MAX_TITLE),
        narration=_narration(raw.get("narration"), where),
        question=question,
    )


def parse(raw: Any, pages: Collection[str] | None = None, drills: Collection[str] | None = None) -> Lesson:
    """A lesson from its dict (a parsed JSON file); ValueError naming the first thing wrong."""
    if not isinstance(raw, Mapping):
        raise ValueError("a lesson must be a JSON object with id, title and steps")
    lesson_id = _text(raw.get("id"), "the lesson's id", 48)
    if not _ID.match(lesson_id):
        raise ValueError(f"the lesson's id {lesson_id!r} may use only a-z, 0-9, - and _")
    steps = raw.get("steps")
    if not isinstance(steps, list | tuple) or not steps:
        raise ValueError("a lesson needs a list of steps")
    if len(steps) > MAX_STEPS:
        raise ValueError(f"the lesson has {len(steps)} steps; at most {MAX_STEPS}")
    return Lesson(
        id=lesson_id,
        title=_text(raw.get("title"), "the lesson's title", MAX_TITLE),
        summary=_text(raw.get("summary", ""), "the lesson's summary", MAX_LINE, empty=True),
        steps=tuple(parse_step(s, f"step {i + 1}", pages, drills) for i, s in enumerate(steps)),
    )


def loads(
    data: bytes | str, pages: Collection[str] | None = None, drills: Collection[str] | None = None
) -> Lesson:
    """A lesson from a file's bytes (an upload): bounded, UTF-8 JSON, validated by `parse`."""
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"the file is {len(data):,} bytes; a lesson is at most {MAX_FILE_BYTES // 1024} KiB")
    try:
        raw = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"the file is not JSON: {exc}") from None
    except RecursionError:  # [[[[… : valid-looking JSON nested past the parser's stack
        raise ValueError("the file is not a lesson: its JSON is nested too deeply") from None
    return parse(raw, pages, drills)


def drill_ids() -> frozenset[str]:
    """The Practice drills a step may ask (loaded on first use: the drills import torch)."""
    from attn_core.practice.drills import DRILLS

    return frozenset(DRILLS)


def shipped(pages: Collection[str] | None = None, directory: Path = LESSONS_DIR) -> dict[str, Lesson]:
    """Every lesson in ``directory`` by id, in file-name order. A broken shipped file raises (the
    tests load them all), naming the file."""
    drills = drill_ids()
    lessons: dict[str, Lesson] = {}
    for path in sorted(directory.glob("*.json")):
        try:
            lesson = loads(path.read_bytes(), pages, drills)
        except ValueError as exc:
            raise ValueError(f"{path.name}: {exc}") from None
        if lesson.id in lessons:
            raise ValueError(f"{path.name}: a second lesson with id {lesson.id!r}")
        lessons[lesson.id] = lesson
    return lessons
