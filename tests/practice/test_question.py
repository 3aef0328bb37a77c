"""The drill skeleton every card fills in (attn_core.practice.question: `asks`, `Worked`,
`variant_drill`): what the decorator declares once reaches every question, the drawn numbers are
the maker's own arguments, and a drill of variants draws each kind and the card's own example.

Oracle: a toy card written here (the area of a rectangle, worked out by hand), and the counts of
a seeded draw."""

from __future__ import annotations

import numpy as np

from attn_core.practice.question import AnswerKind, Difficulty, Worked, asks, variant_drill


@asks("99", "Area of a rectangle", unit="m²", abs_tol=0.5, hint="a number of m²")
def area(width: float, height: float = 2.0) -> Worked:
    return Worked(
        prompt=f"A {width} m × {height} m rectangle: its area?",
        answer=width * height,
        steps=("width × height",),
        slips={"added the sides": width + height},
    )


@asks("99", "Which is larger", kind=AnswerKind.CHOICE, choices=("a", "b"))
def larger(a: float, b: float, seed: int) -> Worked:
    return Worked(prompt="?", answer="a" if a > b else "b", steps=(), slips={}, inputs={"a": a, "b": b})


def test_what_asks_declares_reaches_the_question_and_the_inputs_are_the_arguments():
    q = area(3.0)
    assert (q.card, q.title, q.unit, q.abs_tol, q.hint) == (
        "99",
        "Area of a rectangle",
        "m²",
        0.5,
        "a number of m²",
    )
    assert q.answer_kind is AnswerKind.NUMBER and q.answer == 6.0
    assert q.inputs == {"width": 3.0, "height": 2.0}  # the default filled in
    assert area(width=1.5, height=4).inputs == {"width": 1.5, "height": 4}
    assert q.judge("6.4").correct and not q.judge("6.6").correct  # within 0.5 absolute
    assert q.judge("5").slip == "added the sides"
    assert area.__name__ == "area"  # still named as written


def test_a_worked_example_may_name_its_own_inputs():
    q = larger(1.0, 2.0, seed=7)
    assert q.inputs == {"a": 1.0, "b": 2.0}  # the seed is how it was drawn, not what is asked
    assert q.choices == ("a", "b") and q.judge("b").correct and not q.judge("c").correct


def test_a_drill_of_variants_draws_every_kind_and_the_cards_own_example_when_easy():
    def wide(rng, difficulty):
        return area(float(rng.integers(10, 20)))

    def narrow(rng, difficulty):
        return area(float(rng.integers(1, 3)))

    def own():
        return area(5.0, 5.0)

    drill = variant_drill("99", "Rectangles", (wide, narrow), (own,))
    assert drill.card_numbers().answer == 25.0
    easy = [drill.generate(np.random.default_rng(s), Difficulty.EASY).answer for s in range(400)]
    hard = [drill.generate(np.random.default_rng(s), Difficulty.HARD).answer for s in range(400)]
    assert 60 < easy.count(25.0) < 140  # one draw in four at EASY
    assert 25.0 not in hard and min(hard) < 10 and max(hard) > 20  # both kinds, never the example
