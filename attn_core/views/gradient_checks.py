"""The Gradients page's checks: the tolerance the backward pass is held to, and the badges its
numbers must earn (manual vs autograd and finite differences, the rows of dS, the softmax
Jacobian's structure). Shared by the page's view and its slips."""

from __future__ import annotations

import torch

from attn_core.backward import BackwardResult
from attn_core.jacobian import JacobianSpectrum
from attn_core.oracle import J_EIG, J_EXACT, RANK_RESOLVABLE, Check, max_abs_diff
from attn_core.views.inputs import QKV


def gradient_tolerance(qkv: QKV, grad_output: torch.Tensor, scale: float) -> float:
    """Allowed |manual − autograd| in float64.

    Every gradient entry is a sum of at most ~S products whose absolute sum is at most
    A = S · max|G| · max(1, |V|) · max(1, |Q|, |K|) · max(1, scale); two summation orders differ by
    ≤ (S + d) · 2⁻⁵³ · A ≤ 1e-13 · A at the input caps (S + d ≤ 768), so 1e-12 · A has 10× room."""
    big = max(1.0, float(qkv.q.abs().max()), float(qkv.k.abs().max()))
    A = qkv.S * float(grad_output.abs().max()) * max(1.0, float(qkv.v.abs().max())) * big * max(1.0, scale)
    return 1e-12 * max(A, 1.0)


def jacobian_checks(spec: JacobianSpectrum | None, lam: float, bound: float) -> list[Check]:
    """The softmax Jacobian's badges: λ_max ≤ Gershgorin ≤ 1/2 always; with a spectrum, J = Jᵀ,
    J·1 = 0, positive semi-definite and (where resolvable) rank T − 1."""
    checks = [
        Check(
            "λ_max ≤ Gershgorin ≤ 1/2",
            lam <= bound + J_EXACT and bound <= 0.5 + J_EXACT,
            f"{lam:.4g} ≤ {bound:.4g} ≤ 0.5",
        )
    ]
    if spec is None:
        return checks
    T, smallest = spec.p.numel(), float(spec.eigenvalues.min())
    structure = [
        Check("J = Jᵀ", spec.symmetry_gap == 0, f"max |J − Jᵀ| = {spec.symmetry_gap:.1e}"),
        Check("J·1 = 0", spec.ones_residual <= J_EXACT, f"max |(J·1)ᵢ| = {spec.ones_residual:.1e}"),
        Check("positive semi-definite", smallest >= -J_EIG, f"smallest eigenvalue = {smallest:.1e}"),
    ]
    # The second-smallest eigenvalue is at least the smallest weight (interlacing), so rank T − 1 is
    # resolvable against eigenvalue rounding (~1e-16) only while every weight is above ~1e-10.
    if float(spec.p.min()) > RANK_RESOLVABLE:
        structure.append(Check("rank T − 1", spec.rank == T - 1, f"rank {spec.rank}, T = {T}"))
    return structure + checks


def max_diffs(back: BackwardResult, other) -> tuple[float, float, float]:
    """max |Δ| of dQ, dK, dV against another estimate of the three (autograd, finite differences)."""
    return tuple(max_abs_diff(a, b) for a, b in zip((back.dq, back.dk, back.dv), other, strict=True))


def dscore_rows_check(dS: torch.Tensor, tol: float) -> Check:
    """Every row of dS sums to 0 (the softmax Jacobian annihilates 1): right answers and slips alike."""
    worst = float(dS.sum(-1).abs().max())
    return Check("rows of dS sum to 0 (J·1 = 0)", worst <= tol, f"max |Σⱼ dSᵢⱼ| = {worst:.1e}")
