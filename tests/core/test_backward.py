"""The five matrix lines of card 5 against torch autograd (through torch's own SDPA), the toy's
numbers, the projection paths, and every slip failing its check.

Tolerance for manual vs autograd, 1e-12: both sides are float64 sums of at most ~40 products of
O(1) numbers in different orders; each sum carries ≤ 40 · 2⁻⁵³ · Σ|terms| ≈ 1e-14 of rounding, so
1e-12 leaves a factor 100 of room while any real mistake (a missing term, a transpose, a scale)
changes entries by ≥ 1e-3.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attn_core import toy
from attn_core.backward import attention_backward, cross_attention_gradients, self_attention_gradients
from attn_core.masks import causal_mask, padding_mask, sliding_window_mask
from attn_core.oracle import sdpa_autograd, sdpa_reference
from attn_core.slips.backward import (
    SLIPS,
    slip_diagonal_jacobian,
    slip_drop_rowsum,
    slip_forget_scale,
    slip_transpose_dv,
)
from attn_core.views.gradient_slips import gradient_slip_outcome
from attn_core.views.gradients import UPSTREAM_KINDS, build_upstream, gradients_view
from attn_core.views.inputs import random_qkv, toy_bank

F64 = torch.float64
TOL = 1e-12  # argued in the module docstring
WRONG = 1e-3  # a slip must miss the oracle by at least this much (real slips miss by O(0.1))


def draw(shape_q, shape_k, shape_v, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*s, generator=g, dtype=F64) for s in (shape_q, shape_k, shape_v))


CASES = {
    # name: (q shape, k shape, v shape, mask, scale)
    "L<S unmasked": ((1, 1, 3, 4), (1, 1, 5, 4), (1, 1, 5, 2), None, None),
    "L>S unmasked": ((2, 1, 6, 3), (2, 1, 4, 3), (2, 1, 4, 5), None, None),
    "causal square": ((1, 2, 4, 3), (1, 2, 4, 3), (1, 2, 4, 3), causal_mask(4, 4), None),
    "cached prefix": ((1, 1, 2, 3), (1, 1, 5, 3), (1, 1, 5, 2), causal_mask(2, 5), None),
    "sliding window": ((1, 1, 6, 2), (1, 1, 6, 2), (1, 1, 6, 2), sliding_window_mask(6, 6, 3), None),
    "GQA 4 heads on 2": ((1, 4, 3, 4), (1, 2, 5, 4), (1, 2, 5, 3), causal_mask(3, 5), None),
    "MQA 3 heads on 1": ((2, 3, 4, 2), (2, 1, 4, 2), (2, 1, 4, 2), None, None),
    "custom scale 0.9": ((1, 1, 4, 3), (1, 1, 4, 3), (1, 1, 4, 3), None, 0.9),
    "padding, batch 2": ((2, 1, 3, 2), (2, 1, 4, 2), (2, 1, 4, 2), padding_mask([2, 4], 4), None),
    "no head axis": ((3, 2), (5, 2), (5, 3), None, None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_manual_backward_matches_sdpa_autograd(name):
    sq, sk, sv, allowed, scale = CASES[name]
    q, k, v = draw(sq, sk, sv, seed=len(name))
    G = torch.randn(*sq[:-1], sv[-1], generator=torch.Generator().manual_seed(7), dtype=F64)  # dO: O's shape
    back = attention_backward(q, k, v, G, allowed, scale=scale)
    dq, dk, dv = sdpa_autograd(q, k, v, G, allowed, scale=scale)
    assert back.dq.shape == q.shape and back.dk.shape == k.shape and back.dv.shape == v.shape
    for mine, oracle in ((back.dq, dq), (back.dk, dk), (back.dv, dv)):
        assert (mine - oracle).abs().max() <= TOL
    # The two forms of D_i = rowsum(P ⊙ dP) = rowsum(dO ⊙ O) agree (same rounding argument).
    assert back.rowsum_gap <= TOL
    # dS rows sum to 0 (J·1 = 0) and nothing flows through blocked pairs.
    assert back.dscores.sum(-1).abs().max() <= TOL
    if allowed is not None:
        blocked = ~torch.broadcast_to(allowed, back.dscores.shape)
        assert (back.dscores[blocked] == 0).all()


def test_toy_score_and_query_gradients():
    """Card 5 step 7–8: g = (−1, 0) at bank's output."""
    t = toy.bank_row()
    g = torch.tensor([[-1.0, 0.0]], dtype=F64)
    back = attention_backward(t.q, t.k, t.v, g)
    # The card prints three decimals; half a unit in the last place is 5e-4.
    assert torch.allclose(back.dscores[0], torch.tensor([0.081, -0.244, 0.164], dtype=F64), atol=5e-4)
    assert torch.allclose(back.dq[0], torch.tensor([-0.057, 0.116], dtype=F64), atol=5e-4)
    p = torch.tensor([0.140, 0.576, 0.284], dtype=F64)
    # ∂L/∂v_j = p_j g, with p printed to three decimals.
    assert torch.allclose(back.dv, p.unsqueeze(-1) * g, atol=5e-4)
    dq, dk, dv = sdpa_autograd(t.q, t.k, t.v, g)
    for mine, oracle in ((back.dq, dq), (back.dk, dk), (back.dv, dv)):
        assert (mine - oracle).abs().max() <= TOL


