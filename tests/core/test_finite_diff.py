"""Central finite differences against torch autograd through SDPA, and against the manual backward.

Tolerance 1e-7 at every ε (the lesson script's), argued for these sizes: inputs are N(0, 1), a
handful of keys, so |∂³L/∂θ³| is O(1–10); truncation at ε = 1e-4 is ≤ 1e-8/6 · 10 ≈ 2e-8. A loss
is a sum of ≤ 20 products of O(1) numbers, each through ≤ 20 roundings, so its error δ ≲ 400 · 2⁻⁵³
· O(1) ≈ 5e-14 and the rounding term at ε = 1e-6 is δ/ε ≈ 5e-8. Both sit under 1e-7; a real error in
a gradient formula is O(0.01–1), five orders above.
"""

from __future__ import annotations

import pytest
import torch

from attn_core import toy
from attn_core.backward import attention_backward
from attn_core.finite_diff import DEFAULT_EPS, finite_differences
from attn_core.limits import LIMITS
from attn_core.masks import causal_mask
from attn_core.oracle import sdpa_autograd
from attn_core.slips.backward import slip_drop_rowsum

F64 = torch.float64
FD_TOL = 1e-7  # argued in the module docstring


CASES = {
    # The lesson script's three shapes, plus GQA and a custom scale.
    "3x5 unmasked": (1, 1, 3, 5, 3, 2, None, None),
    "4x4 causal": (1, 1, 4, 4, 3, 2, causal_mask(4, 4), None),
    "2x5 cached prefix": (1, 1, 2, 5, 3, 2, causal_mask(2, 5), None),
    "GQA 2 on 1, causal": (2, 1, 3, 3, 2, 2, causal_mask(3, 3), None),
    "scale 0.5": (1, 1, 3, 4, 2, 3, None, 0.5),
}


@pytest.mark.parametrize("name", list(CASES))
def test_finite_differences_match_autograd_and_manual(name):
    hq, hkv, L, S, d_k, d_v, allowed, scale = CASES[name]
    g = torch.Generator().manual_seed(19)
    q = torch.randn(1, hq, L, d_k, generator=g, dtype=F64)
    k = torch.randn(1, hkv, S, d_k, generator=g, dtype=F64)
    v = torch.randn(1, hkv, S, d_v, generator=g, dtype=F64)
    G = torch.randn(1, hq, L, d_v, generator=g, dtype=F64)
    fd = finite_differences(q, k, v, G, allowed, scale=scale)
    auto = sdpa_autograd(q, k, v, G, allowed, scale=scale)
    manual = attention_backward(q, k, v, G, allowed, scale=scale)
    assert fd.eps == DEFAULT_EPS
    assert fd.forward_passes == 2 * (q.numel() + k.numel() + v.numel()) * 3
    for i in range(len(fd.eps)):
        estimate = (fd.dq[i], fd.dk[i], fd.dv[i])
        err_auto = max(float((e - a).abs().max()) for e, a in zip(estimate, auto, strict=True))
        err_manual = max(
            float((e - m).abs().max())
            for e, m in zip(estimate, (manual.dq, manual.dk, manual.dv), strict=True)
        )
        assert err_auto <= FD_TOL
        assert err_manual <= FD_TOL
        # The module's own ε²/6 · |∂³L| + δ/ε prediction also covers the measured error.
        assert err_auto <= fd.bound[i]


def test_toy_query_gradient_by_finite_differences():
    """The card: a finite-difference check of bank's query gradient agrees to 2.4e-12. At ε = 1e-5 the
    truncation is 1e-10/6 · |∂³L| with |∂³L| < 1 here, the rounding δ/ε ≈ 1e-16/1e-5: under 1e-10."""
    t = toy.bank_row()
    g = torch.tensor([[-1.0, 0.0]], dtype=F64)
    fd = finite_differences(t.q, t.k, t.v, g, eps=(1e-4, 1e-5))
    assert torch.allclose(fd.dq[1][0], torch.tensor([-0.057, 0.116], dtype=F64), atol=5e-4)
    dq, _, _ = sdpa_autograd(t.q, t.k, t.v, g)
    assert float((fd.dq[1] - dq).abs().max()) <= 1e-10
    assert abs(fd.loss - (-0.576)) <= 5e-4  # L = gᵀo = −o_geography


def test_finite_differences_catch_a_wrong_gradient():
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 1, 3, 2, generator=g, dtype=F64) for _ in range(3))
    G = torch.randn(1, 1, 3, 2, generator=g, dtype=F64)
    fd = finite_differences(q, k, v, G)
    wrong = slip_drop_rowsum(q, k, v, G)
    for i in range(len(fd.eps)):
        assert float((wrong.dq - fd.dq[i]).abs().max()) > 100 * fd.bound[i]


def test_size_caps_raise_with_the_cap_in_the_message():
    n = LIMITS.fd_coordinates  # 3 tensors of n/2 coordinates each exceed the cap
    q = torch.zeros(1, 1, n // 4, 2, dtype=F64)
    k = torch.zeros(1, 1, n // 4, 2, dtype=F64)
    v = torch.zeros(1, 1, n // 4, 2, dtype=F64)
    G = torch.zeros(1, 1, n // 4, 2, dtype=F64)
    with pytest.raises(ValueError, match=f"{n:,}"):
        finite_differences(q, k, v, G)
    with pytest.raises(ValueError, match="positive"):
        t = toy.bank_row()
        finite_differences(t.q, t.k, t.v, torch.zeros(1, 2, dtype=F64), eps=(0.0,))
