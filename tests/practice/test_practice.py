"""Practice drills: every card's generator, its slips, the card's own numbers, and the answer parsers.

Oracles: the spec's check numbers (typed here from the cards), and closed forms written in this file
independently of attn_core (KV bytes 2·L·H_kv·d_h·b, T(T + 1)/2, the merge rescale, …)."""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attn_core.practice import drills
from attn_core.practice.answers import parse_matrix, parse_number, parse_vector
from attn_core.practice.progress import Attempt, from_csv, summarize, to_csv
from attn_core.practice.question import AnswerKind, Difficulty

CARDS = list(drills.DRILLS)
DRAWS = 200


def typed(answer) -> str:
    """How a learner would type the exact answer."""
    if isinstance(answer, str):
        return answer
    if isinstance(answer, tuple):
        return ", ".join(repr(float(x)) for x in answer)
    return repr(float(answer))


@pytest.mark.parametrize("card", CARDS)
def test_the_stated_answer_is_accepted_over_many_draws(card):
    levels = list(Difficulty)
    for seed in range(DRAWS):
        q = drills.draw(card, seed, levels[seed % 3])
        verdict = q.judge(typed(q.answer))
        assert verdict.correct, (card, seed, q.prompt, verdict)


@pytest.mark.parametrize("card", CARDS)
def test_recognised_slips_are_rejected_and_named(card):
    named = 0
    for seed in range(40):
        q = drills.draw(card, seed, Difficulty.MEDIUM)
        for value in q.slips.values():
            if q.close(value, q.answer):
                continue  # this draw cannot tell the slip apart (e.g. h = H_kv): nothing to name
            verdict = q.judge(typed(value))
            assert not verdict.correct
            assert verdict.slip is not None  # named (possibly by an equal-valued sibling slip)
            assert q.close(q.slips[verdict.slip], value)
            named += 1
    assert named > 0


# The card's own example, as one specific draw, against the numbers printed in the spec.
SPEC_NUMBERS = {
    "1": (1, 32, 4096, 128),  # card 1: a (B, h, T, d_k) = (1, 32, 4096, 128) Llama 2 7B layer
    "2": 0.576,  # card 2: softmax((0, 2, 1)/√2) puts 0.576 on river
    "4": 0.393,  # card 4: bank's row has Jacobian eigenvalues 0.393, 0.175, 0
    "5": -0.244,  # card 5: river's ∂L/∂s = 0.576 × (−1 − (−0.576))
    "6": 15,  # card 6: 15 of 25 pairs at T = 5
    "7": "the old outputs, moved along with their tokens",  # card 7: reversing the toy sentence, unmasked
    "9": 67_108_864,  # card 9: Llama 2 7B attention weights per layer
    "11": 24_704,  # card 11: Llama 2 7B crossover
    "12": 32,  # card 12: 32 GiB per head at 128K in fp16
    "13": 512,  # card 13: 512 KiB per token for Llama 2 7B in fp16
    "14": 8,  # card 14: Llama 2 70B's 64 heads over 8 KV heads
    "15": 3.6881,  # card 15 / Drill 11: the merged output
    "3": 128,  # card 3: Var(q·k) = d_k at d_k = 128 (sd 11.3)
    "8": 3.36,  # card 8: plain 1/√d_k attention is a Gaussian smoother with λ = d_k^{1/4} (128 → 3.36)
    "10": 64,  # card 10: at T = 64, d_k = 8 the weight matrix has rank 64 (the scores 8)
    "16": 11.3,  # card 16: fully aligned, q·k/√d_k has mean √128 = 11.3
    "17": 2.44e-4,  # card 17: a uniform head over 4,096 unit-variance values
    "18": 9.13,  # card 18: a sink needs advantage ln(9 × 1,023) = 9.13 for 90% at T = 1,024
}


@pytest.mark.parametrize("card", CARDS)
def test_the_cards_own_numbers_come_out_of_one_draw(card):
    q = drills.DRILLS[card].card_numbers()
    want = SPEC_NUMBERS[card]
    got = q.answer
    if isinstance(want, str):
        assert got == want
    elif isinstance(want, tuple):
        assert tuple(int(x) for x in got) == want
    else:
        # the spec prints 3–4 significant digits
        assert float(got) == pytest.approx(want, abs=5 * 10 ** (math.floor(math.log10(abs(want))) - 3))