def test_rowsum_forms_agree_on_a_large_random_case():
    q, k, v = draw((2, 3, 17, 8), (2, 3, 23, 8), (2, 3, 23, 5), seed=3)
    G = torch.randn(2, 3, 17, 5, dtype=F64)
    back = attention_backward(q, k, v, G, causal_mask(17, 23))
    P, dP, O = back.forward.weights, back.dweights, back.forward.output
    assert torch.allclose((P * dP).sum(-1), (G * O).sum(-1), rtol=0, atol=TOL)
    # D = rowsum(dO ⊙ O) with O from torch's SDPA, not from our forward: the kept number is right.
    reference_O = sdpa_reference(q, k, v, causal_mask(17, 23))
    torch.testing.assert_close(back.D, (G * reference_O).sum(-1), rtol=0, atol=TOL)


def test_bad_inputs_raise_clear_errors():
    t = toy.bank_row()
    with pytest.raises(ValueError, match="dO"):
        attention_backward(t.q, t.k, t.v, torch.zeros(1, 3, dtype=F64))
    with pytest.raises(ValueError, match="no key"):
        attention_backward(t.q, t.k, t.v, torch.zeros(1, 2, dtype=F64), torch.zeros(1, 3, dtype=torch.bool))


# --- projections --------------------------------------------------------------------------------


def test_self_attention_dx_needs_all_three_paths():
    g = torch.Generator().manual_seed(11)
    x = torch.randn(2, 5, 4, generator=g, dtype=F64, requires_grad=True)
    w = [torch.randn(4, d, generator=g, dtype=F64, requires_grad=True) for d in (3, 3, 2)]
    G = torch.randn(2, 5, 2, generator=g, dtype=F64)
    mask = causal_mask(5, 5)
    O = F.scaled_dot_product_attention(x @ w[0], x @ w[1], x @ w[2], attn_mask=mask, dropout_p=0.0)
    auto = torch.autograd.grad((O * G).sum(), [x, *w])
    mine = self_attention_gradients(x.detach(), *(t.detach() for t in w), G, mask)
    for got, want in zip((mine.dx, mine.dw_q, mine.dw_k, mine.dw_v), auto, strict=True):
        assert (got - want).abs().max() <= TOL
    # Any single path, or two of three, misses the real dX.
    paths = (mine.dx_via_q, mine.dx_via_k, mine.dx_via_v)
    for i, path in enumerate(paths):
        assert (path - auto[0]).abs().max() > WRONG
        partial = sum(p for j, p in enumerate(paths) if j != i)
        assert (partial - auto[0]).abs().max() > WRONG


