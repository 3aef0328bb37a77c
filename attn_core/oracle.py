"""The independent references every badge compares against, and every tolerance with its argument.

A tolerance lives here once; a module that judges a result imports it. Each comment says what
rounding the tolerance absorbs and why a real bug lands far outside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

# ------------------------------------------------------------------------------- tolerances

# float64 row sums of up to 512 terms carry ~512 · 2^-53 ≈ 6e-14 of rounding; 1e-12 leaves room
# and still catches any real normalization bug (those are O(0.1)).
ROW_SUM_TOL = 1e-12
# SDPA and ours differ only in summation order: ~ S · 2^-53 · max|v|, far under 1e-12 for these sizes.
SDPA_TOL = 1e-12
# Mask conventions: our float64 reference and torch's kernels differ only in summation order,
# ~S · 2^-53 · max|v| < 1e-14 for S ≤ 64 and |v| ≈ 3; any wrong mask is off by O(0.1).
AGREE_TOL = 1e-12
# Renormalizing after zeroing cancels the full normalizer algebraically, not bitwise: in float64
# the kept weights differ by a few ulps (~1e-16) when the future changes. 1e-12 separates that
# rounding from a real leak (a future token's influence is O(1e-3) or more for unit-scale inputs).
ROUNDING_TOL = 1e-12
# Two float64 computations of the same attention rows (ours vs SDPA, cached vs full pass) differ by
# summation order only: ~T · 2^-53 · max|v| ≲ 1e-14 for T ≤ 64; a wrong mask is off by O(0.1).
MATCH_TOL = 1e-12
# Card 4's identities hold to a few ulps of float64 for entries ≤ 1/4 (see tests/core/test_jacobian.py).
J_EXACT = 1e-15
J_EIG = 1e-14
# A Jacobian eigenvalue below this cannot be told from zero after float64 eigensolving of a row
# with tiny weights: rank is only claimed when the smallest nonzero eigenvalue clears it.
RANK_RESOLVABLE = 1e-10
# Eigenvalues of a float64 matrix with entries ≤ 1/4 are accurate to ~T·2^-53 ≈ 1e-15 absolute;
# anything below 1e-12 is a numerical zero, anything real (p_min² scale) is far above it for rows
# whose smallest weight exceeds ~1e-6.
RANK_TOL = 1e-12
# A one-row online-softmax walk against float64 SDPA, by the dtype of the walk: a few unit
# roundoffs (2^-53, 2^-24, 2^-11, 2^-8) on outputs of size ≲ 5, including rounding the scores.
TRACE_TOL: dict[str, float] = {"float64": 1e-12, "float32": 1e-5, "float16": 1e-2, "bfloat16": 1e-1}

# -- the theory pages (cards 3, 8, 10, 16–18) --

# A simulated mean, variance or share is judged against its closed form within 4 standard errors
# of the simulation (the SE computed from the sample itself). A correct simulation fails about
# 1 time in 16,000 (two-sided normal tail at 4σ = 6.3e-5); the slips it exists to catch (Var = d_k
# instead of 1, the tied-Q/K mean √d_k) are off by tens to hundreds of standard errors.
SE_MULTIPLE = 4.0

# Simpson's rule on 4,001 points of a smooth integrand over [0, √d_k + 12]: the error is
# O(h⁴ max|f⁗|) ≲ 1e-12 here (4,001 and 20,001 points agree to 1e-15 at d_k = 1, 128, 512), and the
# χ tail beyond √d_k + 12 holds less than e^{-72}. 1e-9 leaves room and is far below the 3
# significant digits the card quotes.
QUADRATURE_TOL = 1e-9

# An algebraic identity evaluated twice in float64 (scores after a change of basis, Nadaraya–Watson
# vs attention with the key bias, concat·W_O vs the heads sum): the two sides differ by summation
# order only, ≲ n · 2^-53 · (largest term) ≈ 1e-13 for the n ≤ 400 terms of size ≤ 10 used here.
# Any real difference (a missing bias, a non-inverse R) is O(0.1) or more.
IDENTITY_TOL = 1e-12

# A numerical rank counts singular values above max(shape) · σ_max · 2^-53 (NumPy's rule): below
# that a singular value is rounding of a float64 SVD, not structure.
RANK_EPS = 2.0**-53

# The relative residual r = ‖X − 1x̄ᵀ‖_F/‖X‖_F of a collapsed stack bottoms out at float64 rounding
# of the mean part, ~2^-53 · √(T·d) ≈ 1e-14 for T·d ≤ 2^15: below 1e-12 a layer-to-layer ratio
# r_{l+1}/r_l³ measures rounding, not the cubic law, and is not reported.
COLLAPSE_FLOOR = 1e-12

# The cubic law of one pure attention layer holds up to O(r²) corrections: over inputs with
# ‖R‖ ≤ 0.1 they move the fitted log-log slope by ≲ 0.01 per decade; 0.05 leaves room for that
# and rejects a quadratic (2) or linear (1) rate by a wide margin.
SLOPE_TOL = 0.05


# ------------------------------------------------------------------------------- references


def sdpa_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    scale: float | None = None,
) -> torch.Tensor:
    """torch.nn.functional.scaled_dot_product_attention with an explicit boolean mask
    (True = may attend), GQA enabled, dropout off. Shapes as `attn_core.attention`."""
    gqa = q.ndim >= 3 and k.ndim >= 3 and q.shape[-3] != k.shape[-3]
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=allowed, dropout_p=0.0, scale=scale, enable_gqa=gqa
    )


def sdpa_autograd(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    grad_output: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The oracle: ∂⟨SDPA(q, k, v), G⟩/∂(q, k, v) by torch autograd through torch's own SDPA
    (explicit boolean mask, True = may attend; GQA enabled; dropout off). Shapes as
    `attn_core.attention`; ``grad_output`` (G) has the output's shape."""
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    O = sdpa_reference(q, k, v, allowed, scale=scale)
    dq, dk, dv = torch.autograd.grad((O * grad_output).sum(), (q, k, v))
    return dq, dk, dv


