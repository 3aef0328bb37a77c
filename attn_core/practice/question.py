"""A drill question, and how a typed answer to it is judged.

A generator draws the numbers, calls the card's own attn_core function for the answer and for
each recognisable slip, and returns a `Question`. `Question.judge` parses the learner's text,
compares it with the answer at the stated tolerance, and names the slip an answer matches.

The skeleton every card fills in: a question maker takes the drawn numbers and returns what it
worked out from them (`Worked`: prompt, answer, worked steps, slips, page link); `asks` declares
the rest once, above the maker (card, title, answer kind, unit, tolerance, hint), and turns the
maker into one that returns the full `Question`, its inputs being the maker's own arguments.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from typing import Any

import numpy as np

from attn_core.practice.answers import parse_matrix, parse_number, parse_vector


class Difficulty(StrEnum):
    EASY = "easy"  # round numbers, the card's own setting
    MEDIUM = "medium"
    HARD = "hard"  # awkward sizes and values


class AnswerKind(StrEnum):
    NUMBER = "number"
    VECTOR = "vector"
    MATRIX = "matrix"
    CHOICE = "choice"


Answer = float | tuple[float, ...] | tuple[tuple[float, ...], ...] | str


@dataclass(frozen=True)
class PageLink:
    """The card's live page section with these exact numbers loaded, in ids only: the page, its
    section, each input by its name on that page and a choice by its id. lab_ui/open_page.py, the
    owner of the pages' widget keys, turns it into the page's URL state (`drill_params`)."""

    url_path: str  # the page, as in lab_ui/nav.py
    section: str  # what to look at there, in words (the section's label where the page has sections)
    section_id: str = ""  # the page's section by the id its URL keeps ("kv"); "" on a page without
    values: dict[str, str] = field(default_factory=dict)  # the page's own inputs by name ("T", "dk")
    inputs: dict[str, str] = field(default_factory=dict)  # the shared Q, K, V picker's by name ("src", "L")


def choice_id(option: Enum) -> str:
    """What a page's URL carries for an Enum choice: the member's name, lower-cased
    (lab_ui.widgets.url_id's rule), so that a relabelled option keeps the link working."""
    return option.name.lower()


@dataclass(frozen=True)
class PageSection:
    """One section of a page as a drill links to it: the page (its url_path in lab_ui/nav.py), the
    id its URL keeps for the section and the label it shows.
    tests/practice/test_page_links.py opens every drill's link and checks the page keeps each value."""

    url_path: str
    id: str  # "kv": the page's Section member, lower-cased
    label: str  # "KV cache & GQA", what the feedback names

    def link(self, values: dict[str, str] | None = None, inputs: dict[str, str] | None = None) -> PageLink:
        """This section with ``values`` (the page's inputs by name) and ``inputs`` (the shared
        picker's by name) loaded."""
        return PageLink(self.url_path, self.label, self.id, dict(values or {}), dict(inputs or {}))


@dataclass(frozen=True)
class Question:
    card: str  # "13"
    title: str  # the card's result in a phrase
    prompt: str  # our own words, with the drawn numbers (markdown)
    inputs: dict[str, Any]  # the drawn numbers by name
    answer_kind: AnswerKind
    answer: Answer  # what the card's own function returns for these inputs
    steps: tuple[str, ...]  # the worked steps: the algebra, then the numbers substituted
    slips: dict[str, Answer]  # what each recognisable slip produces from the same inputs
    link: PageLink | None = None
    unit: str = ""  # the unit the answer is asked in ("KiB", "%", "" for a plain number)
    rel_tol: float = 5e-3  # numbers: accepted within this relative error …
    abs_tol: float = 0.0  # … or this absolute one (for answers near 0)
    choices: tuple[str, ...] = ()  # for AnswerKind.CHOICE
    hint: str = ""  # the answer format, shown under the box

    @property
    def tolerance_text(self) -> str:
        """How close counts as right, stated on screen."""
        if self.answer_kind is AnswerKind.CHOICE:
            return "exact choice"
        parts = [f"±{100 * self.rel_tol:.2g}% relative"]
        if self.abs_tol:
            parts.append(f"or ±{self.abs_tol:g} absolute")
        return " ".join(parts) + (" per entry" if self.answer_kind is not AnswerKind.NUMBER else "")

    def parse(self, text: str) -> Answer:
        """The learner's text as an answer of this question's kind; ValueError with a message."""
        if self.answer_kind is AnswerKind.NUMBER:
            return parse_number(text, self.unit)
        if self.answer_kind is AnswerKind.VECTOR:
            return parse_vector(text)
        if self.answer_kind is AnswerKind.MATRIX:
            return parse_matrix(text)
        if text not in self.choices:
            raise ValueError(f"pick one of: {', '.join(self.choices)}")
        return text

    def close(self, got: Answer, want: Answer) -> bool:
        """Whether ``got`` equals ``want`` at this question's tolerance (shapes must agree)."""
        if self.answer_kind is AnswerKind.CHOICE:
            return got == want
        a, b = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
        if a.shape != b.shape or not np.all(np.isfinite(b)):
            return False
        return bool(np.all(np.abs(a - b) <= np.maximum(self.rel_tol * np.abs(b), self.abs_tol)))

    def judge(self, text: str) -> Verdict:
        """Parse and judge one typed answer. Bad input comes back as a verdict with ``error``."""
        try:
            got = self.parse(text)
        except ValueError as exc:
            return Verdict(correct=False, got=None, error=str(exc))
        if self.close(got, self.answer):
            return Verdict(correct=True, got=got, relative_error=_relative_error(got, self.answer))
        slip = next((name for name, value in self.slips.items() if self.close(got, value)), None)
        return Verdict(correct=False, got=got, relative_error=_relative_error(got, self.answer), slip=slip)


@dataclass(frozen=True)
class Verdict:
    correct: bool
    got: Answer | None  # the parsed answer, None when it could not be read
    error: str = ""  # why the text could not be read
    relative_error: float | None = None  # max |got − answer| / |answer| (numbers, vectors)
    slip: str | None = None  # the recognised slip the answer equals, if any


def _relative_error(got: Answer, want: Answer) -> float | None:
    if isinstance(want, str):
        return None
    a, b = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if a.shape != b.shape:
        return math.inf
    scale = np.maximum(np.abs(b), 1e-300)
    return float(np.max(np.abs(a - b) / scale))


Generator = Callable[[np.random.Generator, Difficulty], Question]


@dataclass(frozen=True)
class CardDrill:
    """One card's drill: its generator, and the draw that reproduces the card's own numbers."""

    card: str
    title: str
    generate: Generator
    card_numbers: Callable[[], Question]  # the card's own example, as a question
    tags: tuple[str, ...] = field(default=())


def fmt(x: float, digits: int = 4) -> str:
    """A number as a drill prints it: thousands separators for integers, 4 significant digits else."""
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:.{digits}g}"


