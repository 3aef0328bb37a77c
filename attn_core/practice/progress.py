"""A learner's record: one row per answered question, kept for the session and as CSV."""

from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass

MAX_RECORDS = 5000  # a re-uploaded file larger than this is not a practice log
FIELDS = ("card", "seed", "difficulty", "correct", "seconds", "slip", "answer")
MAX_FIELD_CHARS = 200  # no field of a real record is longer (answers are cut to this on reading)
# A spreadsheet opening a CSV runs a cell that starts with one of these as a formula
# (OWASP "CSV injection"): =HYPERLINK(…) in an uploaded log must come back out as text.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise(text: str) -> str:
    """``text`` made inert for a spreadsheet: a leading formula character gets a ' in front
    (a plain number such as -0.5 stays as it is)."""
    if not text.startswith(FORMULA_PREFIXES):
        return text
    try:
        float(text)
    except ValueError:
        return "'" + text
    return text


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
        writer.writerow({k: neutralise(v) if isinstance(v, str) else v for k, v in asdict(a).items()})
    return out.getvalue()


def from_csv(text: str) -> list[Attempt]:
    """Parse a downloaded log back; ValueError naming the first bad row, or saying that the file
    is not a CSV log at all (a binary file, a field longer than any record has). Text fields
    come back neutralised against spreadsheet formulas."""
    try:
        return _read(text)
    except csv.Error as exc:  # a NUL byte, a field over the csv module's limit, a bad quote
        raise ValueError(f"not a practice log (CSV): {exc}") from None


def _read(text: str) -> list[Attempt]:
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None or set(FIELDS) - set(reader.fieldnames):
        raise ValueError(f"not a practice log: the header must name {', '.join(FIELDS)}")
    attempts = []
    for n, row in enumerate(reader, start=2):
        if n - 1 > MAX_RECORDS:
            raise ValueError(f"the log has more than {MAX_RECORDS:,} answers")
        try:
            text_of = {
                k: str(row[k] or "")[:MAX_FIELD_CHARS] for k in ("card", "difficulty", "slip", "answer")
            }
            attempts.append(
                Attempt(
                    card=neutralise(text_of["card"]),
                    seed=int(row["seed"]),
                    difficulty=neutralise(text_of["difficulty"]),
                    correct=row["correct"] in ("True", "true", "1"),
                    seconds=float(row["seconds"]),
                    slip=neutralise(text_of["slip"]),
                    answer=neutralise(text_of["answer"]),
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