def test_cross_attention_source_gets_key_and_value_paths():
    g = torch.Generator().manual_seed(12)
    x = torch.randn(3, 4, generator=g, dtype=F64, requires_grad=True)  # 3 queries, d_model 4
    y = torch.randn(6, 5, generator=g, dtype=F64, requires_grad=True)  # 6 source tokens, d_src 5
    w_q = torch.randn(4, 2, generator=g, dtype=F64, requires_grad=True)
    w_k = torch.randn(5, 2, generator=g, dtype=F64, requires_grad=True)
    w_v = torch.randn(5, 3, generator=g, dtype=F64, requires_grad=True)
    G = torch.randn(3, 3, generator=g, dtype=F64)
    O = F.scaled_dot_product_attention(x @ w_q, y @ w_k, y @ w_v, dropout_p=0.0)
    auto = torch.autograd.grad((O * G).sum(), [x, y, w_q, w_k, w_v])
    mine = cross_attention_gradients(*(t.detach() for t in (x, y, w_q, w_k, w_v)), G)
    for got, want in zip((mine.dx, mine.dsource, mine.dw_q, mine.dw_k, mine.dw_v), auto, strict=True):
        assert (got - want).abs().max() <= TOL
    assert (mine.dsource_via_k - auto[1]).abs().max() > WRONG
    assert (mine.dsource_via_v - auto[1]).abs().max() > WRONG


# --- slips --------------------------------------------------------------------------------------


def _random_case(L=4, S=4, d_k=3, d_v=2, seed=5):
    q, k, v = draw((1, 1, L, d_k), (1, 1, S, d_k), (1, 1, S, d_v), seed=seed)
    G = torch.randn(1, 1, L, d_v, generator=torch.Generator().manual_seed(seed + 1), dtype=F64)
    return q, k, v, G


def test_slip_drop_rowsum_fails():
    q, k, v, G = _random_case()
    slip = slip_drop_rowsum(q, k, v, G)
    dq, dk, _ = sdpa_autograd(q, k, v, G)
    assert slip.dscores.sum(-1).abs().max() > WRONG  # rows of dS no longer sum to 0
    assert (slip.dq - dq).abs().max() > WRONG and (slip.dk - dk).abs().max() > WRONG


def test_slip_forget_scale_is_off_by_sqrt_dk():
    q, k, v, G = _random_case(d_k=4)
    slip = slip_forget_scale(q, k, v, G)
    dq, dk, _ = sdpa_autograd(q, k, v, G)
    assert (slip.dq - dq).abs().max() > WRONG
    assert torch.allclose(slip.dq, dq * math.sqrt(4), rtol=0, atol=TOL)  # exactly √d_k = 2 too big
    assert torch.allclose(slip.dk, dk * 2, rtol=0, atol=TOL)


def test_slip_transpose_dv_fails_by_shape_or_by_value():
    t = toy.bank_row()
    slip = slip_transpose_dv(t.q, t.k, t.v, torch.tensor([[-1.0, 0.0]], dtype=F64))
    assert slip.dv is None and "does not even run" in slip.error
    # L = S = d_v: the shapes line up, and only the values betray it.
    q, k, v, G = _random_case(L=3, S=3, d_k=2, d_v=3)
    slip = slip_transpose_dv(q, k, v, G)
    _, _, dv = sdpa_autograd(q, k, v, G)
    assert slip.error == "" and slip.dv.shape == dv.shape
    assert (slip.dv - dv).abs().max() > WRONG


def test_slip_diagonal_jacobian_fails():
    q, k, v, G = _random_case()
    slip = slip_diagonal_jacobian(q, k, v, G)
    dq, _, _ = sdpa_autograd(q, k, v, G)
    assert slip.dscores.sum(-1).abs().max() > WRONG
    assert (slip.dq - dq).abs().max() > WRONG


def test_every_registered_slip_is_caught_on_the_toy():
    """With the toy's g every slip misses the oracle somewhere (or does not run)."""
    t = toy.bank_row()
    g = torch.tensor([[-1.0, 0.0]], dtype=F64)
    dq, dk, dv = sdpa_autograd(t.q, t.k, t.v, g)
    for name, registered in SLIPS.items():
        slip = registered.fn(t.q, t.k, t.v, g)
        misses = [(slip.dq - dq).abs().max() > WRONG, (slip.dk - dk).abs().max() > WRONG]
        misses.append(slip.dv is None or slip.dv.shape != dv.shape or (slip.dv - dv).abs().max() > WRONG)
        assert any(misses), name


