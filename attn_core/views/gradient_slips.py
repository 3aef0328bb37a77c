"""The Gradients page's slips: each backward slip run on the explored input and checked like the
right answer, with why a check cannot see it on this input when none fails (card 5)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_core.attention import check_shapes, expand_kv
from attn_core.backward import reduce_gqa
from attn_core.oracle import Check, max_abs_diff
from attn_core.slips.backward import SLIPS
from attn_core.views.gradient_checks import dscore_rows_check
from attn_core.views.gradients import GradientsView


@dataclass(frozen=True)
class GradientSlipOutcome:
    name: str
    note: str
    dscores: torch.Tensor  # (1, Hq, L, S) the slip's dS
    checks: list[Check]  # the same checks the right answer passes
    hidden: str  # "" when a check fails; otherwise why this input cannot expose the slip


def gradient_slip_outcome(ex: GradientsView, name: str) -> GradientSlipOutcome:
    """Run one backward slip on the explored input and check it like the right answer."""
    if name not in SLIPS:
        raise ValueError(f"unknown slip {name!r}; choose one of {', '.join(SLIPS)}")
    qkv, G = ex.qkv, ex.grad_output
    slip = SLIPS[name].fn(qkv.q, qkv.k, qkv.v, G, ex.allowed, scale=ex.backward.forward.scale)
    group = check_shapes(qkv.q, qkv.k, qkv.v)
    dq, dk, dv = ex.autograd
    dv_x = expand_kv(dv, group)  # the slip's dV is per query head (before the group sum)
    checks = [dscore_rows_check(slip.dscores, ex.tolerance)]
    checks.append(_match("dQ matches autograd", slip.dq, dq, ex.tolerance))
    # A KV head's gradient is the sum over its query group: compare group sums.
    checks.append(_match("dK matches autograd", reduce_gqa(slip.dk, group), dk, ex.tolerance))
    if slip.dv is None:
        checks.append(Check("dV matches autograd", False, slip.error))
    elif slip.dv.shape != dv_x.shape:
        checks.append(
            Check(
                "dV matches autograd", False, f"shape {tuple(slip.dv.shape)} instead of {tuple(dv_x.shape)}"
            )
        )
    else:
        checks.append(_match("dV matches autograd", reduce_gqa(slip.dv, group), dv, ex.tolerance))
    hidden = "" if not all(c.passed for c in checks) else _why_hidden(name, ex)
    return GradientSlipOutcome(name, SLIPS[name].note, slip.dscores, checks, hidden)


def _why_hidden(name: str, ex: GradientsView) -> str:
    """Every check passed: say which property of this input makes the slip harmless here."""
    P = ex.backward.forward.weights
    if name == "forget_scale" and ex.backward.forward.scale == 1.0:
        return "With scale = 1 forgetting the scale changes nothing. Pick another scale to see it fail."
    if name == "diagonal_jacobian" and float((P * (1 - P)).amax()) <= ex.tolerance:
        return (
            "Every row here is one-hot (one allowed key, or saturated): the off-diagonal −p_i p_j terms "
            "are 0, so the diagonal is the whole Jacobian. Use more keys or a higher temperature."
        )
    if float(ex.grad_output.abs().max()) == 0 or float(ex.backward.dscores.abs().max()) <= ex.tolerance:
        return "dS is 0 on this input (G = 0, or every row one-hot), so no backward slip can show."
    return "This input happens not to expose the slip; try another seed or G."


def _match(name: str, got: torch.Tensor, want: torch.Tensor, tol: float) -> Check:
    diff = max_abs_diff(got, want)
    return Check(name, diff <= tol, f"max |Δ| = {diff:.1e}")
