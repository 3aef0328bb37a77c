"""The spec's own check numbers (seed 000's script and cards 1, 2, 6 of seed 003), and the
negative controls: every slip must fail the check the right answer passes."""

import math

import pytest
import torch
import torch.nn.functional as F

from attn_core import attention, causal_mask, logsumexp, stable_softmax
from attn_core.slips import forward as slips
from attn_core.toy import bank_row, hand_trace

F64 = torch.float64


def test_hand_trace_row_zero():
    # Printed to 6 decimals in the lesson; rounding allows ±5e-7.
    x = hand_trace()
    w = attention(x, x, x).weights
    assert torch.allclose(w[0], torch.tensor([0.401112, 0.197776, 0.401112], dtype=F64), atol=5e-7)
    # A wrong row (0.39, 0.22, 0.39), each weight off by about 0.01, must not pass the same check.
    assert not torch.allclose(w[0], torch.tensor([0.39, 0.22, 0.39], dtype=F64), atol=5e-7)


def test_hand_trace_causal_rows():
    x = hand_trace()
    w = attention(x, x, x, causal_mask(3, 3)).weights
    assert torch.equal(w[0], torch.tensor([1.0, 0.0, 0.0], dtype=F64))
    assert w[1, 2] == 0 and w[1, :2].sum().item() == pytest.approx(1, abs=1e-15)


def test_bank_row_and_output():
    t = bank_row()
    res = attention(t.q, t.k, t.v)
    # The card prints 3 decimals: ±5e-4.
    assert torch.allclose(res.weights[0], torch.tensor([0.140, 0.576, 0.284], dtype=F64), atol=5e-4)
    assert torch.allclose(res.output[0], torch.tensor([0.576, 0.284], dtype=F64), atol=5e-4)
    # Raw scores 0, 2, 1 divided by sqrt 2.
    assert torch.allclose(res.scores[0], torch.tensor([0, 2, 1], dtype=F64) / math.sqrt(2), atol=1e-15)


def test_softmax_of_raw_toy_scores():
    p = stable_softmax(torch.tensor([0.0, 2.0, 1.0], dtype=F64))
    assert torch.allclose(p, torch.tensor([0.090, 0.665, 0.245], dtype=F64), atol=5e-4)


def test_logsumexp_1000_999():
    assert logsumexp(torch.tensor([1000.0, 999.0], dtype=F64)).item() == pytest.approx(1000.313, abs=5e-4)
    assert math.isfinite(logsumexp(torch.tensor([1000.0, 999.0], dtype=torch.float32)).item())


def test_shift_invariance_on_the_toy():
    t = bank_row()
    s = attention(t.q, t.k, t.v).scores
    # Adding 10 moves each exponent by the same e^10; the shifted max cancels it up to 1 ulp.
    assert torch.allclose(stable_softmax(s + 10), stable_softmax(s), atol=1e-15)


def test_outputs_inside_the_values_range():
    t = bank_row()
    o = attention(t.q, t.k, t.v).output
    assert ((o >= t.v.amin(0)) & (o <= t.v.amax(0))).all()


def test_cyclic_shift_oracle():
    # K_j = X_{j-1} with an orthogonal X: query i matches key i + 1 (the super-diagonal), not i - 1.
    x = 4 * torch.eye(6, dtype=F64)
    w = attention(x, torch.roll(x, 1, 0), x).weights
    assert torch.equal(w.argmax(-1), (torch.arange(6) + 1) % 6)


def test_wrong_axis_is_caught_by_row_sums():
    x = hand_trace()
    q, k = x[:2], x  # rectangular: 2 queries, 3 keys
    wrong = slips.softmax_wrong_axis(q, k, x).weights
    right = attention(q, k, x).weights
    assert torch.allclose(right.sum(-1), torch.ones(2, dtype=F64), atol=1e-15)
    assert not torch.allclose(wrong.sum(-1), torch.ones(2, dtype=F64), atol=1e-3)


def test_zero_after_softmax_leaks_the_future():
    # The lesson's control: scores (1, 2, 3), only key 0 legal; changing a forbidden score moves
    # the buggy weights but not the masked softmax.
    z = torch.tensor([[1.0, 2.0, 3.0]], dtype=F64)
    z2 = z.clone()
    z2[0, 2] = 30.0
    legal = torch.tensor([[True, False, False]])
    eye = torch.eye(1, dtype=F64)  # q = 1 and k = z^T turn the scores into q kᵀ with scale 1
    bad = slips.zero_after_softmax(eye, z.T, z.T, legal, scale=1.0).weights
    bad2 = slips.zero_after_softmax(eye, z2.T, z2.T, legal, scale=1.0).weights
    assert not torch.equal(bad, bad2)
    assert bad.sum().item() < 1
    good = attention(eye, z.T, z.T, legal, scale=1.0).weights
    good2 = attention(eye, z2.T, z2.T, legal, scale=1.0).weights
    assert torch.equal(good, good2)
    renorm = slips.zero_after_softmax(eye, z.T, z.T, legal, scale=1.0, renormalize=True).weights
    assert torch.allclose(renorm, good, atol=1e-15)


def test_multiply_by_mask_gives_blocked_keys_weight():
    t = bank_row()
    allowed = torch.tensor([[True, True, False]])
    wrong = slips.multiply_by_mask(t.q, t.k, t.v, allowed).weights
    assert wrong[0, 2] > 0.1  # e^0 of the zeroed score still takes mass
    assert attention(t.q, t.k, t.v, allowed).weights[0, 2] == 0


def test_triu_diagonal_slip_masks_the_first_row_entirely():
    x = torch.randn(5, 4, dtype=F64)
    bad = slips.triu_diagonal_mask(5)
    assert not bad[0].any()
    with pytest.raises(ValueError, match="fully masked"):
        attention(x, x, x, bad)
    # The -1e9 fill hides it: a uniform row 0.2 over five blocked keys, no error.
    hidden = slips.finite_fill(x, x, x, bad).weights
    assert torch.allclose(hidden[0], torch.full((5,), 0.2, dtype=F64), atol=1e-15)
    assert torch.equal(~torch.triu(torch.ones(5, 5, dtype=torch.bool), 1), causal_mask(5, 5))


def test_top_left_mask_is_wrong_with_a_cached_prefix():
    # 3 cached keys + 2 new queries: query 0 sits at position 3 and must see keys 0..3.
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, n, 3, generator=g, dtype=F64) for n in (2, 5, 5))
    right = attention(q, k, v, causal_mask(2, 5)).output
    top_left = attention(q, k, v, causal_mask(2, 5, align="top_left")).output
    # Oracle: the same two queries as the last rows of a full 5 × 5 causal pass (any earlier queries).
    full = attention(torch.cat([k[:, :3], q], 1), k, v, causal_mask(5, 5, align="top_left")).output
    assert torch.allclose(right, full[:, 3:], atol=1e-15)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.0)
    assert torch.allclose(top_left, ref, atol=1e-12)  # top-left is what is_causal=True does...
    assert not torch.allclose(right, ref, atol=1e-3)  # ...and it is not the cached-prefix answer
    assert causal_mask(2, 5).sum() == 4 + 5 and causal_mask(2, 5, "top_left").sum() == 1 + 2


def test_q_transpose_k_has_the_wrong_shape():
    x = torch.randn(4, 3, dtype=F64)
    assert slips.q_transpose_k(x, x).shape == (3, 3)
    with pytest.raises(ValueError):
        slips.q_transpose_k(x, torch.randn(5, 3, dtype=F64))
