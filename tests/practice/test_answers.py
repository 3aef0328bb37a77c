"""Reading a typed answer (attn_core.practice.answers) costs time linear in its length, and an
answer is capped by its kind: a number is a few dozen characters, not 2,000.

Oracle for the cost: the time to read an answer ten times as long, against the same answer's
shorter self on the same machine in the same run. Reading in linear time makes the ratio about
10; a pattern that backtracks quadratically (digits that two quantifiers can share, then one
wrong character) makes it about 100. The bound, 30, sits between the two with room for a busy
machine (each time is the best of several runs, so a pause elsewhere does not count)."""

from __future__ import annotations

import contextlib
import time

import pytest

from attn_core.practice import answers
from attn_core.practice.answers import parse_matrix, parse_number, parse_vector


def _read(text: str) -> None:
    with contextlib.suppress(ValueError):
        parse_number(text, "KiB")


def _best_time(text: str, repeats: int = 5) -> float:
    """Seconds per reading of ``text``: the best of ``repeats`` runs of enough readings to last
    about 2 ms (so the clock's resolution does not count)."""
    start = time.perf_counter()
    _read(text)
    loops = max(1, int(2e-3 / max(time.perf_counter() - start, 1e-7)))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(loops):
            _read(text)
        best = min(best, (time.perf_counter() - start) / loops)
    return best


# Answers that are nearly numbers, then one character that is not: each makes a pattern with
# two quantifiers over the same characters try every split of the run before it gives up.
HOSTILE = {
    "digits": lambda n: "1" * n + "!",
    "digits then spaces": lambda n: "1" + " " * n + "!",
    "a long exponent": lambda n: "1e" + "1" * n + "!",
    "a long fraction": lambda n: "." + "1" * n + "!",
    "thousands groups": lambda n: "1" + ",111" * (n // 4) + "!",
}


@pytest.mark.parametrize("shape", list(HOSTILE))
def test_reading_a_number_takes_time_linear_in_its_length(monkeypatch, shape):
    monkeypatch.setattr(answers, "MAX_ANSWER_CHARS", 10**6)
    monkeypatch.setattr(answers, "MAX_NUMBER_CHARS", 10**6, raising=False)  # read past the caps
    make = HOSTILE[shape]
    short, long = _best_time(make(500)), _best_time(make(5_000))
    assert long < 30 * short, f"{shape}: {long:.4f} s for 5,000 characters, {short:.6f} s for 500"


def test_a_number_answer_is_capped_well_below_the_box():
    assert parse_number("-1,234,567,890.123456789 GiB", "GiB") == pytest.approx(-1234567890.123456789)
    assert parse_number(" -1.234567890123456789e-12 GiB ", "GiB") == pytest.approx(-1.234567890123456789e-12)
    with pytest.raises(ValueError, match=f"a number is at most {answers.MAX_NUMBER_CHARS} characters"):
        parse_number("1" * 1999 + "!", "")
    with pytest.raises(ValueError, match="a number is at most"):
        parse_number("7" * (answers.MAX_NUMBER_CHARS + 1), "")
    assert answers.MAX_NUMBER_CHARS < answers.MAX_ANSWER_CHARS


def test_a_vector_or_matrix_keeps_the_longer_cap():
    entries = ", ".join(["0.123456"] * 200)  # 1,998 characters, 200 entries: still an answer
    assert len(entries) < answers.MAX_ANSWER_CHARS
    assert parse_vector(entries) == (0.123456,) * 200
    row = ", ".join(["0.123456"] * 100)
    assert parse_matrix(row + "\n" + row) == ((0.123456,) * 100,) * 2


def test_a_whole_answer_of_digits_and_a_wrong_character_is_refused_with_a_message():
    for text in ("1" * 1999 + "!", "1" * 60 + "x"):
        with pytest.raises(ValueError):
            parse_number(text, "")