def attention_map_tolerance(q: torch.Tensor, k: torch.Tensor, scale: float, u: float) -> float:
    """How far a model's own attention weights, computed in a dtype of unit roundoff ``u``, may
    sit from a float64 recomputation on the same q (..., L, d) and k (..., S, d).

    A dot product of length d is off by at most d·u·Σ|q_c k_c| ≤ d·u·‖q‖‖k‖ (Higham's γ_d); a
    score error δ moves a weight by at most 2·max|δ| (p_j(δ_j − Σ p δ)); exp and the normalization
    add a few u. So 2·d·u·scale·max‖q‖·max‖k‖ + 8u; a wrong mask or scale is off by O(0.1)."""
    d = q.shape[-1]
    qk = float(q.double().norm(dim=-1).max() * k.double().norm(dim=-1).max())
    return 2 * d * u * scale * qk + 8 * u


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| over all entries; inf when either side has a NaN where the other does not."""
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
    if torch.isnan(a).ne(torch.isnan(b)).any():
        return float("inf")
    d = (a - b).abs()
    d = d[~torch.isnan(d)]
    return float(d.max()) if d.numel() else 0.0


def compared_max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| for a badge, or NaN when either side has a NaN or inf entry: two NaNs that
    agree prove nothing, so a badge shows "not finite" instead of a green 0."""
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return float("nan")
    return max_abs_diff(a, b)


# ----------------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class Check:
    """One property a correct result has, and whether this result has it."""

    name: str  # e.g. "rows sum to 1"
    passed: bool
    detail: str  # the measured number, e.g. "max |Σp − 1| = 0.42"


def weight_checks(
    weights: torch.Tensor,
    output: torch.Tensor,
    v: torch.Tensor,
    allowed: torch.Tensor | None,
    reference_output: torch.Tensor,
) -> list[Check]:
    """The properties every correct attention result has (pages show them as ✓/✗ badges beside
    the slips). weights (..., L, S), output (..., L, d_v), v (..., S, d_v) already GQA-expanded."""
    checks = []
    row_err = float((weights.sum(-1) - 1).abs().max())
    checks.append(Check("rows sum to 1", row_err <= ROW_SUM_TOL, f"max |Σⱼ pᵢⱼ − 1| = {row_err:.2g}"))
    if allowed is not None:
        leak = float(weights.masked_fill(torch.broadcast_to(allowed, weights.shape), 0).abs().max())
        checks.append(Check("blocked keys get weight 0", leak == 0, f"largest blocked weight = {leak:.3g}"))
    lo, hi = v.amin(-2, keepdim=True), v.amax(-2, keepdim=True)  # (..., 1, d_v)
    outside = float(torch.clamp(torch.maximum(lo - output, output - hi), min=0).max())
    checks.append(
        Check("outputs inside the values' range", outside <= ROW_SUM_TOL, f"furthest outside = {outside:.3g}")
    )
    diff = max_abs_diff(output, reference_output)
    checks.append(Check("output matches torch SDPA", diff <= SDPA_TOL, f"max |Δ| = {diff:.2g}"))
    return checks
