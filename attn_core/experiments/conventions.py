"""Three ways PyTorch spells one mask, converters between them, and a check through each API.

- ``"allowed"``: boolean, **True = may attend** — `F.scaled_dot_product_attention` and attn_core.
- ``"blocked"``: boolean, **True = may NOT attend** — `nn.MultiheadAttention`'s ``attn_mask`` and
  ``key_padding_mask`` (True marks a padding key).
- ``"additive"``: float, added to the scores: 0 where allowed, -inf where blocked — accepted by both.

The same pattern passed in the wrong convention is shape-compatible and silently wrong: an
"allowed" mask given to nn.MultiheadAttention blocks exactly the keys it meant to keep (lesson,
"Masking, order and cached decoding"; card 6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F

from attn_core.attention import attention
from attn_core.oracle import AGREE_TOL, max_abs_diff

Convention = Literal["allowed", "blocked", "additive"]
CONVENTIONS: tuple[Convention, ...] = ("allowed", "blocked", "additive")


def to_allowed(mask: torch.Tensor, convention: Convention) -> torch.Tensor:
    """Any convention -> bool, True = may attend. For ``additive`` only -inf counts as blocked: a
    finite sentinel such as -1e9 is a large bias, not a guarantee (see `attn_core.leakage`)."""
    if convention == "allowed":
        return mask.to(torch.bool)
    if convention == "blocked":
        return ~mask.to(torch.bool)
    if convention == "additive":
        if mask.dtype == torch.bool:
            raise ValueError("an additive mask is a float tensor (0 / -inf), not a boolean one")
        return ~torch.isneginf(mask)
    raise ValueError(f"unknown convention {convention!r}; choose one of {CONVENTIONS}")


def from_allowed(
    allowed: torch.Tensor,
    convention: Convention,
    *,
    dtype: torch.dtype = torch.float64,
    fill: float = -math.inf,
) -> torch.Tensor:
    """bool True = may attend -> the given convention. ``additive`` is 0 where allowed and ``fill``
    (default -inf) where blocked, in ``dtype``."""
    allowed = allowed.to(torch.bool)
    if convention == "allowed":
        return allowed
    if convention == "blocked":
        return ~allowed
    if convention == "additive":
        return torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, fill)
    raise ValueError(f"unknown convention {convention!r}; choose one of {CONVENTIONS}")


def convert(mask: torch.Tensor, src: Convention, dst: Convention, **kwargs) -> torch.Tensor:
    """Re-express a mask from convention ``src`` in convention ``dst`` (via True = may attend)."""
    return from_allowed(to_allowed(mask, src), dst, **kwargs)


def identity_mha(d: int, dtype: torch.dtype = torch.float64) -> torch.nn.MultiheadAttention:
    """A one-head nn.MultiheadAttention whose projections are identities and biases zero, so
    mha(q, k, v) = softmax(q kᵀ / √d) v: the same function as `attention`, through another API."""
    mha = torch.nn.MultiheadAttention(d, num_heads=1, batch_first=True, dtype=dtype)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(d, dtype=dtype).repeat(3, 1))  # (3d, d): W_Q = W_K = W_V = I
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(torch.eye(d, dtype=dtype))
        mha.out_proj.bias.zero_()
    return mha.eval()


@dataclass(frozen=True)
class ConventionRow:
    """One API fed the mask in one convention."""

    api: str  # e.g. "F.scaled_dot_product_attention"
    argument: str  # which argument got the mask
    meaning_of_true: str  # what True (or a value) means for this argument
    mask: torch.Tensor  # exactly what was passed, (L, S) or (B, S)
    output: torch.Tensor  # (L, d_v)
    max_abs_diff: float  # against attn_core.attention with True = may attend
    agrees: bool
    is_slip: bool  # True for the deliberately wrong row


@dataclass(frozen=True)
class ConventionsReport:
    allowed: torch.Tensor  # (L, S) the combined mask, True = may attend
    reference: torch.Tensor  # (L, d_v) attn_core.attention
    rows: tuple[ConventionRow, ...]

    @property
    def all_correct_agree(self) -> bool:
        return all(r.agrees for r in self.rows if not r.is_slip)


SDPA, MHA = "F.scaled_dot_product_attention", "nn.MultiheadAttention"
ADDED = "added to scores: 0 / −∞"  # a float mask, in either API
SLIP = "slip: True = may attend, read as blocked"


def compare_conventions(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_allowed: torch.Tensor,
    key_valid: torch.Tensor | None = None,
) -> ConventionsReport:
    """Run one mask through SDPA and nn.MultiheadAttention in each convention and compare.

    q (L, d), k (S, d), v (S, d): one head, d_k = d_v = d (nn.MultiheadAttention's embed_dim).
    ``attn_allowed`` (L, S) and ``key_valid`` (S,) are True = may attend / real token; the pattern
    is their AND. Float64 throughout so agreement means ≤ `AGREE_TOL`. Raises ValueError on shape
    mismatch or a fully masked row (its output is 0/0 and the APIs disagree by design — see
    `attn_core.leakage.fully_masked_table`)."""
    if q.ndim != 2 or k.ndim != 2 or v.ndim != 2:
        raise ValueError("compare_conventions takes one head: q (L, d), k (S, d), v (S, d)")
    L, d = q.shape
    S = k.shape[0]
    if k.shape[1] != d or v.shape != (S, d):
        raise ValueError(
            f"nn.MultiheadAttention needs d_k = d_v: got q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    attn_allowed = attn_allowed.to(torch.bool)
    if attn_allowed.shape != (L, S):
        raise ValueError(f"the attention mask must be (L, S) = ({L}, {S}), got {tuple(attn_allowed.shape)}")
    valid = torch.ones(S, dtype=torch.bool) if key_valid is None else key_valid.to(torch.bool).reshape(S)
    allowed = attn_allowed & valid  # (L, S)
    reference = attention(q, k, v, allowed).output  # raises on a fully masked row
    q3, k3, v3 = q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)  # (1, L, d): batch of one
    mha = identity_mha(d, q.dtype)

    def sdpa(mask: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q3, k3, v3, attn_mask=mask, dropout_p=0.0)[0]

    def mha_out(attn_mask: torch.Tensor | None, key_padding: torch.Tensor | None) -> torch.Tensor:
        with torch.no_grad():
            out, _ = mha(q3, k3, v3, attn_mask=attn_mask, key_padding_mask=key_padding, need_weights=False)
        return out[0]

    additive = from_allowed(allowed, "additive", dtype=q.dtype)
    blocked_attn = from_allowed(attn_allowed, "blocked")
    padding = from_allowed(valid, "blocked").unsqueeze(0)  # (1, S): True = padding key
    padded = mha_out(blocked_attn, padding)
    attempts = [  # API, its argument, what the argument means, the mask passed, the output, a slip?
        (SDPA, "attn_mask (bool)", "True = may attend", allowed, sdpa(allowed), False),
        (SDPA, "attn_mask (float)", ADDED, additive, sdpa(additive), False),
        (MHA, "attn_mask (bool) + key_padding_mask", "True = blocked / padding", blocked_attn, padded, False),
        (MHA, "attn_mask (float)", ADDED, additive, mha_out(additive, None), False),
        (MHA, "attn_mask (bool), SDPA's mask passed unchanged", SLIP, allowed, mha_out(allowed, None), True),
    ]
    rows = []
    for api, argument, meaning, mask, out, slip in attempts:
        diff = max_abs_diff(out, reference)
        rows.append(ConventionRow(api, argument, meaning, mask, out, diff, diff <= AGREE_TOL, slip))
    return ConventionsReport(allowed=allowed, reference=reference, rows=tuple(rows))
