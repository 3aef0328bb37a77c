"""attn_core.practice.cards_math: the derivation drills (cards 1, 2, 4, 5, 15), each answer and
slip against an oracle that does not share the drill's code.

Oracles: torch's own scaled_dot_product_attention (shapes), torch.softmax, torch autograd (the
Jacobian's eigenvalues, ∂L/∂s), the two partial states merged by the logsumexp written out here,
and the Playground's own input builder for the card-1 link."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attn_core.practice import cards_math
from attn_core.practice.drills import draw
from attn_core.practice.question import Difficulty
from attn_core.views.inputs import random_qkv

F64 = torch.float64
SEEDS = range(8)


def questions(card: str, kind: str):
    return [q for d in Difficulty for s in SEEDS if (q := draw(card, s, d)).title.startswith(kind)]


def test_the_output_shape_is_the_one_sdpa_returns():
    for q in questions("1", "Attention in matrix form"):
        i = q.inputs
        L, S = min(i["L"], 8), min(i["S"], 8)  # the shape rule does not depend on the lengths' size
        qs = torch.zeros(i["B"], i["h"], L, i["d_k"])
        out = torch.nn.functional.scaled_dot_product_attention(
            qs, torch.zeros(i["B"], i["h"], S, i["d_k"]), torch.zeros(i["B"], i["h"], S, i["d_v"])
        )
        assert q.answer == (i["B"], i["h"], i["L"], i["d_v"]) and out.shape[-1] == i["d_v"]
        assert out.shape[:2] == (i["B"], i["h"]) and out.shape[2] == L


def test_the_card_1_link_opens_within_the_playgrounds_caps():
    q = cards_math._shapes_question(1, 32, 4096, 4096, 128, 128)  # the card's own numbers
    p = q.link.inputs
    sizes = [int(p[k]) for k in ("L", "S", "dk", "dv", "H", "Hkv")]
    random_qkv(*sizes, seed=0)  # the Playground's builder takes them (raises over a cap)
    assert "cut" in q.link.section
    small = cards_math._shapes_question(2, 4, 5, 6, 7, 8)
    assert [int(small.link.inputs[k]) for k in ("L", "S", "dk", "dv", "H")] == [5, 6, 7, 8, 4]
    assert "cut" not in small.link.section


def test_softmax_answers_and_slips_are_torch_softmax():
    for q in questions("2", "Softmax"):
        s, tau = torch.tensor(q.inputs["scores"], dtype=F64), q.inputs["tau"]
        assert q.answer == pytest.approx(float(torch.softmax(s / tau, 0).max()), rel=1e-12)
        assert q.slips["multiplied by τ instead of dividing"] == pytest.approx(
            float(torch.softmax(s * tau, 0).max()), rel=1e-12
        )


def test_the_jacobian_eigenvalue_is_autograds():
    for q in questions("4", "The softmax Jacobian"):
        s = torch.tensor(q.inputs["scores"], dtype=F64) * q.inputs["scale"]
        J = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, 0), s)
        assert q.answer == pytest.approx(float(torch.linalg.eigvalsh(J).max()), abs=1e-12)


def test_the_score_gradient_is_autograds():
    for q in questions("5", "Backpropagation"):
        i = q.inputs
        s = torch.tensor(i["scores"], dtype=F64, requires_grad=True)
        o = torch.softmax(s, 0) @ torch.tensor(i["values"], dtype=F64)
        (o @ torch.tensor(i["g"], dtype=F64)).backward()
        assert q.answer == pytest.approx(float(s.grad[i["key"]]), abs=1e-12)


def test_the_merge_is_the_logsumexp_of_both_parts():
    for q in questions("15", "The online-softmax"):
        (ma, la, ua), (mb, lb, ub) = q.inputs["a"], q.inputs["b"]
        # each part: l = Σ e^{s − m}, u = Σ e^{s − m} v over its keys; the whole: u_all / l_all
        o = (ua * math.exp(ma) + ub * math.exp(mb)) / (la * math.exp(ma) + lb * math.exp(mb))
        assert q.answer == pytest.approx(o, rel=1e-9)
        assert q.judge(f"{o:.6f}").correct
        naive = (ua + ub) / (la + lb)
        assert q.slips["added without rescaling"] == pytest.approx(naive, rel=1e-12)


def test_each_kind_is_drawn():
    assert {len(questions(c, "")) for c in ("1", "2", "4", "5", "15")} == {len(Difficulty) * len(SEEDS)}
    assert np.isfinite([q.answer for q in questions("15", "")]).all()
