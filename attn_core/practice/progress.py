"""A learner's record: one row per answered question, kept for the session and as CSV."""

from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass, fields

MAX_RECORDS = 5000  # a re-uploaded file larger than this is not a practice log
FIELDS = ("card", "seed", "difficulty", "correct", "seconds", "slip", "answer")


@dataclass(frozen=True)
class Attempt:
    card: str
    seed: int
    difficulty: str
    correct: bool
    seconds: float  # time from the question being shown to the answer
    slip: str  # the recognised slip, or ""
    answer: str  # what was typed


@dataclass(frozen=True)
class CardProgress:
    card: str
    tried: int
    right: int
    mean_seconds: float
    slips: str  # the recognised slips, most frequent first


def to_csv(attempts: list[Attempt]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=FIELDS)
    writer.writeheader()
    for a in attempts:
        writer.writerow(asdict(a))
    return out.getvalue()


def from_csv(text: str) -> list[Attempt]:
    """Parse a downloaded log back; ValueError naming the first bad row."""
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None or set(FIELDS) - set(reader.fieldnames):
        raise ValueError(f"not a practice log: the header must name {', '.join(FIELDS)}")
    attempts = []
    for n, row in enumerate(reader, start=2):
        if n - 1 > MAX_RECORDS:
            raise ValueError(f"the log has more than {MAX_RECORDS:,} answers")
        try:
            attempts.append(
                Attempt(
                    card=str(row["card"]),
                    seed=int(row["seed"]),
                    difficulty=str(row["difficulty"]),
                    correct=row["correct"] in ("True", "true", "1"),
                    seconds=float(row["seconds"]),
                    slip=str(row["slip"] or ""),
                    answer=str(row["answer"] or "")[:200],
                )
            )
        except (TypeError, ValueError):
            raise ValueError(f"line {n} of the log is not a practice record") from None
    return attempts


def summarize(attempts: list[Attempt]) -> list[CardProgress]:
    """Per card: tried, right, mean time and the slips made, in card order."""
    by_card: dict[str, list[Attempt]] = {}
    for a in attempts:
        by_card.setdefault(a.card, []).append(a)
    rows = []
    for card in sorted(by_card, key=lambda c: (len(c), c)):
        tries = by_card[card]
        slips: dict[str, int] = {}
        for a in tries:
            if a.slip:
                slips[a.slip] = slips.get(a.slip, 0) + 1
        rows.append(
            CardProgress(
                card=card,
                tried=len(tries),
                right=sum(a.correct for a in tries),
                mean_seconds=sum(a.seconds for a in tries) / len(tries),
                slips="; ".join(f"{s} ×{n}" for s, n in sorted(slips.items(), key=lambda kv: -kv[1])),
            )
        )
    return rows


def attempt_fields() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Attempt))
