"""The common slips of the backward pass (card 5's "common slip", card 4's diagonal-only Jacobian).

Each takes the arguments of `attn_core.backward.attention_backward` and returns what the slipped
derivation computes in place of dQ, dK, dV and dS (GQA-expanded heads), so that a page can check it
like the right answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_core.attention import attention, check_shapes, expand_kv
from attn_core.backward import check_grad_output
from attn_core.slips import Slip


@dataclass(frozen=True)
class SlipGradients:
    """What a slipped backward pass returns in place of dQ, dK, dV, dS (GQA-expanded heads)."""

    dq: torch.Tensor  # (..., Hq, L, d_k)
    dk: torch.Tensor  # (..., Hq, S, d_k)
    dv: torch.Tensor | None  # (..., Hq, S, d_v) normally; None when the slip cannot even multiply
    dscores: torch.Tensor  # (..., Hq, L, S)
    error: str  # "" or why the slipped formula fails outright (a shape mismatch)


def _slip(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    grad_output: torch.Tensor,
    allowed: torch.Tensor | None,
    scale: float | None,
    *,
    keep_rowsum: bool = True,
    diagonal_only: bool = False,
    use_scale: bool = True,
    transpose_dv: bool = False,
) -> SlipGradients:
    group = check_shapes(q, k, v)
    fwd = attention(q, k, v, allowed, scale=scale)
    dO = check_grad_output(grad_output, fwd.output)
    K, V = expand_kv(k, group), expand_kv(v, group)
    P = fwd.weights
    dP = dO @ V.transpose(-2, -1)  # (..., Hq, L, S)
    if diagonal_only:
        dS = P * (1 - P) * dP  # J ≈ diag(p(1 − p)), as if softmax were an elementwise sigmoid
    elif keep_rowsum:
        dS = P * (dP - (P * dP).sum(-1, keepdim=True))
    else:
        dS = P * dP  # the −rowsum(P ⊙ dP) term dropped
    factor = fwd.scale if use_scale else 1.0
    dV, error = None, ""
    if transpose_dv:
        try:
            dV = dO @ P.transpose(-2, -1)  # (L, d_v)(S, L): multiplies only when d_v = S, gives (L, L)
        except RuntimeError:
            error = (
                f"dO Pᵀ multiplies (L, d_v) = {tuple(dO.shape[-2:])} by (S, L) = "
                f"{tuple(P.shape[-2:][::-1])}: the inner sizes differ, so it does not even run"
            )
    else:
        dV = P.transpose(-2, -1) @ dO
    return SlipGradients(
        dq=(dS @ K) * factor,
        dk=(dS.transpose(-2, -1) @ q) * factor,
        dv=dV,
        dscores=dS,
        error=error,
    )


def slip_drop_rowsum(q, k, v, grad_output, allowed=None, *, scale=None) -> SlipGradients:
    """dS = P ⊙ dP: the −rowsum(P ⊙ dP) term dropped, as if softmax were elementwise.
    The rows of dS stop summing to 0, so a uniform shift of the scores seems to change the loss."""
    return _slip(q, k, v, grad_output, allowed, scale, keep_rowsum=False)


def slip_forget_scale(q, k, v, grad_output, allowed=None, *, scale=None) -> SlipGradients:
    """dQ = dS K, dK = dSᵀ Q without the scale: both gradients come out 1/scale (√d_k) times too big.
    Invisible when the scale is 1, which is why tests with scale 1 miss it."""
    return _slip(q, k, v, grad_output, allowed, scale, use_scale=False)


def slip_transpose_dv(q, k, v, grad_output, allowed=None, *, scale=None) -> SlipGradients:
    """dV = dO Pᵀ instead of Pᵀ dO: a shape error unless d_v = S, and then an (L, L) matrix."""
    return _slip(q, k, v, grad_output, allowed, scale, transpose_dv=True)


def slip_diagonal_jacobian(q, k, v, grad_output, allowed=None, *, scale=None) -> SlipGradients:
    """Keep only the Jacobian's diagonal p(1 − p) (card 4's slip): dS = P ⊙ (1 − P) ⊙ dP."""
    return _slip(q, k, v, grad_output, allowed, scale, diagonal_only=True)


# The backward slips the Gradients page shows beside the right answer, by id.
SLIPS: dict[str, Slip] = {
    "drop_rowsum": Slip(
        slip_drop_rowsum,
        "drop the −rowsum term",
        "dS = P ⊙ dP, as if softmax acted entry by entry. Raising every score of a row by the same amount "
        "changes nothing, so the true dS rows sum to 0; these do not.",
    ),
    "forget_scale": Slip(
        slip_forget_scale,
        "forget the scale in dQ and dK",
        "dQ = dS K and dK = dSᵀ Q without the scale: both come out 1/scale (√d_k for the default scale) "
        "times too big. With scale = 1 the slip is invisible.",
    ),
    "transpose_dv": Slip(
        slip_transpose_dv,
        "dV = dO Pᵀ",
        "dO Pᵀ multiplies (L × d_v) by (S × L): it runs only when d_v = S, and then gives an L × L matrix "
        "where dV is S × d_v. The right order is Pᵀ dO.",
    ),
    "diagonal_jacobian": Slip(
        slip_diagonal_jacobian,
        "keep only the Jacobian's diagonal",
        "J ≈ diag(p(1 − p)), softmax treated like a sigmoid. The dropped off-diagonal −p_i p_j terms are "
        "what make each row of J sum to 0.",
    ),
}
