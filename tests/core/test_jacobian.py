"""Card 4 against independent oracles: torch autograd's Jacobian of torch.softmax, central finite
differences, numpy-free closed forms for two keys, and the card's printed numbers."""

from __future__ import annotations

import math

import mpmath
import pytest
import torch

from attn_core import toy
from attn_core.attention import attention
from attn_core.jacobian import (
    diagonal_only_jacobian,
    gershgorin_bound,
    jacobian_frobenius,
    jacobian_spectrum,
    largest_eigenvalue,
    saturation_sweep,
    softmax_jacobian,
    softmax_jvp,
)

F64 = torch.float64
# J's entries are products of two numbers in [0, 1]: float64 rounding ≤ 2⁻⁵² ≈ 2.2e-16 each, and
# autograd evaluates the same products in another order, so 1e-15 is a few ulps of slack.
EXACT = 1e-15
# Eigenvalues of a symmetric matrix with ‖J‖ ≤ 1/2 come out of LAPACK within ~T · 2⁻⁵³ · ‖J‖ ≈ 1e-15.
EIG = 1e-14


def random_row(T: int, seed: int, spread: float = 1.0) -> torch.Tensor:
    s = spread * torch.randn(T, generator=torch.Generator().manual_seed(seed), dtype=F64)
    return torch.softmax(s, -1)


@pytest.mark.parametrize("T", [2, 3, 7, 16])
def test_jacobian_matches_autograd(T):
    s = torch.randn(T, generator=torch.Generator().manual_seed(T), dtype=F64)
    oracle = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, -1), s)  # (T, T), ∂p_i/∂s_j
    assert (softmax_jacobian(torch.softmax(s, -1)) - oracle).abs().max() <= EXACT


def test_jacobian_matches_finite_differences_on_a_7_key_row():
    """The card reports 3.8e-11 on a random 7-key row. Central differences at ε = 1e-5: truncation
    ε²/6 · |∂³p| ≤ 1e-10/6 · O(1) and rounding 2⁻⁵³/ε ≈ 1e-11, so 1e-9 is a safe bound."""
    s = torch.randn(7, generator=torch.Generator().manual_seed(4), dtype=F64)
    eps = 1e-5
    cols = [
        (torch.softmax(s + eps * e, -1) - torch.softmax(s - eps * e, -1)) / (2 * eps)
        for e in torch.eye(7, dtype=F64)
    ]
    fd = torch.stack(cols, dim=1)  # column j = ∂p/∂s_j
    assert (softmax_jacobian(torch.softmax(s, -1)) - fd).abs().max() <= 1e-9


def test_bank_row_spectrum_and_bound():
    t = toy.bank_row()
    p = attention(t.q, t.k, t.v).weights[0]  # (3,) on the, river, bank
    spec = jacobian_spectrum(p)
    # Printed to three decimals: half a unit in the last place.
    assert torch.allclose(spec.eigenvalues, torch.tensor([0.393, 0.175, 0.0], dtype=F64), atol=5e-4)
    assert abs(spec.gershgorin - 0.488) <= 5e-4
    J_card = torch.tensor(
        [[0.120, -0.081, -0.040], [-0.081, 0.244, -0.164], [-0.040, -0.164, 0.203]], dtype=F64
    )
    assert (spec.jacobian - J_card).abs().max() <= 5e-4
    assert spec.rank == 2
    # The zero eigenvalue's eigenvector is the all-ones direction.
    ones = torch.ones(3, dtype=F64) / math.sqrt(3)
    assert abs(abs(float(spec.eigenvectors[:, -1] @ ones)) - 1) <= EIG


@pytest.mark.parametrize("seed", range(5))
def test_structure_symmetric_psd_rank_and_null_space(seed):
    p = random_row(6, seed)
    spec = jacobian_spectrum(p)
    assert spec.symmetry_gap == 0  # diag(p) − p pᵀ is symmetric entry by entry (p_i p_j = p_j p_i)
    assert spec.ones_residual <= EXACT
    assert spec.eigenvalues.min() >= -EIG  # PSD
    assert spec.rank == 5  # T − 1 with every weight positive
    assert spec.eigenvalues[0] <= spec.gershgorin + EIG <= 0.5 + EIG
    # The quadratic form is the variance of u under p (card 4 step 3).
    u = torch.randn(6, generator=torch.Generator().manual_seed(100 + seed), dtype=F64)
    var = (p * u**2).sum() - (p * u).sum() ** 2
    assert abs(float(u @ spec.jacobian @ u - var)) <= EXACT * 10


def test_rank_drops_with_a_zero_weight():
    p = torch.tensor([0.5, 0.3, 0.2, 0.0], dtype=F64)  # a blocked key
    assert jacobian_spectrum(p).rank == 2


def test_two_key_closed_forms():
    half = jacobian_spectrum(torch.tensor([0.5, 0.5], dtype=F64))
    assert abs(float(half.eigenvalues[0]) - 0.5) <= EIG  # the bound is attained
    nine = jacobian_spectrum(torch.tensor([0.9, 0.1], dtype=F64))
    assert torch.allclose(nine.jacobian, torch.tensor([[0.09, -0.09], [-0.09, 0.09]], dtype=F64), atol=EIG)
    assert torch.allclose(nine.eigenvalues, torch.tensor([0.18, 0.0], dtype=F64), atol=EIG)
    assert abs(float(jacobian_spectrum(torch.tensor([0.99, 0.01], dtype=F64)).eigenvalues[0]) - 0.0198) <= EIG


