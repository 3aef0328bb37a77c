"""Property tests on random inputs: shift invariance, rows summing to 1, outputs as convex
combinations of the values (card 1 step 4, card 2)."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_core import attention, stable_softmax

F64 = torch.float64
sizes = st.integers(1, 9)


@st.composite
def problems(draw):
    L, S, d_k, d_v = draw(sizes), draw(sizes), draw(sizes), draw(sizes)
    seed = draw(st.integers(0, 2**31 - 1))
    spread = draw(st.floats(0.01, 30.0))
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(L, d_k, generator=g, dtype=F64) * spread
    k = torch.randn(S, d_k, generator=g, dtype=F64) * spread
    v = torch.randn(S, d_v, generator=g, dtype=F64)
    allowed = torch.rand(L, S, generator=g) < draw(st.floats(0.1, 1.0))
    allowed[:, 0] |= ~allowed.any(-1)
    return q, k, v, allowed


@settings(max_examples=150, deadline=None)
@given(problems(), st.floats(-1e4, 1e4))
def test_shift_invariance(problem, c):
    q, k, v, allowed = problem
    s = attention(q, k, v, allowed).scores
    # Adding c changes every exponent argument by rounding of s + c: relative error ~ |c| · 2^-53,
    # so weights move by at most ~ (|c| + |s|) · 1e-16 ≤ ~1e-11 here.
    assert torch.allclose(stable_softmax(s + c), stable_softmax(s), atol=1e-10, rtol=0)


@settings(max_examples=150, deadline=None)
@given(problems())
def test_rows_sum_to_one_and_blocked_keys_get_zero(problem):
    q, k, v, allowed = problem
    w = attention(q, k, v, allowed).weights
    # At most 9 terms each below 1: the float64 sum is within 9 · 2^-53 ≈ 1e-15 of 1.
    assert torch.allclose(w.sum(-1), torch.ones(w.shape[0], dtype=F64), atol=1e-14, rtol=0)
    assert (w[~allowed] == 0).all()
    assert (w >= 0).all()


@settings(max_examples=150, deadline=None)
@given(problems())
def test_outputs_are_convex_combinations(problem):
    q, k, v, allowed = problem
    o = attention(q, k, v, allowed).output  # (L, d_v)
    for i in range(o.shape[0]):
        vis = v[allowed[i]]
        # A weighted average of at most 9 values: rounding is below 1e-14 of max |v|.
        assert (o[i] >= vis.amin(0) - 1e-14).all() and (o[i] <= vis.amax(0) + 1e-14).all()
