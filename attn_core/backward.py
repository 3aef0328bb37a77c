"""The backward pass of scaled dot-product attention, written as the five matrix lines (card 5).

With S = Q Kᵀ · scale + M, P = softmax_row(S), O = P V and dO = ∂L/∂O:

    dV = Pᵀ dO                      (S, L)(L, d_v)
    dP = dO Vᵀ                      (L, d_v)(d_v, S)
    dS = P ⊙ (dP − D),  D_i = rowsum(P ⊙ dP)_i = rowsum(dO ⊙ O)_i      (FlashAttention's D_i)
    dQ = dS K · scale               (L, S)(S, d_k)
    dK = dSᵀ Q · scale              (S, L)(L, d_k)

The mask is a constant: blocked pairs have P = 0, hence dS = 0, and nothing flows through them.
Mask convention: boolean, True = may attend. GQA: query head h reads KV head h // group, so a KV
head's gradient is the sum of its group's contributions. Also here: the projection gradients
(self-attention from one shared X, cross-attention from a query input and a source) and the
common slips (card 5's "Common slip"), each a function returning what the slip computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_core.attention import AttentionResult, attention, check_shapes, expand_kv


@dataclass(frozen=True)
class BackwardResult:
    """Gradients of a scalar loss L with ∂L/∂O = dO. Shapes follow q, k, v (before GQA repeat)."""

    dq: torch.Tensor  # (..., Hq, L, d_k)
    dk: torch.Tensor  # (..., Hkv, S, d_k)
    dv: torch.Tensor  # (..., Hkv, S, d_v)
    dscores: torch.Tensor  # dS (..., Hq, L, S); 0 at blocked pairs
    dweights: torch.Tensor  # dP (..., Hq, L, S); dO_i · v_j, also at blocked pairs (P is 0 there)
    D: torch.Tensor  # (..., Hq, L) rowsum(dO ⊙ O), the one number per row FlashAttention keeps
    rowsum_gap: float  # max |rowsum(P ⊙ dP) − rowsum(dO ⊙ O)|: the two forms of D agree
    forward: AttentionResult


def _sum_to(x: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum a gradient over the leading axes that broadcasting added or stretched."""
    extra = x.ndim - len(shape)
    if extra > 0:
        x = x.sum(dim=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and x.shape[i] != 1)
    return x.sum(dim=stretched, keepdim=True) if stretched else x


