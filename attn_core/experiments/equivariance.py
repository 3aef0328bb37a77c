"""Attention without positions is blind to order; a causal mask (or positions) breaks that (card 7).

Attn(ΠX) = Π Attn(X) when there is no mask and no position information: the outputs move with the
tokens (equivariant). Mean pooling is invariant: 1ᵀΠ = 1ᵀ. A causal mask does not commute with Π,
and even with equal scores it leaks position: token 1's share at position t is 1/t.
Self-attention on tokens X (T, d_model) with Q = X W_Q, K = X W_K, V = X W_V; mask bool, True = may
attend; a permutation ``perm`` puts old token perm[n] at new position n, i.e. ΠX = X[perm].
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attn_core.attention import attention
from attn_core.limits import LIMITS
from attn_core.masks import causal_mask

F64 = torch.float64
MAX_TOKENS = LIMITS.permutation_tokens


def embed_words(words: Sequence[str], d_model: int = 8, seed: int = 0) -> torch.Tensor:
    """(T, d_model) float64: each distinct word gets one fixed N(0, 1) vector (seeded by the word),
    so "man bites dog" is exactly a row permutation of "dog bites man"."""
    rows = []
    for w in words:
        g = torch.Generator().manual_seed(int(seed) * 1_000_003 + zlib.crc32(w.lower().encode()))
        rows.append(torch.randn(d_model, generator=g, dtype=F64))
    return torch.stack(rows)


def projections(d_model: int, d_k: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded W_Q, W_K, W_V, each (d_model, d_k), entries N(0, 1/d_model) so Q, K, V have unit scale."""
    g = torch.Generator().manual_seed(int(seed) + 7)
    return tuple(torch.randn(d_model, d_k, generator=g, dtype=F64) / math.sqrt(d_model) for _ in range(3))


def sinusoidal_positions(T: int, d_model: int) -> torch.Tensor:
    """(T, d_model) absolute positions: PE[p, 2i] = sin(p / 10000^{2i/d}), PE[p, 2i+1] = cos(…)."""
    p = torch.arange(T, dtype=F64).unsqueeze(-1)  # (T, 1)
    i = torch.arange(0, d_model, 2, dtype=F64)  # (ceil(d/2),)
    angle = p / 10000 ** (i / d_model)  # (T, ceil(d/2))
    pe = torch.zeros(T, d_model, dtype=F64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe


def self_attention(
    X: torch.Tensor, W: tuple[torch.Tensor, torch.Tensor, torch.Tensor], *, causal: bool, positions: bool
) -> torch.Tensor:
    """Attn(X) (T, d_k): Q, K, V = (X + PE) W_{Q,K,V}; PE = 0 unless ``positions``."""
    T = X.shape[0]
    if positions:
        X = X + sinusoidal_positions(T, X.shape[1])
    Q, K, V = (X @ w for w in W)  # each (T, d_k)
    return attention(Q, K, V, causal_mask(T, T) if causal else None).output


def check_permutation(perm: Sequence[int], T: int) -> tuple[int, ...]:
    """Validate that ``perm`` lists 0 … T−1 once each; ValueError says what is wrong."""
    perm = tuple(int(p) for p in perm)
    if len(perm) != T:
        raise ValueError(f"a permutation of {T} tokens needs {T} positions, got {len(perm)}")
    if sorted(perm) != list(range(T)):
        missing = sorted(set(range(T)) - set(perm))
        raise ValueError(f"the positions must be 0…{T - 1} once each; missing {missing}")
    return perm


def parse_permutation(text: str, T: int) -> tuple[int, ...]:
    """'2 0 1' or '2, 0, 1' (0-based: new position n holds old token perm[n]) or 'reverse'."""
    text = text.strip().lower()
    if text == "reverse":
        return tuple(range(T - 1, -1, -1))
    parts = [p for p in text.replace(",", " ").split() if p]
    try:
        perm = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"type whole numbers 0…{T - 1} separated by spaces, or 'reverse'") from None
    return check_permutation(perm, T)


