"""attention() against torch SDPA, an independent fused implementation, in float64."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from attn_core import attention, causal_mask, logsumexp, padding_mask, sliding_window_mask

F64 = torch.float64
# Both sides compute the same sums in float64 in a different order: the difference is a few ulps
# of the largest |output| (~1e-16 · S · max|v| ≈ 1e-14 at these sizes). 1e-12 is the spec's bound and
# is still 10 orders of magnitude below any real bug (a wrong mask or axis moves outputs by ~0.1).
TOL = 1e-12


def qkv(B, Hq, Hkv, L, S, d_k, d_v, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, Hq, L, d_k, generator=g, dtype=F64)
    k = torch.randn(B, Hkv, S, d_k, generator=g, dtype=F64)
    v = torch.randn(B, Hkv, S, d_v, generator=g, dtype=F64)
    return q, k, v


SHAPES = [  # B, Hq, Hkv, L, S, d_k, d_v
    (1, 1, 1, 1, 1, 1, 1),
    (1, 1, 1, 3, 5, 3, 2),  # L != S, d_v != d_k
    (2, 3, 3, 7, 7, 5, 4),  # odd lengths, batch and heads
    (1, 2, 2, 97, 33, 16, 8),  # awkward sizes
    (2, 8, 2, 9, 13, 8, 6),  # GQA, group 4
    (1, 4, 1, 5, 11, 4, 3),  # MQA
]


@pytest.mark.parametrize("shape", SHAPES)
def test_matches_sdpa_no_mask(shape):
    B, Hq, Hkv, L, S, d_k, d_v = shape
    q, k, v = qkv(*shape)
    ours = attention(q, k, v).output
    ref = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, enable_gqa=Hq != Hkv)
    assert ours.shape == (B, Hq, L, d_v)
    assert (ours - ref).abs().max() <= TOL


@pytest.mark.parametrize("shape", SHAPES)
def test_top_left_causal_matches_is_causal(shape):
    B, Hq, Hkv, L, S, d_k, d_v = shape
    q, k, v = qkv(*shape, seed=1)
    ours = attention(q, k, v, causal_mask(L, S, align="top_left")).output
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.0, enable_gqa=Hq != Hkv)
    assert (ours - ref).abs().max() <= TOL


@pytest.mark.parametrize("shape", [s for s in SHAPES if s[3] <= s[4]])  # L > S leaves empty rows
def test_bottom_right_causal_matches_causal_lower_right(shape):
    B, Hq, Hkv, L, S, d_k, d_v = shape
    q, k, v = qkv(*shape, seed=2)
    ours = attention(q, k, v, causal_mask(L, S)).output
    ref = F.scaled_dot_product_attention(
        q, k, v, attn_mask=causal_lower_right(L, S), dropout_p=0.0, enable_gqa=Hq != Hkv
    )
    assert (ours - ref).abs().max() <= TOL


def test_bottom_right_mask_is_tril_with_offset():
    # Independent oracle: tril(ones(L, S), diagonal=S-L) is what causal_lower_right materializes.
    for L, S in [(1, 1), (2, 5), (4, 4), (3, 8)]:
        assert torch.equal(causal_mask(L, S), torch.tril(torch.ones(L, S, dtype=torch.bool), diagonal=S - L))
        assert torch.equal(causal_mask(L, S, "top_left"), torch.tril(torch.ones(L, S, dtype=torch.bool)))


@pytest.mark.parametrize("seed", range(5))
def test_random_boolean_masks_and_custom_scale(seed):
    q, k, v = qkv(2, 4, 2, 6, 9, 5, 3, seed=seed)
    g = torch.Generator().manual_seed(100 + seed)
    allowed = torch.rand(2, 4, 6, 9, generator=g) < 0.4
    allowed[..., 0] |= ~allowed.any(-1)  # no empty rows
    scale = 0.37 + seed
    ours = attention(q, k, v, allowed, scale=scale).output
    ref = F.scaled_dot_product_attention(
        q, k, v, attn_mask=allowed, dropout_p=0.0, scale=scale, enable_gqa=True
    )
    assert (ours - ref).abs().max() <= TOL


def test_sliding_window_and_padding_match_sdpa():
    q, k, v = qkv(3, 2, 2, 6, 6, 4, 4, seed=7)
    window = sliding_window_mask(6, 6, 3)
    # Oracle: causal band written with torch.triu/tril directly.
    band = torch.tril(torch.ones(6, 6, dtype=torch.bool)) & torch.triu(
        torch.ones(6, 6, dtype=torch.bool), diagonal=-2
    )
    assert torch.equal(window, band)
    pad = padding_mask([6, 4, 1], 6)
    assert pad.shape == (3, 1, 1, 6)
    # Window 3 over lengths ≥ 4 keeps at least one key per row (3 ≤ 5 - 3 + 1 ... key 3 for row 5).
    for allowed in (window, pad, window & padding_mask([6, 4, 4], 6)):
        ours = attention(q, k, v, allowed).output
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=0.0)
        assert (ours - ref).abs().max() <= TOL


def test_gqa_head_mapping():
    # Query head h must read KV head h // (Hq / Hkv): compare head by head with single-head SDPA.
    q, k, v = qkv(1, 6, 3, 4, 5, 3, 2, seed=3)
    ours = attention(q, k, v).output
    for h in range(6):
        ref = F.scaled_dot_product_attention(q[:, h], k[:, h // 2], v[:, h // 2], dropout_p=0.0)
        assert (ours[:, h] - ref).abs().max() <= TOL


def test_default_scale_is_inverse_sqrt_dk():
    q, k, v = qkv(1, 1, 1, 2, 3, 9, 2)
    res = attention(q, k, v)
    assert res.scale == pytest.approx(1 / 3)
    assert torch.allclose(res.scores, q @ k.transpose(-2, -1) / 3, atol=0, rtol=1e-15)


@pytest.mark.parametrize(
    ("q_shape", "k_shape", "v_shape", "message"),
    [
        ((1, 3, 4), (1, 5, 3), (1, 5, 2), "width"),
        ((1, 3, 4), (1, 5, 4), (1, 6, 2), "lengths must match"),
        ((1, 3, 0), (1, 5, 0), (1, 5, 2), "zero width"),
        ((1, 3, 4), (1, 0, 4), (1, 0, 2), "no keys"),
        ((6, 3, 4), (4, 5, 4), (4, 5, 2), "multiple of Hkv"),
    ],
)
def test_rejects_bad_shapes(q_shape, k_shape, v_shape, message):
    with pytest.raises(ValueError, match=message):
        attention(
            torch.zeros(q_shape, dtype=F64), torch.zeros(k_shape, dtype=F64), torch.zeros(v_shape, dtype=F64)
        )


def test_rejects_fully_masked_row():
    q, k, v = qkv(1, 1, 1, 3, 3, 2, 2)
    allowed = torch.ones(3, 3, dtype=torch.bool)
    allowed[1] = False
    with pytest.raises(ValueError, match=r"row\(s\) \[1\]"):
        attention(q, k, v, allowed)
    # L > S with bottom-right alignment leaves the first L - S rows without keys.
    with pytest.raises(ValueError, match="fully masked"):
        attention(*qkv(1, 1, 1, 5, 3, 2, 2)[:3], causal_mask(5, 3))


def test_rejects_mask_that_does_not_broadcast():
    q, k, v = qkv(1, 1, 1, 3, 4, 2, 2)
    with pytest.raises(ValueError, match="does not broadcast"):
        attention(q, k, v, torch.ones(3, 3, dtype=torch.bool))


def test_logsumexp_matches_torch_and_survives_large_scores():
    s = torch.randn(4, 9, dtype=F64) * 30
    assert torch.allclose(logsumexp(s), torch.logsumexp(s, -1), rtol=0, atol=1e-12)
    big = torch.tensor([1000.0, 999.0], dtype=F64)
    assert torch.exp(big).isinf().all()  # the naive form overflows even in float64
    assert logsumexp(big).item() == pytest.approx(1000 + math.log1p(math.exp(-1)), abs=1e-12)
