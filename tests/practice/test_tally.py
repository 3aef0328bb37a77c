"""A room's answers to one drill, counted (attn_core.practice.tally): right, wrong grouped by the
slip that produces them, wrong with no known slip, unreadable, and no answer.

Oracle: card 13's KV cache per token computed here from the question's own drawn numbers,
2 · L · H_kv · d_h · b bytes, and the query-heads slip as the same product with H; the expected
counts are written down from the answers given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from attn_core.practice import drills
from attn_core.practice.tally import MAX_SEATS, tally

ROOT = Path(__file__).resolve().parents[2]
BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1, "fp8": 1}


def kv_question(seed: int = 11):
    q = drills.draw("13", seed)
    i = q.inputs
    b = BYTES[i["dtype"]]
    right_kib = 2 * i["layers"] * i["kv_heads"] * i["d_h"] * b / 1024
    query_heads_kib = 2 * i["layers"] * i["heads"] * i["d_h"] * b / 1024
    return q, right_kib, query_heads_kib


def test_a_room_of_answers_is_counted_by_verdict_and_slip():
    q, right, slip = kv_question()
    assert right != slip  # GQA: fewer KV heads than query heads
    answers = {
        "s1": f"{right:g}",
        "s2": f"{right / 1024:.10g} MiB",  # the same answer in another unit
        "s3": f"{right * 1024:,.0f} B",
        "s4": f"{slip:g}",
        "s5": f"{slip:g} KiB",
        "s6": f"{right / 2:g}",  # keys only: forgot the factor 2
        "s7": f"{right * 3 + 1:g}",  # wrong, no known slip
        "s8": "lots",  # not a number
        "s9": None,
        "s10": "  ",
    }
    t = tally(q, answers, seats=[*answers, "s11"])  # s11 is seated and typed nothing
    assert (t.seats, t.answered, t.right, t.wrong, t.other_wrong, t.unreadable, t.no_answer) == (
        11,
        7,
        3,
        4,
        1,
        1,
        3,
    )
    heads, kv = q.inputs["heads"], q.inputs["kv_heads"]
    assert t.by_slip == (
        (f"used the {heads} query heads instead of the {kv} KV heads", 2),
        ("stored keys only (forgot the factor 2)", 1),
    )
    assert t.lines()[:2] == [
        "8 of 11 answered; 3 right.",
        f"2 used the {heads} query heads instead of the {kv} KV heads.",
    ]


def test_nobody_answered_and_the_bounds():
    q, right, _ = kv_question(3)
    empty = tally(q, {}, seats=["a", "b"])
    assert (empty.seats, empty.answered, empty.right, empty.wrong, empty.no_answer) == (2, 0, 0, 0, 2)
    assert tally(q, {"a": "1" * 5000}).unreadable == 1  # over the answer box's limit: not judged
    with pytest.raises(ValueError, match="at most"):
        tally(q, {str(i): f"{right:g}" for i in range(MAX_SEATS + 1)})


def test_everyone_in_the_room_gets_the_same_question():
    """The room keeps (card, seed, difficulty); each follower draws again, maybe on another replica:
    another process with another hash seed draws the same question. Another seed, another one."""
    code = "from attn_core.practice import drills; print(repr(drills.draw('13', 42)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    drawn = [
        subprocess.run(
            [sys.executable, "-c", code],
            env={**env, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    ]
    assert drawn[0] == drawn[1] == repr(drills.draw("13", 42)) + "\n"
    assert drills.draw("13", 43) != drills.draw("13", 42)


def test_the_presenters_chart_shows_every_count():
    from lab_ui import question_tally

    q, right, slip = kv_question()
    t = tally(q, {"a": f"{right:g}", "b": f"{slip:g}", "c": f"{slip:g}", "d": "x"}, seats=["e"])
    bars = question_tally.figure(t).data[0]
    heads, kv = q.inputs["heads"], q.inputs["kv_heads"]
    assert list(bars.x) == [
        "right",
        f"used the {heads} query heads instead of the {kv} KV heads",
        "could not be read",
        "no answer",
    ]
    assert list(bars.y) == [1, 2, 1, 1]


def test_a_count_kept_between_calls_judges_each_distinct_answer_once(monkeypatch):
    """The presenter's screen counts every second: with ``judged`` kept, an answer text already
    judged is not judged again, and the counts are those of a fresh count."""
    from attn_core.practice.question import Question

    q, right, slip = kv_question()
    calls = []
    judge = Question.judge
    monkeypatch.setattr(Question, "judge", lambda self, text: calls.append(text) or judge(self, text))
    answers = {f"s{i}": f"{(right, slip)[i % 2]:g}" for i in range(40)}
    judged: dict = {}
    first = tally(q, answers, judged=judged)
    assert len(calls) == 2  # two distinct texts among 40 answers
    answers["s40"] = "lots"
    again = tally(q, answers, judged=judged)
    assert len(calls) == 3  # only the new text
    assert again == tally(q, answers) and (first.right, first.wrong) == (20, 20)
