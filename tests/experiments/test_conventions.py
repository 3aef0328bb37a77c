"""Mask conventions: SDPA bool True = allowed, nn.MultiheadAttention True = blocked, additive floats.

Oracles: torch's own APIs. F.scaled_dot_product_attention and a *randomly initialised*
nn.MultiheadAttention (real projections, two heads) are each fed the same pattern in their own
convention and must agree with one another and with the explicit-projection SDPA computation.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attn_core.experiments import conventions as cv
from attn_core.masks import causal_mask, sliding_window_mask

F64 = torch.float64
# float64, S ≤ 16: SDPA, MHA and our reference differ only in summation order (~1e-15);
# a mask in the wrong convention changes outputs by O(0.1). 1e-12 sits between.
TOL = 1e-12


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


MASKS = {
    "causal 5×5": causal_mask(5, 5),
    "bottom-right 3×7": causal_mask(3, 7),
    "window 6×6": sliding_window_mask(6, 6, 2),
    "random 4×9": torch.rand(4, 9, generator=torch.Generator().manual_seed(1)) < 0.6,
}


@pytest.mark.parametrize("name", list(MASKS))
@pytest.mark.parametrize("src", cv.CONVENTIONS)
@pytest.mark.parametrize("dst", cv.CONVENTIONS)
def test_conversions_round_trip(name, src, dst):
    allowed = MASKS[name]
    there = cv.convert(cv.from_allowed(allowed, src), src, dst)
    back = cv.convert(there, dst, src)
    assert torch.equal(cv.to_allowed(back, src), allowed)


def test_conventions_mean_what_torch_says():
    allowed = causal_mask(3, 3)
    assert torch.equal(cv.from_allowed(allowed, "blocked"), torch.triu(torch.ones(3, 3, dtype=torch.bool), 1))
    additive = cv.from_allowed(allowed, "additive")
    assert torch.equal(additive.isneginf(), ~allowed) and torch.equal(
        additive[allowed], torch.zeros(6, dtype=F64)
    )
    # A finite sentinel is a bias, not a block: to_allowed keeps it (the module docstring says why).
    assert bool(cv.to_allowed(torch.tensor([0.0, -1e9]), "additive").all())
    with pytest.raises(ValueError, match="float"):
        cv.to_allowed(allowed, "additive")
    with pytest.raises(ValueError, match="unknown convention"):
        cv.from_allowed(allowed, "inverted")


@pytest.mark.parametrize("name", [n for n in MASKS if not n.startswith("random")])
def test_each_convention_gives_the_same_output_through_its_own_api(name):
    attn_allowed = MASKS[name]
    L, S = attn_allowed.shape
    d = 4
    q, k, v = randn(L, d, seed=2), randn(S, d, seed=3), randn(S, d, seed=4)
    valid = torch.ones(S, dtype=torch.bool)
    valid[-1] = S <= 5  # pad the last key where that leaves no row empty
    report = cv.compare_conventions(q, k, v, attn_allowed, valid)
    assert report.all_correct_agree
    assert [r.is_slip for r in report.rows].count(True) == 1
    slip = next(r for r in report.rows if r.is_slip)
    assert not slip.agrees and slip.max_abs_diff > 1e-3
    # Independent oracle: SDPA with the combined bool mask, computed here.
    ref = F.scaled_dot_product_attention(
        q[None], k[None], v[None], attn_mask=attn_allowed & valid, dropout_p=0.0
    )[0]
    assert torch.allclose(report.reference, ref, atol=TOL, rtol=0)


def test_random_multihead_module_agrees_across_conventions():
    """A real nn.MultiheadAttention (random projections, 2 heads) sees one pattern three ways."""
    torch.manual_seed(0)
    B, L, S, E, H = 2, 4, 6, 8, 2
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True, dtype=F64).eval()
    x_q, x_kv = randn(B, L, E, seed=5), randn(B, S, E, seed=6)
    attn_allowed = causal_mask(L, S)  # (L, S)
    valid = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])  # (B, S): batch 1 has 2 padding keys
    with torch.no_grad():
        blocked, _ = mha(
            x_q,
            x_kv,
            x_kv,
            attn_mask=cv.from_allowed(attn_allowed, "blocked"),
            key_padding_mask=cv.from_allowed(valid, "blocked"),
            need_weights=False,
        )
        combined = attn_allowed & valid[:, None, :]  # (B, L, S)
        additive = cv.from_allowed(combined, "additive").repeat_interleave(H, 0)  # (B·H, L, S)
        float_out, _ = mha(x_q, x_kv, x_kv, attn_mask=additive, need_weights=False)
        # The module's math spelled out: project, split heads, SDPA with True = allowed, merge, project.
        W_q, W_k, W_v = mha.in_proj_weight.chunk(3)
        b_q, b_k, b_v = mha.in_proj_bias.chunk(3)

        def heads(x):  # (B, n, E) -> (B, H, n, E/H)
            return x.reshape(B, x.shape[1], H, E // H).transpose(1, 2)

        Q, K, V = heads(x_q @ W_q.T + b_q), heads(x_kv @ W_k.T + b_k), heads(x_kv @ W_v.T + b_v)
        O = F.scaled_dot_product_attention(
            Q, K, V, attn_mask=combined[:, None], dropout_p=0.0
        )  # (B, H, L, E/H)
        manual = mha.out_proj(O.transpose(1, 2).reshape(B, L, E))
    assert torch.allclose(blocked, manual, atol=TOL, rtol=0)
    assert torch.allclose(float_out, manual, atol=TOL, rtol=0)


def test_identity_mha_is_plain_attention():
    q, k, v = randn(1, 3, 5, seed=7), randn(1, 4, 5, seed=8), randn(1, 4, 5, seed=9)
    with torch.no_grad():
        out, _ = cv.identity_mha(5)(q, k, v, need_weights=False)
    S = q @ k.transpose(-2, -1) / math.sqrt(5)
    assert torch.allclose(out, torch.softmax(S, -1) @ v, atol=TOL, rtol=0)


def test_compare_conventions_rejects_what_it_cannot_run():
    q, k = randn(3, 4), randn(5, 4)
    with pytest.raises(ValueError, match="d_k = d_v"):
        cv.compare_conventions(q, k, randn(5, 2), causal_mask(3, 5))
    with pytest.raises(ValueError, match="fully masked"):
        cv.compare_conventions(q, k, randn(5, 4), torch.zeros(3, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"\(L, S\)"):
        cv.compare_conventions(q, k, randn(5, 4), causal_mask(5, 5))
