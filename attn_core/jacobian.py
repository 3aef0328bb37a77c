"""The softmax Jacobian of one attention row, its spectrum and its collapse under saturation (card 4).

For p = softmax(s) over T keys, ∂p_i/∂s_j = p_i(δ_ij − p_j), i.e. J = diag(p) − p pᵀ. J is
symmetric and positive semi-definite (uᵀJu = Var_p(u)), J·1 = 0, rank J = T − 1 when every p_i > 0,
and every eigenvalue lies in [0, 2·max_i p_i(1 − p_i)] ⊆ [0, 1/2] (Gershgorin). As p → one-hot,
J → 0. Backprop never forms J: J·y = p ⊙ (y − pᵀy) costs O(T).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_core.stats import temperature_sweep


def softmax_jacobian(p: torch.Tensor) -> torch.Tensor:
    """J = diag(p) − p pᵀ over the last axis. p (..., T) -> J (..., T, T); entry (i, j) is ∂p_i/∂s_j."""
    return torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)


def softmax_jvp(p: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """J·y = p ⊙ (y − (pᵀy)·1) in O(T), never forming J. p, y (..., T) -> (..., T).

    J is symmetric, so this is also the vector–Jacobian product backprop uses (dS row = J dP row)."""
    return p * (y - (p * y).sum(-1, keepdim=True))


def diagonal_only_jacobian(p: torch.Tensor) -> torch.Tensor:
    """The slip: diag(p(1 − p)), softmax treated like an elementwise sigmoid. Its rows do not sum to 0."""
    return torch.diag_embed(p * (1 - p))


def gershgorin_bound(p: torch.Tensor) -> torch.Tensor:
    """2·max_i p_i(1 − p_i): row i's disc is centred at p_i(1 − p_i) with radius p_i(1 − p_i). (...,)"""
    return 2 * (p * (1 - p)).amax(-1)


@dataclass(frozen=True)
class JacobianSpectrum:
    """One row's Jacobian and the facts card 4 states about it."""

    p: torch.Tensor  # (T,) the weights
    jacobian: torch.Tensor  # (T, T) diag(p) − p pᵀ
    eigenvalues: torch.Tensor  # (T,) descending; the smallest is 0, along 1/√T·(1, …, 1)
    eigenvectors: torch.Tensor  # (T, T) column i belongs to eigenvalues[i]
    gershgorin: float  # 2·max p(1 − p), at most 1/2
    frobenius: float  # ‖J‖_F
    ones_residual: float  # ‖J·1‖_∞, 0 up to rounding: raising every score moves nothing
    symmetry_gap: float  # max |J − Jᵀ|
    rank: int  # numerical rank; T − 1 when every weight is positive


# Eigenvalues of a float64 matrix with entries ≤ 1/4 are accurate to ~T·2^-53 ≈ 1e-15 absolute;
# anything below 1e-12 is a numerical zero, anything real (p_min² scale) is far above it for rows
# whose smallest weight exceeds ~1e-6.
RANK_TOL = 1e-12


def jacobian_spectrum(p: torch.Tensor) -> JacobianSpectrum:
    """Card 4 on one row p (T,) of weights summing to 1 (float64 recommended)."""
    if p.ndim != 1:
        raise ValueError(f"jacobian_spectrum takes one row of weights (T,), got shape {tuple(p.shape)}")
    J = softmax_jacobian(p)  # (T, T)
    values, vectors = torch.linalg.eigh(J)  # ascending
    values, vectors = values.flip(0), vectors.flip(1)  # descending
    return JacobianSpectrum(
        p=p,
        jacobian=J,
        eigenvalues=values,
        eigenvectors=vectors,
        gershgorin=float(gershgorin_bound(p)),
        frobenius=float(torch.linalg.matrix_norm(J)),
        ones_residual=float((J @ torch.ones_like(p)).abs().max()),
        symmetry_gap=float((J - J.T).abs().max()),
        rank=int((values.abs() > RANK_TOL).sum()),
    )


@dataclass(frozen=True)
class SaturationSweep:
    """λ_max(J) and ‖J‖_F of softmax(s / τ) for one score row as the temperature τ varies."""

    temperatures: torch.Tensor  # (n,) τ on a log grid
    weights: torch.Tensor  # (n, T) softmax(s / τ)
    lambda_max: torch.Tensor  # (n,) largest eigenvalue: → 0 as τ → 0 (one-hot), → 1/T as τ → ∞
    frobenius: torch.Tensor  # (n,) ‖J‖_F: → 0 as τ → 0, → √(T − 1)/T as τ → ∞
    max_weight: torch.Tensor  # (n,) max_j p_j: → 1 as the row saturates


def saturation_sweep(
    scores: torch.Tensor, n: int = 61, low: float = 0.02, high: float = 50.0
) -> SaturationSweep:
    """Sweep τ over [low, high] on one score row s (T,); blocked keys (-inf) keep weight 0.

    Small τ sharpens the row towards one-hot (if its maximum is unique) and J collapses to 0;
    large τ flattens it to uniform. Equal scores are unaffected by τ."""
    sweep = temperature_sweep(scores, n=n, low=low, high=high)
    J = softmax_jacobian(sweep.weights)  # (n, T, T)
    return SaturationSweep(
        temperatures=sweep.temperatures,
        weights=sweep.weights,
        lambda_max=torch.linalg.eigvalsh(J)[:, -1],
        frobenius=torch.linalg.matrix_norm(J),
        max_weight=sweep.weights.amax(-1),
    )