def random_permutation(T: int, seed: int = 0) -> tuple[int, ...]:
    g = torch.Generator().manual_seed(int(seed))
    return tuple(int(p) for p in torch.randperm(T, generator=g))


@dataclass(frozen=True)
class PermutationReport:
    """Attn(ΠX) against Π Attn(X) for one permutation and one setting."""

    perm: tuple[int, ...]
    causal: bool
    positions: bool
    outputs: torch.Tensor  # (T, d_k) Attn(X)
    outputs_of_permuted: torch.Tensor  # (T, d_k) Attn(ΠX)
    permuted_outputs: torch.Tensor  # (T, d_k) Π Attn(X): where the outputs would be if they moved along
    row_error: torch.Tensor  # (T,) ‖Attn(ΠX)_n − (Π Attn(X))_n‖∞ per new position n
    equivariance_error: float  # max of row_error
    pooled_error: float  # ‖mean Attn(ΠX) − mean Attn(X)‖∞ (mean over tokens)


def permutation_test(
    X: torch.Tensor,
    perm: Sequence[int],
    *,
    causal: bool = False,
    positions: bool = False,
    d_k: int = 4,
    seed: int = 0,
) -> PermutationReport:
    """Run self-attention on X (T, d_model) and on ΠX = X[perm]; measure how far the outputs are
    from moving with the tokens (card 7, steps 1–6)."""
    T, d_model = X.shape
    if not 1 <= T <= MAX_TOKENS:
        raise ValueError(f"use 1…{MAX_TOKENS} tokens, got {T}")
    perm = check_permutation(perm, T)
    W = projections(d_model, d_k, seed)
    idx = torch.tensor(perm, dtype=torch.long)
    O = self_attention(X, W, causal=causal, positions=positions)  # (T, d_k)
    O_perm_in = self_attention(X[idx], W, causal=causal, positions=positions)  # Attn(ΠX)
    expected = O[idx]  # Π Attn(X)
    row_error = (O_perm_in - expected).abs().amax(-1)  # (T,)
    pooled = float((O_perm_in.mean(0) - O.mean(0)).abs().max())
    return PermutationReport(
        perm=perm,
        causal=causal,
        positions=positions,
        outputs=O,
        outputs_of_permuted=O_perm_in,
        permuted_outputs=expected,
        row_error=row_error,
        equivariance_error=float(row_error.max()),
        pooled_error=pooled,
    )


@dataclass(frozen=True)
class BosShare:
    """Equal scores, v_1 = 1 and every other value 0: the output at position t is token 1's share."""

    T: int
    causal: torch.Tensor  # (T,) o_t under the causal mask: 1/t
    unmasked: torch.Tensor  # (T,) o_t without a mask: 1/T everywhere — no position signal
    expected: torch.Tensor  # (T,) 1/t

    @property
    def max_gap(self) -> float:
        """max_t |o_t − 1/t| under the causal mask: 0 up to rounding."""
        return float((self.causal - self.expected).abs().max())


def bos_share(T: int) -> BosShare:
    """Card 7, step 7: q = k = 0 makes every score equal, so position t spreads 1/t over the t keys it
    sees; with v = (1, 0, …, 0) its output is exactly token 1's share."""
    if not 1 <= T <= 4096:
        raise ValueError(f"T must lie in 1…4096, got {T}")
    q = torch.zeros(T, 1, dtype=F64)  # (T, 1): zero queries give zero scores everywhere
    k = torch.zeros(T, 1, dtype=F64)
    v = torch.zeros(T, 1, dtype=F64)
    v[0, 0] = 1.0  # the BOS token carries the only signal
    causal = attention(q, k, v, causal_mask(T, T)).output[:, 0]
    unmasked = attention(q, k, v).output[:, 0]
    t = torch.arange(1, T + 1, dtype=F64)
    return BosShare(T=T, causal=causal, unmasked=unmasked, expected=1 / t)
