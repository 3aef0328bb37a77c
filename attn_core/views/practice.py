"""What the Practice page shows: the next question, the feedback on an answer, the progress."""

from __future__ import annotations

from dataclasses import dataclass

from attn_core.practice import drills
from attn_core.practice.answers import max_chars
from attn_core.practice.progress import Attempt, CardProgress, from_csv, summarize, to_csv
from attn_core.practice.question import Answer, AnswerKind, Difficulty, Question, Verdict, fmt

__all__ = [  # what the page reads (the page import rule: tests/pages/test_page_shape.py)
    "CARD_TITLES",
    "TIMERS",
    "Difficulty",
    "ProgressView",
    "cards_from_link",
    "feedback",
    "from_csv",
    "max_chars",
    "next_question",
    "progress",
    "question_seed",
    "record",
    "to_csv",
]

TIMERS: dict[str, float | None] = {"off": None, "2 min": 120.0, "5 min": 300.0, "10 min": 600.0}
CARD_TITLES: dict[str, str] = {card: drill.title for card, drill in drills.DRILLS.items()}


def cards_from_link(text: str | None) -> list[str]:
    """The cards a link asks for ("13,14"); every card when it names none that exist."""
    wanted = [c.strip() for c in (text or "").split(",") if c.strip() in CARD_TITLES]
    return wanted or list(CARD_TITLES)


def question_seed(session_seed: int, number: int) -> int:
    """The seed of the session's ``number``-th question: fresh numbers every time, reproducible."""
    return (int(session_seed) * 1_000_003 + int(number)) % 2**31


def next_question(cards: list[str], difficulty: Difficulty | str, session_seed: int, number: int) -> Question:
    """The session's ``number``-th question, over the chosen cards."""
    seed = question_seed(session_seed, number)
    return drills.draw(drills.pick_card(cards, seed), seed, difficulty)


@dataclass(frozen=True)
class Feedback:
    verdict: Verdict
    headline: str  # one line: right or wrong, and by how much
    slip_note: str  # "your answer is what you get when you …", or ""
    over_time: bool
    steps: tuple[str, ...]
    expected: str  # the answer, formatted with its unit


def show_answer(question: Question, value: Answer | None = None) -> str:
    """An answer (the expected one by default) as the page prints it, with its unit."""
    value = question.answer if value is None else value
    if question.answer_kind is AnswerKind.CHOICE:
        return str(value)
    if question.answer_kind is AnswerKind.VECTOR:
        return "(" + ", ".join(fmt(float(x)) for x in value) + ")"
    if question.answer_kind is AnswerKind.MATRIX:
        return " | ".join(", ".join(fmt(float(x)) for x in row) for row in value)
    return f"{fmt(float(value))} {question.unit}".strip()


def feedback(question: Question, text: str, seconds: float, timer: str = "off") -> Feedback:
    """Judge a typed answer and say what it means; bad input comes back as a headline, never raised."""
    verdict = question.judge(text)
    limit = TIMERS.get(timer)
    over = limit is not None and seconds > limit
    expected = show_answer(question)
    if verdict.got is None:
        headline = f"Could not read the answer: {verdict.error}."
    elif verdict.correct:
        headline = f"Right: {expected} (within {question.tolerance_text})."
    else:
        off = "" if verdict.relative_error is None else f", {_how_far(verdict.relative_error)} off"
        headline = f"Not quite: you gave {show_answer(question, verdict.got)}, the answer is {expected}{off}."
    slip = "" if verdict.slip is None else f"Your answer is exactly what you get when you {verdict.slip}."
    return Feedback(verdict, headline, slip, over, question.steps, expected)


def _how_far(relative_error: float) -> str:
    if relative_error == float("inf"):
        return "a different shape,"
    return f"{100 * relative_error:.3g}%"


def record(
    question: Question, seed: int, difficulty: str, fb: Feedback, seconds: float, text: str
) -> Attempt:
    """The progress row of one answered question."""
    return Attempt(
        card=question.card,
        seed=int(seed),
        difficulty=str(difficulty),
        correct=fb.verdict.correct,
        seconds=round(float(seconds), 1),
        slip=fb.verdict.slip or "",
        answer=text[:200],
    )


@dataclass(frozen=True)
class ProgressView:
    """The session's progress: one row per card answered (the drill's or an uploaded log's), and the
    drill's cards not tried yet. Before any answer ``rows`` is empty: the page says so in words
    rather than drawing a chart and a table of zeros."""

    rows: tuple[CardProgress, ...]
    untried: tuple[str, ...]


def progress(attempts: list[Attempt], cards: list[str]) -> ProgressView:
    """Per card answered: tried, right, time, slips; and the chosen cards with no answer yet."""
    rows = sorted(summarize(attempts), key=lambda r: (len(r.card), r.card))
    tried = {r.card for r in rows}
    return ProgressView(tuple(rows), tuple(c for c in cards if c not in tried))
