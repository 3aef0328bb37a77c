"""Attention sinks: the logit needed to park mass, the QK-norm cap, and cache eviction (card 18).

    w = e^a / (e^a + T − 1)  ⇔  a = ln(w (T − 1) / (1 − w))        (the other T − 1 logits at 0)
    QK-norm, s = g q̂·k̂ ∈ [−g, g]:  max_j p_j ≤ e^g / (e^g + (T − 1) e^{−g})
    gain for a target top weight w:  g = ½ ln(w (T − 1) / (1 − w));  Gaussian bandwidth λ = 1/√g

Masks are boolean, True = may attend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.attention import stable_softmax
from attn_core.limits import THEORY, check_range
from attn_core.masks import causal_mask, sliding_window_mask
from attn_core.theory.scaling import F64, generator

STREAMING_SINKS = 4  # StreamingLLM keeps the first four tokens (Xiao et al., 2023)


def check_weight(w: float) -> float:
    """A share strictly between 0 and 1: w = 1 needs an infinite advantage, w = 0 a −∞ one."""
    if not (math.isfinite(w) and 0.0 < w < 1.0):
        raise ValueError(
            f"target weight {w} must lie strictly between 0 and 1 (w = 1 needs an infinite logit)"
        )
    return float(w)


def check_keys(T: int) -> int:
    if T < 2:
        raise ValueError(f"T = {T}: with one key it takes all the weight whatever its logit")
    return int(T)


def sink_weight(a: float, T: int) -> float:
    """The share e^a/(e^a + T − 1) of a key whose logit beats T − 1 equal others by a."""
    check_keys(T)
    return 1.0 / (1.0 + (T - 1) * math.exp(-a))


def sink_advantage(w: float, T: int) -> float:
    """a = ln(w (T − 1)/(1 − w)): 9.13 for 90% of 1,024 keys; grows only like ln T."""
    return math.log(check_weight(w) * (check_keys(T) - 1) / (1 - w))


def qk_norm_cap(g: float, T: int) -> float:
    """The largest weight any key can take when every logit lies in [−g, g]:
    e^g/(e^g + (T − 1)e^{−g}) = 1/(1 + (T − 1)e^{−2g}) (own logit g, all others −g)."""
    if not (math.isfinite(g) and g >= 0):
        raise ValueError(f"gain g = {g} must be finite and non-negative")
    return 1.0 / (1.0 + (check_keys(T) - 1) * math.exp(-2 * g))


def qk_norm_gain(w: float, T: int) -> float:
    """The smallest gain whose cap reaches w: g = ½ ln(w (T − 1)/(1 − w)) (5.26 for 0.9 of 4,096)."""
    return max(sink_advantage(w, T) / 2, 0.0)


def kernel_bandwidth(g: float) -> float:
    """λ = 1/√g: g q̂·k̂ = g − ‖q̂ − k̂‖²/(2λ²) for unit vectors (card 8's Gaussian kernel)."""
    if not (math.isfinite(g) and g > 0):
        raise ValueError(f"gain g = {g} must be positive for a bandwidth")
    return 1.0 / math.sqrt(g)


# ------------------------------------------------------------------------- cache eviction


@dataclass(frozen=True)
class EvictionResult:
    """One sequence through three KV caches, and how far each moves the outputs."""

    positions: torch.Tensor  # (n,) query positions where the caches differ (t ≥ window)
    sink_share: torch.Tensor  # (n,) weight the sink takes in the full row
    error: dict[str, torch.Tensor]  # policy -> (n,) ‖o_policy − o_full‖ / ‖o_full‖
    relative_error: dict[str, float]  # policy -> ‖O_policy − O_full‖_F / ‖O_full‖_F over those rows
    predicted_window_error: float  # mean w/(1 − w): the sink's mass spread over the window
    cache_masks: dict[str, torch.Tensor]  # policy -> (T, T) allowed keys (True = may attend)


def _local_head_scores(
    T: int, d: int, slope: float, noise: float, w: float, g: torch.Generator
) -> torch.Tensor:
    """(T, T) logits of a local head with a sink: noise·q·k/√d − slope·(t − j) for j ≥ 1, and for
    the sink (j = 0) the advantage that gives it share w of each full causal row."""
    q, k = torch.randn(2, T, d, generator=g, dtype=F64)
    t, j = torch.arange(T).view(-1, 1), torch.arange(T).view(1, -1)
    s = noise * (q @ k.T) / math.sqrt(d) - slope * (t - j).clamp_min(0).to(F64)  # (T, T)
    others = torch.where(causal_mask(T, T) & (j > 0), s, torch.full_like(s, -math.inf))
    log_z = torch.logsumexp(others, dim=-1)  # log Σ_{j≥1} e^{s_tj}; −inf for t = 0
    s[:, 0] = math.log(w / (1 - w)) + log_z  # the card's a, with the others' mass Z in place of T − 1
    return s


def cache_policies(T: int, window: int, sinks: int = STREAMING_SINKS) -> dict[str, torch.Tensor]:
    """(T, T) allowed-key masks: the full causal cache, the last `window` tokens, and StreamingLLM
    (the first `sinks` tokens plus the last window − sinks)."""
    full = causal_mask(T, T)
    recent = sliding_window_mask(T, T, window - sinks)
    first = torch.zeros(T, T, dtype=torch.bool)
    first[:, :sinks] = True
    return {
        "full cache": full,
        "window": sliding_window_mask(T, T, window),
        "sinks + window": (first & full) | recent,
    }


def eviction_experiment(
    T: int, window: int, w: float, *, d: int = 16, slope: float = 0.5, noise: float = 1.0, seed: int = 0
) -> EvictionResult:
    """Run one seeded sequence of T tokens through a local head whose sink (token 0, value 0) takes
    share w, under a full cache, a sliding window of `window` tokens, and StreamingLLM's sinks +
    window; compare every row t ≥ window with the full cache's output."""
    check_range("T (tokens)", T, 8, THEORY.max_tokens)
    check_range("window", window, STREAMING_SINKS + 1, T - 1)
    check_weight(w)
    g = generator(seed)
    s = _local_head_scores(T, d, slope, noise, w, g)
    v = torch.randn(T, d, generator=g, dtype=F64)
    v[0] = 0.0  # the sink's value: a no-op
    masks = cache_policies(T, window)
    outputs = {name: stable_softmax(s.masked_fill(~m, -math.inf)) @ v for name, m in masks.items()}
    rows = slice(window, T)
    full = outputs["full cache"][rows]
    share = stable_softmax(s.masked_fill(~masks["full cache"], -math.inf))[rows, 0]
    error = {
        n: (o[rows] - full).norm(dim=-1) / full.norm(dim=-1) for n, o in outputs.items() if n != "full cache"
    }
    rel = {n: float((o[rows] - full).norm() / full.norm()) for n, o in outputs.items() if n != "full cache"}
    predicted = float((share / (1 - share)).mean())
    return EvictionResult(torch.arange(T)[rows], share, error, rel, predicted, masks)