# --- the page's one call (attn_core.gradients) ----------------------------------------------------


def test_explore_toy_reading_and_descent_step():
    qkv = toy_bank()
    G = build_upstream(UPSTREAM_KINDS[0], (1, 1, 1, 2))
    assert torch.equal(G[0, 0, 0], torch.tensor([-1.0, 0.0], dtype=F64))  # the card's g
    ex = gradients_view(qkv, None, 1 / math.sqrt(2), G, lr=1.0)
    assert all(a.passed for a in ex.agreement) and len(ex.agreement) == 4  # autograd + three ε
    assert all(c.passed for c in ex.checks)
    r = ex.reading
    # Card 5 step 7: gᵀv = (0, −1, 0), gᵀo = −0.576, ∂L/∂s = (0.081, −0.244, 0.164).
    assert torch.equal(r.g_dot_v, torch.tensor([0.0, -1.0, 0.0], dtype=F64))
    assert abs(r.g_dot_o + 0.576) <= 5e-4
    assert torch.allclose(r.dscore, torch.tensor([0.081, -0.244, 0.164], dtype=F64), atol=5e-4)
    # Descent raises river's score, lowers the other two; bank reads more geography, the loss falls.
    s0, s1 = ex.step.scores_before, ex.step.scores_after
    assert s1[1] > s0[1] and s1[2] < s0[2] and s1[0] == s0[0] == 0  # the's key is 0: its score stays 0
    assert ex.step.loss_after < ex.step.loss_before
    # The chosen row's Jacobian is the card's J_bank at τ = 1.
    assert torch.allclose(ex.spectrum.eigenvalues, torch.tensor([0.393, 0.175, 0.0], dtype=F64), atol=5e-4)


def test_explore_every_slip_fails_a_check_and_the_caps_skip_finite_differences():
    qkv = random_qkv(5, 7, 3, 4, heads=4, kv_heads=2, seed=2)
    G = build_upstream(UPSTREAM_KINDS[1], (1, 4, 5, 4), seed=1)
    ex = gradients_view(qkv, causal_mask(5, 7), 1 / math.sqrt(3), G, head=3, row=0)
    assert all(a.passed for a in ex.agreement) and all(c.passed for c in ex.checks)
    assert ex.reading.keys == (0, 1, 2)  # bottom-right causal: query 0 sits at position 2
    assert ex.reading.dscore_gap <= TOL
    for name in SLIPS:
        outcome = gradient_slip_outcome(ex, name)
        assert not all(c.passed for c in outcome.checks), name
    big = random_qkv(64, 64, 8, 8, seed=0)  # 1,536 coordinates: above the finite-difference cap
    ex = gradients_view(big, None, 0.35, build_upstream(UPSTREAM_KINDS[0], (1, 1, 64, 8)))
    assert ex.finite is None and "cap" in ex.finite_note and len(ex.agreement) == 1


def test_typed_upstream_gradient_shape_errors():
    G = build_upstream(UPSTREAM_KINDS[2], (1, 2, 1, 2), text="-1, 0")
    assert G.shape == (1, 2, 1, 2) and float(G[0, 1, 0, 0]) == -1.0
    with pytest.raises(ValueError, match="L × d_v"):
        build_upstream(UPSTREAM_KINDS[2], (1, 1, 2, 2), text="1, 2, 3")
    with pytest.raises(ValueError, match="not a number"):
        build_upstream(UPSTREAM_KINDS[2], (1, 1, 1, 2), text="1, x")


def test_a_slip_the_input_cannot_expose_is_explained():
    """One key per row: p = 1, so the diagonal-only Jacobian is exact and every check passes."""
    qkv = random_qkv(1, 1, 2, 2, seed=4)
    ex = gradients_view(qkv, None, 0.7, build_upstream(UPSTREAM_KINDS[1], (1, 1, 1, 2)))
    outcome = gradient_slip_outcome(ex, "diagonal_jacobian")
    assert all(c.passed for c in outcome.checks) and "one-hot" in outcome.hidden
    assert gradient_slip_outcome(ex, "drop_rowsum").hidden == ""  # dS = dP ≠ 0 still fails
