"""Properties every correct attention result has; pages show them as ✓/✗ badges beside slips."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_core.oracle import max_abs_diff

# float64 row sums of up to 512 terms carry ~512 · 2^-53 ≈ 6e-14 of rounding; 1e-12 leaves room
# and still catches any real normalization bug (those are O(0.1)).
ROW_SUM_TOL = 1e-12
# SDPA and ours differ only in summation order: ~ S · 2^-53 · max|v|, far under 1e-12 for these sizes.
SDPA_TOL = 1e-12


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
    """weights (..., L, S), output (..., L, d_v), v (..., S, d_v) already GQA-expanded."""
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