def test_half_bound_over_many_random_rows():
    """The card: over 20,000 random rows the largest eigenvalue was 0.500 and never above."""
    g = torch.Generator().manual_seed(0)
    T = torch.randint(2, 9, (1,), generator=g).item()
    s = 3 * torch.randn(20_000, T, generator=g, dtype=F64)
    p = torch.softmax(s, -1)
    lam = torch.linalg.eigvalsh(softmax_jacobian(p))[:, -1]
    assert (lam <= gershgorin_bound(p) + EIG).all()
    assert float(lam.max()) <= 0.5 + EIG


def test_jvp_equals_j_times_y_and_never_forms_j():
    p, y = random_row(9, 1), torch.randn(9, dtype=F64)
    assert (softmax_jvp(p, y) - softmax_jacobian(p) @ y).abs().max() <= EXACT * 10
    # T = 2,000,000: J would be 32 TB of float64; the JVP runs in O(T) memory.
    T = 2_000_000
    p, y = torch.full((T,), 1.0 / T, dtype=F64), torch.arange(T, dtype=F64)
    out = softmax_jvp(p, y)
    # Uniform p: J y = (y − mean y) / T.
    assert torch.allclose(out, (y - y.mean()) / T, rtol=0, atol=1e-12)


def test_diagonal_only_slip_breaks_the_row_sums():
    p = random_row(5, 2)
    slip = diagonal_only_jacobian(p)
    assert (slip @ torch.ones(5, dtype=F64)).abs().max() > 1e-2  # J·1 should be 0
    assert (slip - softmax_jacobian(p)).abs().max() > 1e-2


def test_saturation_sweep_limits():
    scores = torch.tensor([0.0, 1.414, 0.707, -math.inf], dtype=F64)  # one blocked key
    sweep = saturation_sweep(scores, n=41, low=0.01, high=1000.0)
    # τ = 0.01: the top score beats the next by 0.707/0.01 ≈ 71 nats, so every p(1 − p) < e⁻⁷⁰.
    assert float(sweep.lambda_max[0]) <= 1e-25 and float(sweep.frobenius[0]) <= 1e-25
    assert float(sweep.max_weight[0]) == 1.0
    # τ = 1000: scores differ by ≤ 1.5e-3 nats, so p is uniform over 3 keys to ~1e-3:
    # λ_max → 1/3 and ‖J‖_F → √2/3 within a few 1e-3.
    assert abs(float(sweep.lambda_max[-1]) - 1 / 3) <= 5e-3
    assert abs(float(sweep.frobenius[-1]) - math.sqrt(2) / 3) <= 5e-3
    # Every point agrees with the spectrum computed directly at that temperature.
    i = 20
    direct = jacobian_spectrum(torch.softmax(scores / sweep.temperatures[i], -1))
    assert abs(float(sweep.lambda_max[i]) - float(direct.eigenvalues[0])) <= EIG
    assert abs(float(sweep.frobenius[i]) - direct.frobenius) <= EIG


@pytest.mark.parametrize("T", [1, 2, 3, 7, 40])
def test_o_t_lambda_max_and_frobenius_match_dense_linear_algebra(T):
    """On ordinary rows, against eigvalsh and matrix_norm of the formed J (abs. error ≤ T · 2⁻⁵³)."""
    s = 2 * torch.randn(50, T, generator=torch.Generator().manual_seed(T), dtype=F64)
    p = torch.softmax(s, -1)
    J = softmax_jacobian(p)
    assert (largest_eigenvalue(p) - torch.linalg.eigvalsh(J)[:, -1]).abs().max() <= EIG
    assert (jacobian_frobenius(p) - torch.linalg.matrix_norm(J)).abs().max() <= EIG
    assert largest_eigenvalue(torch.tensor([0.4, 0.4, 0.2], dtype=F64)) == 0.4  # a collapsed bracket
    assert float(largest_eigenvalue(torch.tensor([1.0, 0.0], dtype=F64))) == 0.0  # one-hot: J = 0


def _mp_spectrum(scores: list[float]) -> tuple[float, float]:
    """λ_max and ‖J‖_F of softmax(scores) in 60-digit arithmetic (mpmath): the saturated-row oracle."""
    with mpmath.workdps(60):
        e = [mpmath.exp(mpmath.mpf(x) - max(scores)) for x in scores]
        p = [x / sum(e) for x in e]
        T = len(p)
        J = mpmath.matrix(T, T)
        for i in range(T):
            for j in range(T):
                J[i, j] = (p[i] if i == j else 0) - p[i] * p[j]
        lam = max(mpmath.eigsy(J, eigvals_only=True))
        return float(lam), float(mpmath.mnorm(J, "f"))


@pytest.mark.parametrize("tau", [1.0, 0.2, 0.05, 0.02])
def test_saturated_rows_keep_their_relative_accuracy(tau):
    """As τ → 0 the row saturates and λ_max falls to ~1e-30; dense eigvalsh only knows it to ±1e-16
    (absolute), the O(T) forms keep ~53 bits. Relative 1e-12 leaves 10⁴ × float64 rounding."""
    scores = [0.3, 1.9, -0.7, 1.1, 0.0]
    lam_mp, fro_mp = _mp_spectrum([x / tau for x in scores])
    p = torch.softmax(torch.tensor(scores, dtype=F64) / tau, -1)
    assert abs(float(largest_eigenvalue(p)) - lam_mp) <= 1e-12 * lam_mp
    assert abs(float(jacobian_frobenius(p)) - fro_mp) <= 1e-12 * fro_mp
    assert float(largest_eigenvalue(p)) <= float(gershgorin_bound(p))
