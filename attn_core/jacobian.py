"""The softmax Jacobian of one attention row, its spectrum and its collapse under saturation (card 4).

For p = softmax(s) over T keys, ∂p_i/∂s_j = p_i(δ_ij − p_j), i.e. J = diag(p) − p pᵀ. J is
symmetric and positive semi-definite (uᵀJu = Var_p(u)), J·1 = 0, rank J = T − 1 when every p_i > 0,
and every eigenvalue lies in [0, 2·max_i p_i(1 − p_i)] ⊆ [0, 1/2] (Gershgorin). As p → one-hot,
J → 0. Backprop never forms J: J·y = p ⊙ (y − pᵀy) costs O(T).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attn_core.oracle import RANK_TOL
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


def _split_top(p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(p_m, the other weights with p_m zeroed, 1 − p_m computed as Σ of the others).

    Summing the others keeps 1 − p_m accurate when p_m ≈ 1, where 1 − p_m itself would cancel."""
    m = p.argmax(-1, keepdim=True)  # (..., 1)
    p_m = p.gather(-1, m).squeeze(-1)  # (...,)
    others = p.scatter(-1, m, 0.0)  # (..., T)
    return p_m, others, others.sum(-1)


def gershgorin_bound(p: torch.Tensor) -> torch.Tensor:
    """2·max_i p_i(1 − p_i): row i's disc is centred at p_i(1 − p_i) with radius p_i(1 − p_i). (...,)

    For the top weight, 1 − p_m is taken as the sum of the other weights (p sums to 1), which stays
    accurate when the row saturates and p_m rounds to 1."""
    p_m, others, rest = _split_top(p)
    return 2 * torch.maximum(p_m * rest, (others * (1 - others)).amax(-1))


@dataclass(frozen=True)
class JacobianSpectrum:
    """One row's Jacobian and the facts card 4 states about it."""

    p: torch.Tensor  # (T,) the weights
    jacobian: torch.Tensor  # (T, T) diag(p) − p pᵀ
    eigenvalues: torch.Tensor  # (T,) descending; the smallest is 0, along 1/√T·(1, …, 1)
    eigenvectors: torch.Tensor  # (T, T) column i belongs to eigenvalues[i]
    ones_alignment: torch.Tensor  # (T,) |cos(eigenvector i, 1)|: 1 for the zero eigenvalue's
    gershgorin: float  # 2·max p(1 − p), at most 1/2
    frobenius: float  # ‖J‖_F (computed in O(T), accurate for saturated rows too)
    ones_residual: float  # ‖J·1‖_∞, 0 up to rounding: raising every score moves nothing
    symmetry_gap: float  # max |J − Jᵀ|
    rank: int  # numerical rank; T − 1 when every weight is positive


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
        ones_alignment=(vectors.T @ torch.ones_like(p)).abs() / p.numel() ** 0.5,
        gershgorin=float(gershgorin_bound(p)),
        frobenius=float(jacobian_frobenius(p)),
        ones_residual=float((J @ torch.ones_like(p)).abs().max()),
        symmetry_gap=float((J - J.T).abs().max()),
        rank=int((values.abs() > RANK_TOL).sum()),
    )


def jacobian_frobenius(p: torch.Tensor) -> torch.Tensor:
    """‖J‖_F in O(T) for weights p (..., T) summing to 1 -> (...).

    ‖J‖_F² = Σ_i p_i²(1 − p_i)² + Σ_{i≠j} p_i² p_j², written around the top weight p_m so that a
    saturated row (p_m → 1, ‖J‖_F → 0) loses no digits: with the others o and R_k = Σ o^k,
    Σ_{i≠j} p_i² p_j² = 2 p_m² R_2 + (R_2² − R_4)."""
    p_m, o, rest = _split_top(p)
    R2, R4 = (o**2).sum(-1), (o**4).sum(-1)
    diag = (o**2 * (1 - o) ** 2).sum(-1) + p_m**2 * rest**2
    return (diag + 2 * p_m**2 * R2 + (R2 * R2 - R4).clamp(min=0)).sqrt()


def largest_eigenvalue(p: torch.Tensor, iterations: int = 64) -> torch.Tensor:
    """λ_max(diag(p) − p pᵀ) in O(T · iterations), never forming J. p (..., T) summing to 1 -> (...).

    J is diag(p) minus a rank-one term, so its eigenvalues interlace the sorted weights: λ_max lies in
    [p₍₂₎, p₍₁₎], and (Rayleigh quotient on e_m; Gershgorin) in [p_m(1 − p_m), 2 p_m(1 − p_m)]. There
    the secular equation det(J − λI) = 0 reads, using Σ p = 1, g(λ) = Σ_i p_i / (p_i − λ) = 0, and g
    rises from −∞ to +∞. The bracket's ends are within a factor 2, so each bisection step gains one
    bit of relative accuracy: 64 steps reach float64's 53 bits even for a saturated row whose λ_max
    is 1e-30. Equal top weights (a collapsed bracket) give λ_max = p₍₁₎ exactly."""
    if p.shape[-1] == 1:
        return torch.zeros(p.shape[:-1], dtype=p.dtype)  # one key: p = 1, J = 0
    p_m, o, rest = _split_top(p)
    diag_m = p_m * rest  # p_m (1 − p_m), accurate
    lo = torch.maximum(o.amax(-1), diag_m)
    hi = torch.minimum(p_m, 2 * diag_m).clamp(min=lo)
    # The loop is ~10 tiny array ops per step; numpy runs them ~4× faster than torch dispatch.
    P, lo_, hi_ = p.detach().cpu().numpy(), lo.detach().cpu().numpy(), hi.detach().cpu().numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(iterations):
            mid = (lo_ + hi_) / 2  # strictly inside (p₍₂₎, p₍₁₎) until the bracket is one ulp wide
            g = (P / (P - mid[..., None])).sum(-1)  # ±inf/NaN only once mid hits an end: harmless
            up = g < 0  # the root is above mid
            lo_, hi_ = np.where(up, mid, lo_), np.where(up, hi_, mid)
    return torch.as_tensor(np.asarray((lo_ + hi_) / 2), dtype=p.dtype, device=p.device)


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
    large τ flattens it to uniform. Equal scores are unaffected by τ. O(n · T) time and memory:
    J is never formed, so a 512-key row costs the same few milliseconds as a 3-key one."""
    sweep = temperature_sweep(scores, n=n, low=low, high=high)
    return SaturationSweep(
        temperatures=sweep.temperatures,
        weights=sweep.weights,
        lambda_max=largest_eigenvalue(sweep.weights),
        frobenius=jacobian_frobenius(sweep.weights),
        max_weight=sweep.weights.amax(-1),
    )
