"""Lessons uploaded to this server process, each one its uploader's.

An upload gets an id the server makes (``up-`` and 20 random hex digits), never the id written in
the file, so no upload can take another's place, nor a shipped lesson's: the file's id is a name
anyone can copy from an address bar, the server's is not. The id is what a room carries to its
followers (``?lesson=<id>``), so a screen that has the id plays the lesson; only its uploader
sees it listed.

The shelf is bounded: at most `PER_UPLOADER` lessons an uploader (its own oldest goes first) and
`TOTAL` in all. When full, a lesson whose uploader's session has ended goes first, then the
oldest of the uploader holding the most (ties: the longest-held), and never another uploader's
only lesson: when every uploader holds one, the upload is refused (`ShelfFull`) until one ends.
Pure Python; lab_ui/lessons.py keeps one shelf per process and names the uploader by its session.
"""

from __future__ import annotations

import secrets
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

from attn_core.lessons import Lesson

PREFIX = "up-"  # an uploaded lesson's id; no shipped lesson's id starts with it
PER_UPLOADER = 8  # a teacher's lessons for a class, with room to spare
TOTAL = 32  # a few KiB each (256 KiB at most): this process keeps at most 8 MiB of uploads


class ShelfFull(ValueError):
    """Every lesson on a full shelf is some other live uploader's only one."""


def new_id() -> str:
    """A fresh upload id: 80 random bits, lower-case hex (the lesson id alphabet)."""
    return PREFIX + secrets.token_hex(10)


@dataclass(frozen=True)
class _Upload:
    owner: str
    lesson: Lesson


class LessonShelf:
    """The uploads of one server process, oldest first, safe to share between sessions."""

    def __init__(self, per_uploader: int = PER_UPLOADER, total: int = TOTAL) -> None:
        self.per_uploader, self.total = per_uploader, total
        self._uploads: OrderedDict[str, _Upload] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, owner: str, lesson: Lesson, alive: Callable[[str], bool] = lambda owner: True) -> Lesson:
        """Keep ``lesson`` for ``owner`` under a new id and return it as kept. The same lesson
        uploaded again by the same owner keeps its first id. ``alive(owner)`` says whether an
        uploader's session is still open. ShelfFull when nothing may make room."""
        with self._lock:
            for lesson_id, upload in self._uploads.items():
                if upload.owner == owner and replace(upload.lesson, id=lesson.id) == lesson:
                    self._uploads.move_to_end(lesson_id)
                    return upload.lesson
            mine = [i for i, u in self._uploads.items() if u.owner == owner]
            while len(mine) >= self.per_uploader:
                del self._uploads[mine.pop(0)]
            while len(self._uploads) >= self.total:
                del self._uploads[self._to_evict(owner, alive)]
            lesson_id = new_id()
            while lesson_id in self._uploads:  # 80 random bits: never in practice
                lesson_id = new_id()
            kept = replace(lesson, id=lesson_id)
            self._uploads[lesson_id] = _Upload(owner, kept)
            return kept

    def _to_evict(self, owner: str, alive: Callable[[str], bool]) -> str:
        """The id that leaves a full shelf to make room for ``owner``'s upload."""
        for lesson_id, upload in self._uploads.items():  # oldest first
            if upload.owner != owner and not alive(upload.owner):
                return lesson_id
        held = Counter(u.owner for u in self._uploads.values())
        first_held = list(dict.fromkeys(u.owner for u in self._uploads.values()))
        largest = max(first_held, key=lambda o: held[o])  # max keeps the first of a tie
        if held[largest] < 2:
            if owner not in held:
                raise ShelfFull(
                    f"this server holds {self.total} uploaded lessons, each the only one of a teacher "
                    "still here; try again when one has left, or ship the lesson in assets/lessons/"
                )
            largest = owner  # every uploader holds one: the uploader's own goes
        return next(i for i, u in self._uploads.items() if u.owner == largest)

    def get(self, lesson_id: str) -> Lesson | None:
        """The uploaded lesson with this id, whoever uploaded it (a room's followers play it)."""
        with self._lock:
            upload = self._uploads.get(lesson_id)
        return None if upload is None else upload.lesson

    def owned_by(self, owner: str) -> list[Lesson]:
        """``owner``'s uploads, oldest first: what its Lessons box lists."""
        with self._lock:
            return [u.lesson for u in self._uploads.values() if u.owner == owner]

    def __len__(self) -> int:
        with self._lock:
            return len(self._uploads)
