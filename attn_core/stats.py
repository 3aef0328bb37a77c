"""Row statistics of attention weights: how peaked is each query's distribution (cards 2 and 3)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.attention import stable_softmax


def row_entropy(weights: torch.Tensor) -> torch.Tensor:
    """H = -Σ_j p_j ln p_j in nats per row (0 ln 0 = 0, so masked keys add nothing). (..., L)"""
    p = weights
    return -(p * torch.where(p > 0, p.log(), torch.zeros_like(p))).sum(-1)


def effective_keys(weights: torch.Tensor) -> torch.Tensor:
    """e^H: 1 for a one-hot row, T for a uniform one over T keys. (..., L)"""
    return row_entropy(weights).exp()


@dataclass(frozen=True)
class TemperatureSweep:
    temperatures: torch.Tensor  # (n,) τ values
    weights: torch.Tensor  # (n, S) softmax(s / τ) of one row
    entropy: torch.Tensor  # (n,) nats
    max_entropy: float  # ln(number of allowed keys): the uniform limit τ → ∞


def temperature_sweep(
    scores: torch.Tensor, n: int = 61, low: float = 0.05, high: float = 20.0
) -> TemperatureSweep:
    """softmax(s / τ) of one score row s (S,) for τ on a log grid: τ → 0 one-hot, τ → ∞ uniform.

    Blocked keys (-inf) stay at weight 0 at every temperature."""
    if scores.ndim != 1:
        raise ValueError("temperature_sweep takes one score row of shape (S,)")
    taus = torch.logspace(math.log10(low), math.log10(high), n, dtype=torch.float64)
    weights = stable_softmax(scores.to(torch.float64).unsqueeze(0) / taus.unsqueeze(1))  # (n, S)
    allowed = int(torch.isfinite(scores).sum())
    return TemperatureSweep(taus, weights, row_entropy(weights), math.log(allowed))