def vec(values) -> str:
    return "(" + ", ".join(fmt(float(v), 4) for v in values) + ")"


Maker = Callable[[np.random.Generator, Difficulty], Question]


def pick_variant(
    rng: np.random.Generator,
    difficulty: Difficulty,
    makers: tuple[Maker, ...],
    worked: tuple[Callable[[], Question], ...] = (),
) -> Question:
    """One of a card's kinds of question, fresh numbers drawn by ``makers[i]``. At EASY, one draw in
    four is one of the card's own worked examples (its printed check numbers), so they come up too."""
    if worked and difficulty is Difficulty.EASY and rng.random() < 0.25:
        return worked[int(rng.integers(len(worked)))]()
    return makers[int(rng.integers(len(makers)))](rng, difficulty)


@dataclass(frozen=True)
class Worked:
    """What a card's question maker works out from the drawn numbers."""

    prompt: str
    answer: Answer
    steps: tuple[str, ...]
    slips: dict[str, Answer]
    link: PageLink | None = None
    inputs: dict[str, Any] | None = None  # the drawn numbers by name; by default the maker's arguments


def asks(
    card: str,
    title: str,
    *,
    kind: AnswerKind = AnswerKind.NUMBER,
    unit: str = "",
    rel_tol: float = 5e-3,
    abs_tol: float = 0.0,
    choices: tuple[str, ...] = (),
    hint: str = "",
) -> Callable[[Callable[..., Worked]], Callable[..., Question]]:
    """The drill skeleton: what is fixed about one kind of question, declared above its maker.

    The decorated maker is called with the drawn numbers and returns a `Worked`; the result is a
    maker of full `Question`s whose ``inputs`` are the call's arguments by name (defaults filled in),
    unless the `Worked` names its own."""

    def skeleton(maker: Callable[..., Worked]) -> Callable[..., Question]:
        signature = inspect.signature(maker)

        @functools.wraps(maker)
        def question(*args: Any, **kwargs: Any) -> Question:
            worked = maker(*args, **kwargs)
            inputs = worked.inputs
            if inputs is None:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                inputs = dict(bound.arguments)
            return Question(
                card=card,
                title=title,
                prompt=worked.prompt,
                inputs=inputs,
                answer_kind=kind,
                answer=worked.answer,
                steps=worked.steps,
                slips=worked.slips,
                link=worked.link,
                unit=unit,
                rel_tol=rel_tol,
                abs_tol=abs_tol,
                choices=choices,
                hint=hint,
            )

        return question

    return skeleton


def variant_drill(
    card: str, title: str, makers: tuple[Maker, ...], worked: tuple[Callable[[], Question], ...]
) -> CardDrill:
    """A card's drill that draws one of its kinds of question (`pick_variant`); the card's own
    numbers are its first worked example."""
    return CardDrill(card, title, functools.partial(pick_variant, makers=makers, worked=worked), worked[0])
