"""A room's live question (no Streamlit): the question as a room keeps it (`Asked`: a Practice
drill as card, seed and difficulty, so every screen draws the same numbers) and the checks on its
answers. A room takes one answer per follower seat (a rewrite replaces it), each at most
MAX_ANSWER_CHARS, at most the store's `answer_cap` of them; a seat must be seated to answer. One
network address gives at most as many answers to a question as it may hold seats (its seats that
left still count), and a seated follower's answer is always taken: when the room has kept all it
keeps, an answer of a seat that has left makes way (`make_way`, the one statement of the rule).
The answers live and die with the room (in Redis a hash whose expiry the presenter's check-in
refreshes), and asking a new question deletes the last one's. They are keyed by the seat's random
id: nothing names a student, and nothing of theirs outlives the room.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from classroom_store.records import RoomError


@dataclass(frozen=True)
class Asked:
    """The room's question: a drill (attn_core.practice.drills.draw) and whether it is still open
    for answers (closed: followers are shown the answer and its worked steps)."""

    id: str  # names this asking: an answer sent for an older question is refused
    card: str
    seed: int
    difficulty: str
    open: bool = True

    @property
    def tag(self) -> str:
        """What a follower's poll compares: changes when a question is asked or closed."""
        return f"{self.id}:{'open' if self.open else 'closed'}"

    def encode(self) -> str:
        return json.dumps(
            {"id": self.id, "card": self.card, "seed": self.seed, "difficulty": self.difficulty}
        )

    @staticmethod
    def decode(text: str, state: str) -> Asked:
        got = json.loads(text)
        return Asked(got["id"], got["card"], int(got["seed"]), got["difficulty"], state == "open")


MAX_ANSWER_CHARS = 2000  # a typed answer (attn_core.practice.answers' own limit)
MAX_ANSWERS = 1024  # answers a room keeps per question, whatever its seats (attn_core.practice.tally)
_CARD = re.compile(r"^[0-9]{1,3}$")
DIFFICULTIES = ("easy", "medium", "hard")  # attn_core.practice.question.Difficulty's values


def new_question(card: object, difficulty: object) -> Asked:
    """A new question for the room: a fresh seed and id."""
    if not isinstance(card, str) or not _CARD.match(card):
        raise RoomError("a room's question is a drill's card number")
    if difficulty not in DIFFICULTIES:
        raise RoomError(f"difficulty must be one of {', '.join(DIFFICULTIES)}")
    return Asked(secrets.token_hex(6), card, secrets.randbelow(2**31), str(difficulty))


def answer_cap(seats: int) -> int:
    """Answers a room keeps per question: one per seat, at most MAX_ANSWERS."""
    return min(seats, MAX_ANSWERS)


@dataclass(frozen=True)
class FirstAnswer:
    """What the answers rule weighs when a seat answers a question for the first time (a rewrite
    of a kept answer is always taken)."""

    counted: bool  # the seat already counts against its address (its answer since made way)
    by_address: int  # seats of its address that answered this question, gone or not
    per_address: int  # answers the address may give: the seats it may hold in the room
    kept: int  # answers the room keeps now
    cap: int  # the most it keeps (`answer_cap`)


def make_way(first: FirstAnswer, departed: Callable[[], str | None]) -> str | None:
    """The answers rule, the one statement of it (memory_rooms calls it; redis_scripts.ANSWER
    takes the same steps in Lua, given ``cap`` and the seats per address as arguments):
    1. an address gives at most as many answers as it may hold seats, its seats that left still
       counting (answers_per_client);
    2. while the room keeps fewer than ``cap``, the answer is taken;
    3. else the answer of a seat that has left (``departed()``) makes way, so a seated student's
       answer is always taken; only a room whose every answer is a seated one is full.
    Returns the seat whose answer goes (None: none need go)."""
    if not first.counted and first.by_address >= first.per_address:
        raise answers_per_client(first.per_address)
    if first.kept < first.cap:
        return None
    left = departed()
    if left is None:
        raise answers_full(first.cap)
    return left


def check_answer(question_id: object, seat: object, text: object) -> None:
    if not isinstance(question_id, str) or not isinstance(seat, str) or not 0 < len(seat) <= 64:
        raise RoomError("an answer names its question and seat")
    if not isinstance(text, str):
        raise RoomError("an answer is text")
    if len(text) > MAX_ANSWER_CHARS:
        raise RoomError(f"an answer is at most {MAX_ANSWER_CHARS:,} characters; this one is {len(text):,}")


def not_open() -> RoomError:
    return RoomError("this question is closed or has been replaced by a new one")


def not_seated() -> RoomError:
    return RoomError("only a screen seated in the room can answer")


def answers_per_client(per_client: int) -> RoomError:
    return RoomError(
        f"your network address has given {per_client:,} answers to this question, as many as it holds seats"
    )


def answers_full(cap: int) -> RoomError:
    return RoomError(f"the room has taken {cap:,} answers, as many as it keeps")