def test_kv_cache_answer_matches_an_independent_formula():
    for seed in range(50):
        q = drills.draw("13", seed, Difficulty.HARD)
        i = q.inputs
        b = {"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1}[i["dtype"]]
        assert q.answer == 2 * i["layers"] * i["kv_heads"] * i["d_h"] * b / 1024


def test_causal_and_merge_answers_match_closed_forms():
    for seed in range(50):
        q = drills.draw("6", seed, Difficulty.HARD)
        assert q.answer == q.inputs["T"] * (q.inputs["T"] + 1) / 2
        q = drills.draw("15", seed, Difficulty.HARD)
        (ma, la, ua), (mb, lb, ub) = q.inputs["a"], q.inputs["b"]
        m = max(ma, mb)
        want = (math.exp(ma - m) * ua + math.exp(mb - m) * ub) / (
            math.exp(ma - m) * la + math.exp(mb - m) * lb
        )
        assert q.answer == pytest.approx(want, rel=1e-12)


def test_the_issue_example_and_its_slip():
    # 48 layers, 8 KV heads of width 128, fp16: 2·48·8·128·2 B = 192 KiB; with h = 32 it would be 768.
    from attn_core.practice.cards_cost import _kv_question

    q = _kv_question(48, 32, 8, 128, "fp16")
    assert q.judge("192 KiB").correct and q.judge("0.1875 MiB").correct and q.judge("196608 B").correct
    wrong = q.judge("768")
    assert not wrong.correct and wrong.slip.startswith("used the 32 query heads")


def test_same_seed_same_question_and_draws_differ():
    a, b = drills.draw("13", 3), drills.draw("13", 3)
    assert a.prompt == b.prompt
    assert len({drills.draw("2", s).prompt for s in range(20)}) > 10


# -- parsers ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "unit", "want"),
    [
        ("512", "KiB", 512),
        ("512 KiB", "KiB", 512),
        ("0.5 MiB", "KiB", 512),
        ("524288 B", "KiB", 512),
        ("524.288 KB", "KiB", 512),
        ("1 GiB", "MiB", 1024),
        ("24,704", "", 24704),
        ("67.1M", "", 67.1e6),
        ("−0.244", "", -0.244),
        ("  3.2e-4 ", "", 3.2e-4),
        ("7.3%", "%", 7.3),
        ("7.3", "%", 7.3),
    ],
)
def test_parse_number_units(text, unit, want):
    assert parse_number(text, unit) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    ("text", "unit", "message"),
    [
        ("", "", "empty"),
        ("abc", "", "not a number"),
        ("5 parsecs", "KiB", "not a unit of memory"),
        ("5 KiB", "%", "percentage"),
        ("5 KiB", "", "plain number"),
        ("1e999", "", "finite"),
        ("x" * 3000, "", "characters"),
    ],
)
def test_parse_number_rejects_with_a_message(text, unit, message):
    with pytest.raises(ValueError, match=message):
        parse_number(text, unit)


@given(st.text(max_size=60))
def test_parsers_only_ever_raise_value_error(text):
    for parse in (
        lambda t: parse_number(t, "KiB"),
        lambda t: parse_number(t, ""),
        parse_vector,
        parse_matrix,
    ):
        with contextlib.suppress(ValueError):
            parse(text)


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=8),
    st.sampled_from([", ", " ", "; "]),
)
def test_parse_vector_round_trips(values, sep):
    text = "(" + sep.join(repr(v) for v in values).replace("-", "−") + ")"
    assert parse_vector(text) == tuple(values)


def test_parse_matrix_rows_must_agree():
    assert parse_matrix("1, 2\n3, 4") == ((1.0, 2.0), (3.0, 4.0))
    assert parse_matrix("1 2 | 3 4") == ((1.0, 2.0), (3.0, 4.0))
    with pytest.raises(ValueError, match="row 2 has 1 entries"):
        parse_matrix("1, 2\n3")


def test_vector_answers_need_the_right_length():
    q = drills.draw("1", 0)
    verdict = q.judge("1, 2, 3")
    assert not verdict.correct and verdict.relative_error == math.inf
    assert q.answer_kind is AnswerKind.VECTOR


# -- progress -----------------------------------------------------------------------------------------
def test_progress_round_trips_through_csv_and_summarises():
    log = [
        Attempt("13", 1, "easy", True, 12.5, "", "512"),
        Attempt("13", 2, "easy", False, 30.0, "used the 32 query heads instead of the 8 KV heads", "768"),
        Attempt("2", 3, "hard", True, 5.0, "", "0.576"),
    ]
    assert from_csv(to_csv(log)) == log
    rows = {r.card: r for r in summarize(log)}
    assert (rows["13"].tried, rows["13"].right, rows["13"].mean_seconds) == (2, 1, 21.25)
    assert "query heads" in rows["13"].slips
    with pytest.raises(ValueError, match="not a practice log"):
        from_csv("a,b\n1,2\n")
    with pytest.raises(ValueError, match="line 2"):
        from_csv(to_csv(log).replace("12.5", "soon", 1))


def test_question_rng_is_numpy_seeded():
    assert isinstance(np.random.default_rng([1, 13]).integers(5), np.integer)


def test_one_kv_head_is_named_in_the_singular():
    """Multi-query attention (one KV head) reads as English in the prompt and in the slip a room's
    answers are grouped by ("used the 8 query heads instead of the 1 KV head")."""
    from attn_core.practice.cards_cost import _kv_question

    mqa, gqa = _kv_question(2, 8, 1, 64, "fp16"), _kv_question(2, 8, 2, 64, "fp16")
    assert "8 query heads and 1 KV head of width 64" in mqa.prompt
    assert "used the 8 query heads instead of the 1 KV head" in mqa.slips
    assert "8 query heads and 2 KV heads of width 64" in gqa.prompt
    assert not [text for text in (mqa.prompt, *mqa.slips) if "1 KV heads" in text]
