"""Causal attention with its mask written wrong (card 6), each beside the right one.

Every slip has the signature of the right computation, ``attention(q, k, v, causal_mask(L, S))``
with q (..., L, d_k), k (..., S, d_k), v (..., S, d_v) and True = may attend, and returns the
same kind of result (weights and output). Each is the right shape, so nothing complains.
"""

from __future__ import annotations

import math

import torch

from attn_core.attention import attention
from attn_core.masks import causal_mask
from attn_core.slips import Slip
from attn_core.slips.forward import SlipResult, finite_fill, triu_diagonal_mask, zero_after_softmax


def _zeroed(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> SlipResult:
    return zero_after_softmax(q, k, v, causal_mask(q.shape[-2], k.shape[-2]))


def _triu_inf(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> SlipResult:
    return finite_fill(q, k, v, triu_diagonal_mask(q.shape[-2], k.shape[-2]), fill=-math.inf)


def _triu_finite(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> SlipResult:
    return finite_fill(q, k, v, triu_diagonal_mask(q.shape[-2], k.shape[-2]), fill=-1e9)


def _top_left(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
    return attention(q, k, v, causal_mask(q.shape[-2], k.shape[-2], align="top_left"))


SLIPS: dict[str, Slip] = {
    "zero_after_softmax": Slip(
        _zeroed,
        "mask the weights after the softmax",
        "softmax over every key, then zero the future: the future's scores stay in the normalizer, so "
        "rows sum to less than 1 and changing a future token moves the past.",
    ),
    "triu_diagonal": Slip(
        _triu_inf,
        "triu(ones, 0) instead of triu(ones, 1)",
        "blocked = triu(ones, diagonal=0) blocks the diagonal too: query 0 may attend to nothing, and "
        "with −∞ its row is 0/0 = NaN.",
    ),
    "finite_fill": Slip(
        _triu_finite,
        "−1e9 hiding a fully masked row",
        "the same off-by-one mask filled with −1e9: the empty row turns into a quiet uniform 1/T over "
        "keys it should never read, and no NaN gives it away.",
    ),
    "top_left": Slip(
        _top_left,
        "top-left alignment with a cache",
        "with P cached keys, query i sits at position P + i; aligning the mask top-left (key j ≤ i) drops "
        "valid pairs, so cached decoding no longer matches the full pass.",
    ),
}
