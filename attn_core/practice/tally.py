"""A room's answers to one drill, counted: how many answered, how many were right, and the wrong
ones grouped by the slip that produces them ("12 used the 32 query heads instead of the 8 KV
heads").

Each answer is judged by the question's own `Question.judge`, the same check and slip matching
the Practice page uses, so a room and a lone learner are told the same thing. Everyone in the
room answers the same question: `drills.draw(card, seed, difficulty)` gives the same numbers for
the same three values, so a room keeps only those. Nothing here knows who answered: answers come
keyed by an opaque seat id, one per seat, and only counts come out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass

from attn_core.practice.answers import MAX_ANSWER_CHARS
from attn_core.practice.question import Question, Verdict

MAX_SEATS = 10_000  # seats counted per question: a room's most (classroom_store/rooms.py MAX_SEATS)


@dataclass(frozen=True)
class Tally:
    """The room's answers to one question, as counts only."""

    seats: int  # followers asked (seated), answered or not
    answered: int  # readable answers
    right: int
    by_slip: tuple[tuple[str, int], ...]  # wrong answers a known slip produces: (slip, count), most first
    other_wrong: int  # wrong, and no known slip gives them
    unreadable: int  # typed, but not an answer of this kind ("12 parsecs", an empty vector)

    @property
    def wrong(self) -> int:
        return sum(n for _, n in self.by_slip) + self.other_wrong

    @property
    def no_answer(self) -> int:
        return self.seats - self.answered - self.unreadable

    def lines(self) -> list[str]:
        """The presenter's summary, one line each: "12 used the 32 query heads instead of …"."""
        out = [f"{self.answered + self.unreadable} of {self.seats} answered; {self.right} right."]
        out += [f"{n} {slip}." for slip, n in self.by_slip]
        if self.other_wrong:
            out.append(f"{self.other_wrong} wrong in a way no known slip explains.")
        if self.unreadable:
            out.append(f"{self.unreadable} could not be read as an answer.")
        return out


def tally(
    question: Question,
    answers: Mapping[str, str | None],
    seats: Iterable[str] = (),
    judged: MutableMapping[str, Verdict] | None = None,
) -> Tally:
    """Count ``answers`` (seat id → typed text, None or "" for no answer) to ``question``. ``seats``
    are the room's seated followers (those who have not answered count as no answer); a seat
    that answered is counted even if it is no longer seated. At most `MAX_SEATS` answers.
    ``judged``: verdicts by answer text, kept by a caller that counts the same question again
    (a presenter's screen, every second), so each distinct answer is judged once."""
    everyone = set(seats) | set(answers)
    if len(everyone) > MAX_SEATS:
        raise ValueError(f"{len(everyone)} seats; a question is tallied for at most {MAX_SEATS}")
    right = other = unreadable = answered = 0
    slips: Counter[str] = Counter()
    for text in answers.values():
        if text is None or not str(text).strip():
            continue
        if len(text) > MAX_ANSWER_CHARS:
            unreadable += 1
            continue
        verdict = None if judged is None else judged.get(text)
        if verdict is None:
            verdict = question.judge(text)
            if judged is not None:
                judged[text] = verdict
        if verdict.got is None:
            unreadable += 1
            continue
        answered += 1
        if verdict.correct:
            right += 1
        elif verdict.slip is not None:
            slips[verdict.slip] += 1
        else:
            other += 1
    order = sorted(slips.items(), key=lambda item: (-item[1], list(question.slips).index(item[0])))
    return Tally(len(everyone), answered, right, tuple(order), other, unreadable)
