"""Cached decoding (lesson, "Masking, order and cached decoding"; card 6, step 4): a block of new
queries over a KV cache needs the bottom-right mask, and token-by-token decoding with a growing cache
equals the full causal pass. Also how many pairs a causal mask allows (card 6, step 7)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attn_core.attention import attention
from attn_core.masks import causal_mask
from attn_core.oracle import max_abs_diff


@dataclass(frozen=True)
class CachedBlockReport:
    """P cached keys + L new queries: which mask alignment reproduces the full causal pass."""

    P: int
    L: int
    bottom_right: torch.Tensor  # (L, P + L) allowed: query i (position P + i) sees j ≤ P + i
    top_left: torch.Tensor  # (L, P + L) allowed: query i sees j ≤ i — drops valid cached keys
    discarded_pairs: int  # allowed pairs bottom-right has and top-left lacks (= P · L)
    full_pass_rows: torch.Tensor  # (..., L, d_v) rows P … P+L−1 of the full T×T causal pass
    diff_bottom_right: float  # ours, bottom-right vs full pass
    diff_top_left: float  # ours, top-left vs full pass (large: the bug)
    diff_sdpa_lower_right: float  # SDPA with torch's causal_lower_right vs full pass
    diff_sdpa_is_causal_vs_top_left: float  # SDPA is_causal=True vs our top-left (how torch aligns)
    diff_sdpa_is_causal_vs_full: float


def cached_block(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, P: int) -> CachedBlockReport:
    """Treat tokens 0 … P−1 as a KV cache and tokens P … T−1 as new queries (lesson, "Masking, order
    and cached decoding"): q, k (..., T, d_k), v (..., T, d_v). Query row i has absolute position
    P + i, so key j is allowed when j ≤ P + i (bottom-right). Compares both alignments and SDPA's
    two spellings with the last L rows of the full causal pass."""
    T = q.shape[-2]
    if not 0 <= P < T:
        raise ValueError(f"the cached prefix P must lie in 0…{T - 1} so that at least one query is new")
    L = T - P
    full = attention(q, k, v, causal_mask(T, T)).output[..., P:, :]  # (..., L, d_v)
    q_new = q[..., P:, :]  # (..., L, d_k)
    br, tl = causal_mask(L, T, "bottom_right"), causal_mask(L, T, "top_left")
    out_br = attention(q_new, k, v, br).output
    out_tl = attention(q_new, k, v, tl).output
    # Imported here: torch.nn.attention.bias pulls in torch._dynamo, ~1.2 s on every app start.
    from torch.nn.attention.bias import causal_lower_right

    sdpa_lr = F.scaled_dot_product_attention(q_new, k, v, attn_mask=causal_lower_right(L, T), dropout_p=0.0)
    sdpa_causal = F.scaled_dot_product_attention(q_new, k, v, is_causal=True, dropout_p=0.0)
    return CachedBlockReport(
        P=P,
        L=L,
        bottom_right=br,
        top_left=tl,
        discarded_pairs=int((br & ~tl).sum()),
        full_pass_rows=full,
        diff_bottom_right=max_abs_diff(out_br, full),
        diff_top_left=max_abs_diff(out_tl, full),
        diff_sdpa_lower_right=max_abs_diff(sdpa_lr, full),
        diff_sdpa_is_causal_vs_top_left=max_abs_diff(sdpa_causal, out_tl),
        diff_sdpa_is_causal_vs_full=max_abs_diff(sdpa_causal, full),
    )


@dataclass(frozen=True)
class DecodeReport:
    """Token-by-token decoding with a growing KV cache vs one full causal pass."""

    prefill: int  # tokens processed as one causal block before decoding starts
    outputs: torch.Tensor  # (..., T, d_v) from prefill + one step per later token
    full_pass: torch.Tensor  # (..., T, d_v) attention(q, k, v, causal)
    cache_lengths: tuple[int, ...]  # keys in the cache when each decode step ran
    max_abs_diff: float
    bitwise_equal: bool


def decode_with_kv_cache(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, prefill: int = 1) -> DecodeReport:
    """Prefill ``prefill`` tokens with a causal block, then decode one token at a time: append its
    k_t, v_t to the cache and attend q_t to the cache with no mask at all (card 6, step 4). Queries
    are never cached. q, k (..., T, d_k), v (..., T, d_v)."""
    T = q.shape[-2]
    if not 1 <= prefill <= T:
        raise ValueError(f"prefill must lie in 1…{T}")
    K_cache, V_cache = k[..., :prefill, :], v[..., :prefill, :]  # (..., prefill, d)
    outs = [attention(q[..., :prefill, :], K_cache, V_cache, causal_mask(prefill, prefill)).output]
    lengths = []
    for t in range(prefill, T):
        K_cache = torch.cat([K_cache, k[..., t : t + 1, :]], dim=-2)  # (..., t + 1, d_k)
        V_cache = torch.cat([V_cache, v[..., t : t + 1, :]], dim=-2)  # (..., t + 1, d_v)
        lengths.append(K_cache.shape[-2])
        outs.append(attention(q[..., t : t + 1, :], K_cache, V_cache).output)  # (..., 1, d_v)
    outputs = torch.cat(outs, dim=-2)  # (..., T, d_v)
    full = attention(q, k, v, causal_mask(T, T)).output
    return DecodeReport(
        prefill=prefill,
        outputs=outputs,
        full_pass=full,
        cache_lengths=tuple(lengths),
        max_abs_diff=max_abs_diff(outputs, full),
        bitwise_equal=bool(torch.equal(outputs, full)),
    )


# ---------------------------------------------------------------------------------------------
# Counting
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairCount:
    T: int
    allowed_pairs: int  # T (T + 1) / 2
    total_pairs: int  # T²
    fraction: float  # (T + 1) / 2T


def causal_pair_count(T: int) -> PairCount:
    """A causal T×T mask allows T(T + 1)/2 of the T² pairs: a fraction (T + 1)/2T (card 6, step 7)."""
    if T < 1:
        raise ValueError(f"T must be at least 1, got {T}")
    return PairCount(T, T * (T + 1) // 2, T * T, (T + 1) / (2 * T))
