"""attn_core.practice.cards_masks: the masking drills (cards 6, 7).

Oracles: the allowed (query, key) pairs counted one by one; for equivariance, attention run here
with torch's scaled_dot_product_attention on the permuted and the original tokens (a non-identity
permutation of generic tokens moves the outputs with them exactly when there is neither a mask
nor an added position)."""

from __future__ import annotations

import pytest
import torch

from attn_core.practice import cards_masks
from attn_core.practice.drills import draw
from attn_core.practice.question import Difficulty

SEEDS = range(10)


def test_the_causal_pair_count_is_counted_pair_by_pair():
    for q in [draw("6", s, d) for d in Difficulty for s in SEEDS]:
        T = q.inputs["T"]
        allowed = sum(1 for i in range(T) for j in range(T) if j <= i)
        assert q.answer == allowed
        assert q.judge(str(allowed)).correct and not q.judge(str(allowed + 1)).correct
        assert q.judge(str(sum(1 for i in range(T) for j in range(T) if j < i))).slip is not None
    assert cards_masks._causal_question(5).answer == 15  # the card's own T = 5


def sdpa_equivariant(T: int, perm: tuple[int, ...], causal: bool, positions: bool) -> bool:
    g = torch.Generator().manual_seed(7)
    X = torch.randn(T, 8, generator=g, dtype=torch.float64)
    pos = (
        torch.randn(T, 8, generator=g, dtype=torch.float64)
        if positions
        else torch.zeros(T, 8, dtype=torch.float64)
    )

    def attend(tokens):
        h = (tokens + pos)[None]
        return torch.nn.functional.scaled_dot_product_attention(h, h, h, is_causal=causal)[0]

    p = torch.tensor(perm)
    return torch.allclose(attend(X[p]), attend(X)[p], atol=1e-10)


def test_equivariance_answers_match_attention_run_here():
    qs = [draw("7", s, d) for d in Difficulty for s in SEEDS]
    assert {(q.inputs["causal"], q.inputs["positions"]) for q in qs} == {
        (False, False),
        (False, True),
        (True, False),
        (True, True),
    }
    for q in qs:
        i = q.inputs
        moved = sdpa_equivariant(i["T"], i["perm"], i["causal"], i["positions"])
        assert (q.answer == cards_masks.MOVED) is moved, i
        assert q.judge(cards_masks.SAME).slip is not None  # invariance mistaken for equivariance


@pytest.mark.parametrize("text", ["", "moved", "the old outputs"])
def test_a_choice_not_offered_is_a_message(text):
    v = cards_masks._permutation_question(3, (2, 1, 0), False, False, 0).judge(text)
    assert not v.correct and v.got is None and "pick one of" in v.error
