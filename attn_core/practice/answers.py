"""Reading a learner's typed answer: a number with a unit, a vector, or a matrix.

Every parser raises ValueError with a message fit to show under the answer box, and never
anything else: junk, empty boxes, unknown units, ragged rows and non-finite numbers all land
there. A unicode minus (−), thousands separators and surrounding whitespace are accepted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

MAX_ANSWER_CHARS = 2000  # a typed answer, not a file
MAX_ENTRIES = 256  # entries of a typed vector or matrix
MAX_NUMBER_CHARS = 64  # a typed number with its unit: "-1,234,567,890.123456789e-12 GiB" is 32

# Units a learner may type after a number, and what one of them is in the question's base unit.
# Bytes: binary prefixes (KiB = 2^10) and decimal ones (KB = 10^3) are different numbers.
BYTE_UNITS: dict[str, float] = {
    "b": 1,
    "byte": 1,
    "bytes": 1,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "tb": 1e12,
}
COUNT_UNITS: dict[str, float] = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
FLOP_UNITS: dict[str, float] = {
    "flop": 1,
    "flops": 1,
    "kflop": 1e3,
    "mflop": 1e6,
    "gflop": 1e9,
    "tflop": 1e12,
}

# A number, read from the start of the text. Every quantifier here has one way to match: the
# integer digits, then an optional "." with its own digits, then an optional exponent. (Writing
# the integer part as `\d+\.?\d*` lets two quantifiers share a run of digits: a long run and one
# wrong character after it then cost time quadratic in the run.) The unit after it is read apart.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_UNIT = re.compile(r"[A-Za-z%]*")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?(?:\s*[A-Za-z%]*)")
_SEPARATORS = re.compile(r"[,;\s]+")


def max_chars(kind: str) -> int:
    """The most characters an answer of this kind (an `AnswerKind` value: "number", "vector",
    "matrix", "choice") may have: what an answer box takes, and what the parsers read."""
    return MAX_NUMBER_CHARS if kind == "number" else MAX_ANSWER_CHARS


def _clean(text: str, cap: int | None = None, kind: str = "an answer") -> str:
    """The text with unicode minus signs made ASCII and outer whitespace gone; ValueError when it
    is longer than ``cap`` characters (`MAX_ANSWER_CHARS` when None) or empty."""
    if not isinstance(text, str):
        raise ValueError("type your answer as text")
    cap = MAX_ANSWER_CHARS if cap is None else min(cap, MAX_ANSWER_CHARS)
    if len(text.strip()) > cap:
        raise ValueError(f"{kind} is at most {cap:,} characters; this answer is {len(text.strip()):,}")
    text = text.replace("−", "-").replace("–", "-").replace("×", "x").strip()  # unicode minus and dashes
    if not text:
        raise ValueError("the answer box is empty")
    return text


def parse_number(text: str, unit: str = "") -> float:
    """A number, optionally followed by a unit, in the question's ``unit``.

    ``unit`` is the unit the question asks in: "" (a plain count, where k/M/B suffixes are
    allowed), "%" (``7.3`` and ``7.3%`` both mean 7.3 percent), a byte unit ("KiB", "GiB", …:
    the learner may answer in any byte unit, the value is converted) or "FLOPs". Thousands
    separators (``24,704``) are allowed in numbers without a decimal comma."""
    text = _clean(text, MAX_NUMBER_CHARS, "a number")
    if _THOUSANDS.fullmatch(text):
        text = text.replace(",", "")
    match = _NUMBER.match(text)
    typed = None if match is None else text[match.end() :].strip()
    if typed is None or not _UNIT.fullmatch(typed):
        raise ValueError(f"{text[:40]!r} is not a number (write e.g. 512, 0.576, 3.2e-4 or 512 KiB)")
    value = float(match.group())
    if not math.isfinite(value):
        raise ValueError("the answer must be a finite number")
    return value * _unit_factor(typed.lower(), unit)


# Families of units a typed answer may switch between, with the hint shown when it strays.
_FAMILIES = (
    (BYTE_UNITS, "a unit of memory (use B, KiB, MiB, GiB, KB, MB or GB)"),
    (FLOP_UNITS, "a unit of work (use FLOPs, GFLOP or TFLOP)"),
)


def _unit_factor(typed: str, unit: str) -> float:
    """Factor that turns a number in the ``typed`` unit into the question's ``unit``."""
    asked = unit.lower()
    if asked == "%":
        if typed not in ("", "%"):
            raise ValueError(f"the answer is a percentage; {typed!r} is not a unit for it")
        return 1.0
    for family, hint in _FAMILIES:
        if asked in family:
            if typed == "":
                return 1.0
            if typed not in family:
                raise ValueError(f"{typed!r} is not {hint}")
            return family[typed] / family[asked]
    if typed not in COUNT_UNITS:
        raise ValueError(f"{typed!r} is not a unit this answer takes: type a plain number")
    return COUNT_UNITS[typed]


def parse_floats(cells: list[str], where: Callable[[int], str]) -> list[float]:
    """Each cell as a finite float; an error names the cell by ``where(n)`` (n from 1)."""
    values = []
    for n, cell in enumerate(cells, start=1):
        try:
            x = float(cell.replace("−", "-"))
        except ValueError:
            raise ValueError(f"{where(n)}: {cell[:20]!r} is not a number") from None
        if not math.isfinite(x):
            raise ValueError(f"{where(n)}: {cell[:20]} is not finite")
        values.append(x)
    return values


def parse_vector(text: str) -> tuple[float, ...]:
    """Numbers separated by commas, semicolons or spaces, optionally in brackets: (0.14, 0.58)."""
    text = _clean(text).strip("()[]{} ")
    cells = [c for c in _SEPARATORS.split(text) if c]
    if not cells:
        raise ValueError("type the numbers separated by commas, e.g. 0.14, 0.58, 0.28")
    if len(cells) > MAX_ENTRIES:
        raise ValueError(f"{len(cells)} numbers is more than this answer takes ({MAX_ENTRIES} at most)")
    return tuple(parse_floats(cells, lambda n: f"entry {n}"))


def parse_matrix(text: str) -> tuple[tuple[float, ...], ...]:
    """One row per line (or rows separated by '|'), entries as in `parse_vector`; rows must agree."""
    text = _clean(text)
    lines = [line for line in re.split(r"[\n|]", text) if line.strip()]
    rows = []
    for r, line in enumerate(lines, start=1):
        try:
            rows.append(parse_vector(line))
        except ValueError as exc:
            raise ValueError(f"row {r}: {exc}") from None
        if len(rows[-1]) != len(rows[0]):
            raise ValueError(f"row {r} has {len(rows[-1])} entries but row 1 has {len(rows[0])}")
    if sum(len(r) for r in rows) > MAX_ENTRIES:
        raise ValueError(f"the matrix has more than {MAX_ENTRIES} entries")
    return tuple(rows)