def reduce_gqa(x: torch.Tensor, group: int) -> torch.Tensor:
    """(..., Hq, S, d) -> (..., Hkv, S, d): add the contributions of each KV head's query group."""
    if group == 1:
        return x
    return x.unflatten(-3, (x.shape[-3] // group, group)).sum(-3)  # (..., Hkv, group, S, d) -> sum


def check_grad_output(grad_output: torch.Tensor, output: torch.Tensor) -> torch.Tensor:
    grad_output = torch.as_tensor(grad_output, dtype=output.dtype)
    if grad_output.shape != output.shape:
        raise ValueError(
            f"the upstream gradient dO has shape {tuple(grad_output.shape)} but O has "
            f"{tuple(output.shape)}: dO = ∂L/∂O must match O entry by entry"
        )
    return grad_output


def attention_backward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    grad_output: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    scale: float | None = None,
) -> BackwardResult:
    """∂L/∂Q, ∂L/∂K, ∂L/∂V (and dS, dP) from dO by the five matrix lines of card 5.

    q (..., Hq, L, d_k), k (..., Hkv, S, d_k), v (..., Hkv, S, d_v), grad_output dO with O's shape
    (..., Hq, L, d_v). ``allowed`` broadcastable to (..., L, S), True = may attend; ``scale``
    defaults to 1/sqrt(d_k). Same shape, mask and GQA rules (and errors) as `attention`.
    """
    group = check_shapes(q, k, v)
    fwd = attention(q, k, v, allowed, scale=scale)
    dO = check_grad_output(grad_output, fwd.output)
    K, V = expand_kv(k, group), expand_kv(v, group)  # (..., Hq, S, d)
    P, O = fwd.weights, fwd.output
    dV = P.transpose(-2, -1) @ dO  # (..., Hq, S, d_v)
    dP = dO @ V.transpose(-2, -1)  # (..., Hq, L, S)
    D = (dO * O).sum(-1)  # (..., Hq, L): rowsum(dO ⊙ O)
    D_from_P = (P * dP).sum(-1)  # the same number, the long way
    dS = P * (dP - D.unsqueeze(-1))  # (..., Hq, L, S)
    dQ = (dS @ K) * fwd.scale  # (..., Hq, L, d_k)
    dK = (dS.transpose(-2, -1) @ q) * fwd.scale  # (..., Hq, S, d_k)
    return BackwardResult(
        dq=_sum_to(dQ, q.shape),
        dk=_sum_to(reduce_gqa(dK, group), k.shape),
        dv=_sum_to(reduce_gqa(dV, group), v.shape),
        dscores=dS,
        dweights=dP,
        D=D,
        rowsum_gap=float((D - D_from_P).abs().max()),
        forward=fwd,
    )


# --- projection gradients (card 5 step 5; lesson "For self-attention with shared X") ----------


@dataclass(frozen=True)
class SelfAttentionGradients:
    """Q = X W_Q, K = X W_K, V = X W_V: X reaches the loss along three paths, and dX adds them."""

    dx: torch.Tensor  # (..., T, d_model) = dx_via_q + dx_via_k + dx_via_v
    dx_via_q: torch.Tensor  # dQ W_Qᵀ
    dx_via_k: torch.Tensor  # dK W_Kᵀ
    dx_via_v: torch.Tensor  # dV W_Vᵀ
    dw_q: torch.Tensor  # (d_model, d_k) = Σ_batch Xᵀ dQ
    dw_k: torch.Tensor  # (d_model, d_k)
    dw_v: torch.Tensor  # (d_model, d_v)
    attention: BackwardResult


@dataclass(frozen=True)
class CrossAttentionGradients:
    """Q = X W_Q from the query input; K = Y W_K and V = Y W_V both from the source Y."""

    dx: torch.Tensor  # (..., L, d_model) query input: only the query path
    dsource: torch.Tensor  # (..., S, d_source) = dsource_via_k + dsource_via_v
    dsource_via_k: torch.Tensor  # dK W_Kᵀ
    dsource_via_v: torch.Tensor  # dV W_Vᵀ
    dw_q: torch.Tensor  # (d_model, d_k)
    dw_k: torch.Tensor  # (d_source, d_k)
    dw_v: torch.Tensor  # (d_source, d_v)
    attention: BackwardResult


def _weight_grad(x: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """dW = Xᵀ dY summed over every leading (batch) axis: W is shared by all of them."""
    return (x.transpose(-2, -1) @ d).reshape(-1, x.shape[-1], d.shape[-1]).sum(0)  # (d_in, d_out)


def self_attention_gradients(
    x: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    grad_output: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    scale: float | None = None,
) -> SelfAttentionGradients:
    """One head of self-attention from shared X: dX = dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ, dW_• = Xᵀ d•.

    x (..., T, d_model); w_q, w_k (d_model, d_k); w_v (d_model, d_v); grad_output (..., T, d_v).
    Mask (T, T), True = may attend. Dropping two of the three paths is the slip the lesson warns of.
    """
    Q, K, V = x @ w_q, x @ w_k, x @ w_v  # (..., T, d_k), (..., T, d_k), (..., T, d_v)
    back = attention_backward(Q, K, V, grad_output, allowed, scale=scale)
    via_q, via_k, via_v = back.dq @ w_q.T, back.dk @ w_k.T, back.dv @ w_v.T  # (..., T, d_model)
    return SelfAttentionGradients(
        dx=via_q + via_k + via_v,
        dx_via_q=via_q,
        dx_via_k=via_k,
        dx_via_v=via_v,
        dw_q=_weight_grad(x, back.dq),
        dw_k=_weight_grad(x, back.dk),
        dw_v=_weight_grad(x, back.dv),
        attention=back,
    )


def cross_attention_gradients(
    x: torch.Tensor,
    source: torch.Tensor,
    w_q: torch.Tensor,
    w_k: torch.Tensor,
    w_v: torch.Tensor,
    grad_output: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    scale: float | None = None,
) -> CrossAttentionGradients:
    """Cross-attention: queries from x (..., L, d_model), keys and values from source (..., S, d_src).

    The source gets two contributions, dK W_Kᵀ + dV W_Vᵀ; the query input gets dQ W_Qᵀ only.
    w_q (d_model, d_k), w_k (d_src, d_k), w_v (d_src, d_v); grad_output (..., L, d_v).
    """
    Q, K, V = x @ w_q, source @ w_k, source @ w_v
    back = attention_backward(Q, K, V, grad_output, allowed, scale=scale)
    via_k, via_v = back.dk @ w_k.T, back.dv @ w_v.T  # (..., S, d_src)
    return CrossAttentionGradients(
        dx=back.dq @ w_q.T,
        dsource=via_k + via_v,
        dsource_via_k=via_k,
        dsource_via_v=via_v,
        dw_q=_weight_grad(x, back.dq),
        dw_k=_weight_grad(source, back.dk),
        dw_v=_weight_grad(source, back.dv),
        attention=back,
    )
