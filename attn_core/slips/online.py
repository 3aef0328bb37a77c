"""The online-softmax recurrence written wrong (card 15), each beside the right one.

Every slip is a block update with the signature of ``attn_core.online.online_update`` run by the
same walker, so its trace lines up step by step with the correct one. Each is exact or harmless on
some rows — that is why it survives a quick test — and fails the oracle on others.
"""

from __future__ import annotations

import torch

from attn_core.online import OnlineTrace, rescale_factor, safe_base, walk_blocks
from attn_core.slips import Slip


def _l_not_u(m, l, u, s, V_block):
    m_new = torch.maximum(m, s.max())
    alpha = rescale_factor(m, m_new)
    p = (s - safe_base(m_new)).exp()
    return m_new, alpha, alpha * l + p.sum(), u + p @ V_block  # the slip: u keeps its old base


def _wrong_sign(m, l, u, s, V_block):
    m_new = torch.maximum(m, s.max())
    base = safe_base(m_new)
    alpha = torch.zeros_like(m) if not torch.isfinite(m) else (base - m).exp()  # the slip: e^{m_new - m_old}
    p = (s - base).exp()
    return m_new, alpha, alpha * l + p.sum(), alpha * u + p @ V_block


def _no_max(m, l, u, s, V_block):
    p = s.exp()  # the slip: base 0 always, so e^{s_j} can overflow
    return torch.zeros_like(m), torch.ones_like(m), l + p.sum(), u + p @ V_block


def slip_rescale_l_not_u(scores: torch.Tensor, values: torch.Tensor, block_size: int = 1) -> OnlineTrace:
    """Slip: when the max moves, ℓ is rescaled but u keeps its old base, so the past values are
    over-weighted by e^{m_new - m_old}. Invisible when the earlier values are zero.
    scores (S,), -inf where masked; values (S, d_v)."""
    return walk_blocks(scores, values, block_size, _l_not_u, slip="l_not_u")


def slip_wrong_sign_rescale(scores: torch.Tensor, values: torch.Tensor, block_size: int = 1) -> OnlineTrace:
    """Slip: rescales the past by e^{m_new - m_old} ≥ 1 instead of e^{m_old - m_new} ≤ 1.
    scores (S,), values (S, d_v)."""
    return walk_blocks(scores, values, block_size, _wrong_sign, slip="wrong_sign")


def slip_no_max_subtraction(scores: torch.Tensor, values: torch.Tensor, block_size: int = 1) -> OnlineTrace:
    """Slip: accumulates e^{s_j} with no running max. Exact on paper, but e^{s} overflows fp16
    once s > 11.09 (65,504 is fp16's largest number, card 2): ℓ and u become inf, o = NaN.
    scores (S,), values (S, d_v)."""
    return walk_blocks(scores, values, block_size, _no_max, slip="no_max")


# The slips the Online-softmax page walks beside the right recurrence, by id. Each fn takes
# (scores (S,), values (S, d_v), block_size) like ``attn_core.online.online_softmax_trace``.
SLIPS: dict[str, Slip] = {
    "l_not_u": Slip(
        slip_rescale_l_not_u,
        "rescales ℓ but not u",
        "When the max rises, ℓ moves to the new base but u keeps the old one, so every value seen before "
        "is over-weighted by e^{m_new − m_old}. Bank's row hides it: the only value seen before river "
        "raises the max is v_the = (0, 0).",
    ),
    "wrong_sign": Slip(
        slip_wrong_sign_rescale,
        "uses e^{m_new - m_old} (wrong sign)",
        "The past is multiplied by e^{m_new − m_old} ≥ 1 instead of e^{m_old − m_new} ≤ 1: the old keys "
        "gain weight exactly when a larger score should have shrunk them.",
    ),
    "no_max": Slip(
        slip_no_max_subtraction,
        "no max subtraction: e^{s_j} directly",
        "e^{s_j} without subtracting the running max. Exact on paper, but fp16 stops at 65,504 = e^{11.09}: "
        "a score above 11.09 makes ℓ and u infinite and the output NaN.",
    ),
}
