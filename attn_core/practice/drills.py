"""The registry of drills, one per card, in the spec's order."""

from __future__ import annotations

import numpy as np

from attn_core.practice import (
    cards_alignment_sinks,
    cards_collapse,
    cards_cost,
    cards_masks,
    cards_math,
    cards_one_head,
    cards_variance,
)
from attn_core.practice.question import CardDrill, Difficulty, Question

DRILLS: dict[str, CardDrill] = {
    d.card: d
    for d in sorted(
        (
            *cards_math.DRILLS,
            *cards_masks.DRILLS,
            *cards_cost.DRILLS,
            *cards_variance.DRILLS,
            *cards_alignment_sinks.DRILLS,
            *cards_one_head.DRILLS,
            *cards_collapse.DRILLS,
        ),
        key=lambda d: int(d.card),
    )
}


def draw(card: str, seed: int, difficulty: Difficulty | str = Difficulty.MEDIUM) -> Question:
    """A fresh question for ``card``: the same (card, seed, difficulty) always gives the same one."""
    if card not in DRILLS:
        raise ValueError(f"no drill for card {card!r}; choose one of {', '.join(DRILLS)}")
    rng = np.random.default_rng([int(seed), int(card)])
    return DRILLS[card].generate(rng, Difficulty(difficulty))


def pick_card(cards: list[str], seed: int) -> str:
    """Which of the chosen cards the question number ``seed`` asks about (seeded, so reproducible)."""
    if not cards:
        raise ValueError("pick at least one card to practise")
    return cards[int(np.random.default_rng(int(seed)).integers(len(cards)))]
