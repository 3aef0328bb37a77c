"""Card 7: Attn(ΠX) = Π Attn(X) without mask or positions; pooling invariant; causal breaks it; 1/t.

Oracles: torch SDPA on the permuted input, an explicit permutation *matrix* Π (not indexing), and
the card's formulas (1/t, 1/T).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attn_core.experiments import equivariance as eq

F64 = torch.float64
# float64: permuting a softmax row only reorders its sum (~T · 2^-53 ≈ 1e-15 for T ≤ 32); the spec
# measures 1.1e-16 on the toy. A broken symmetry moves outputs by O(0.1). 1e-12 separates them.
TOL = 1e-12


def perm_matrix(perm):
    T = len(perm)
    Pi = torch.zeros(T, T, dtype=F64)
    Pi[torch.arange(T), torch.tensor(perm)] = 1.0  # row n picks old token perm[n]
    return Pi


def sdpa_self_attention(X, W, causal):
    Q, K, V = (X @ w for w in W)
    return F.scaled_dot_product_attention(Q, K, V, is_causal=causal, dropout_p=0.0)


@pytest.mark.parametrize(("T", "seed"), [(2, 0), (5, 1), (7, 2), (32, 3)])
def test_equivariant_without_mask_or_positions(T, seed):
    X = torch.randn(T, 6, generator=torch.Generator().manual_seed(seed), dtype=F64)
    perm = eq.random_permutation(T, seed + 10)
    r = eq.permutation_test(X, perm, d_k=3, seed=seed)
    assert r.equivariance_error <= TOL
    assert r.pooled_error <= TOL
    # Oracle: SDPA on ΠX vs Π · SDPA(X), with Π a matrix.
    Pi, W = perm_matrix(perm), eq.projections(6, 3, seed)
    lhs, rhs = sdpa_self_attention(Pi @ X, W, False), Pi @ sdpa_self_attention(X, W, False)
    assert torch.allclose(lhs, rhs, atol=TOL, rtol=0)
    assert torch.allclose(r.outputs_of_permuted, lhs, atol=TOL, rtol=0)
    assert torch.allclose(r.permuted_outputs, rhs, atol=TOL, rtol=0)


@pytest.mark.parametrize("T", [3, 5, 9])
def test_causal_mask_breaks_equivariance(T):
    X = torch.randn(T, 6, generator=torch.Generator().manual_seed(T), dtype=F64)
    perm = eq.parse_permutation("reverse", T)
    r = eq.permutation_test(X, perm, causal=True)
    assert r.equivariance_error > 1e-3
    W = eq.projections(6, 4, 0)
    oracle = sdpa_self_attention(X[list(perm)], W, True) - perm_matrix(perm) @ sdpa_self_attention(X, W, True)
    assert r.equivariance_error == pytest.approx(float(oracle.abs().max()), abs=TOL)
    # Token 0 sees only itself, so the first new position (old last token) cannot match Π Attn(X)'s row.
    assert float(r.row_error[0]) > 1e-3


def test_positions_break_equivariance_too():
    X = torch.randn(6, 8, generator=torch.Generator().manual_seed(4), dtype=F64)
    r = eq.permutation_test(X, eq.parse_permutation("reverse", 6), positions=True)
    assert r.equivariance_error > 1e-3


def test_identity_permutation_changes_nothing_even_with_a_mask():
    X = torch.randn(5, 6, generator=torch.Generator().manual_seed(5), dtype=F64)
    r = eq.permutation_test(X, tuple(range(5)), causal=True, positions=True)
    assert r.equivariance_error == 0.0 and r.pooled_error == 0.0


def test_dog_bites_man():
    """Card 7's interview answer: the two sentences get the same vectors rearranged, pooled identical."""
    words = ["dog", "bites", "man"]
    X, X_swapped = eq.embed_words(words), eq.embed_words(["man", "bites", "dog"])
    assert torch.equal(X_swapped, X[[2, 1, 0]])  # the same word always gets the same vector
    r = eq.permutation_test(X, (2, 1, 0))
    assert r.equivariance_error <= TOL and r.pooled_error <= TOL


@pytest.mark.parametrize("T", [1, 5, 64, 4096])
def test_bos_share_is_one_over_t(T):
    b = eq.bos_share(T)
    t = torch.arange(1, T + 1, dtype=F64)
    # Each causal row is an average of t equal weights: 1/t up to a couple of roundings (≤ 4 ulp).
    assert torch.allclose(b.causal, 1 / t, atol=0, rtol=4 * 2**-52)
    assert torch.allclose(b.unmasked, torch.full((T,), 1 / T, dtype=F64), atol=0, rtol=4 * 2**-52)
    if T == 5:  # the card's picture: 1, 1/2, 1/3, 1/4, 1/5
        assert b.causal.tolist() == pytest.approx([1, 0.5, 1 / 3, 0.25, 0.2], abs=1e-15)


@pytest.mark.parametrize(
    ("text", "T", "message"),
    [("0 1", 3, "needs 3"), ("0 0 1", 3, "missing"), ("a b c", 3, "whole numbers"), ("0 1 3", 3, "missing")],
)
def test_parse_permutation_rejects_bad_input(text, T, message):
    with pytest.raises(ValueError, match=message):
        eq.parse_permutation(text, T)


def test_parse_permutation_accepts_commas_and_reverse():
    assert eq.parse_permutation("2, 0, 1", 3) == (2, 0, 1)
    assert eq.parse_permutation(" Reverse ", 4) == (3, 2, 1, 0)
    assert sorted(eq.random_permutation(9, 1)) == list(range(9))
