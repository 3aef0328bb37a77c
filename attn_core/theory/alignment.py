"""When 1/√d_k is wrong: keys aligned with their query, and μP's 1/d_k (card 16).

With k = ρq + √(1−ρ²) z, q and z independent N(0, I_{d_k}):

    E[q·k] = ρ d_k,   Var(q·k) = ρ² · 2d_k + (1 − ρ²) d_k = d_k (1 + ρ²)
    α = 1/√d_k:  mean ρ√d_k (grows),  sd √(1 + ρ²)
    α = 1/d_k:   mean ρ (fixed),      sd √((1 + ρ²)/d_k) (shrinks)

‖q‖² (variance 2d_k) and q·z (variance d_k) are uncorrelated: flipping z flips one, not the other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.theory.scaling import F64, ScaleRule, check_d_k, check_pairs, generator, scale_of


def check_rho(rho: float) -> float:
    """ρ is a correlation: it must lie in [−1, 1] (√(1 − ρ²) is undefined outside)."""
    if not (math.isfinite(rho) and -1.0 <= rho <= 1.0):
        raise ValueError(f"ρ = {rho} is not a correlation: it must lie in [−1, 1]")
    return float(rho)


def aligned_keys(q: torch.Tensor, z: torch.Tensor, rho: float) -> torch.Tensor:
    """k = ρq + √(1 − ρ²) z: unit-variance components, correlation ρ with q component by component."""
    return rho * q + math.sqrt(1 - rho**2) * z


@dataclass(frozen=True)
class Moments:
    """Mean and standard deviation of α q·k."""

    mean: float
    sd: float


def aligned_moments(d_k: int, rho: float, scale: float) -> Moments:
    """Closed form: mean α ρ d_k, sd α √(d_k (1 + ρ²)) (card 16, steps 1–3)."""
    return Moments(scale * rho * d_k, scale * math.sqrt(d_k * (1 + rho**2)))


@dataclass(frozen=True)
class AlignedSample:
    """Simulated α q·k for one scale rule, with standard errors for the verdict."""

    rule: ScaleRule
    scale: float
    scores: torch.Tensor  # (n,)
    mean: float
    sd: float
    mean_se: float  # sd / √n
    sd_se: float  # √((m₄ − s⁴)/n) / (2s): the delta method on the variance's SE
    theory: Moments


def aligned_samples(
    d_k: int, rho: float, rules: tuple[ScaleRule | str, ...], n: int, seed: int
) -> dict[ScaleRule, AlignedSample]:
    """n draws of (q, z) ~ N(0, I), k = ρq + √(1−ρ²)z, and the dot products α q·k under each rule
    (one draw serves every rule)."""
    check_d_k(d_k)
    check_rho(rho)
    check_pairs(2 * n, d_k)
    q, z = torch.randn(2, n, d_k, generator=generator(seed), dtype=F64)
    raw = (q * aligned_keys(q, z, rho)).sum(-1)  # (n,) q·k
    out = {}
    for rule in map(ScaleRule, rules):
        scale = scale_of(rule, d_k)
        s = scale * raw
        centred = s - s.mean()
        var = float(centred.pow(2).sum() / (n - 1))
        sd = math.sqrt(var)
        sd_se = math.sqrt(max(float(centred.pow(4).mean()) - var**2, 0.0) / n) / (2 * sd)
        out[rule] = AlignedSample(
            rule, scale, s, float(s.mean()), sd, sd / math.sqrt(n), sd_se, aligned_moments(d_k, rho, scale)
        )
    return out


def aligned_sample(d_k: int, rho: float, rule: ScaleRule | str, n: int, seed: int) -> AlignedSample:
    """One rule of `aligned_samples`."""
    return aligned_samples(d_k, rho, (rule,), n, seed)[ScaleRule(rule)]


@dataclass(frozen=True)
class AlignmentCurve:
    """Closed-form mean ± sd of the scaled logit against d_k, for 1/√d_k and 1/d_k."""

    d_ks: list[int]
    rho: float
    by_rule: dict[ScaleRule, list[Moments]]


def alignment_curve(rho: float, d_ks: list[int]) -> AlignmentCurve:
    """mean and sd of α q·k at each d_k for both scale rules (no simulation: closed forms)."""
    check_rho(rho)
    rules = (ScaleRule.SQRT, ScaleRule.LINEAR)
    by_rule = {r: [aligned_moments(d, rho, scale_of(r, d)) for d in d_ks] for r in rules}
    return AlignmentCurve(list(d_ks), rho, by_rule)


def init_entropy_approximation(T: int, d_k: int, rule: ScaleRule | str) -> float:
    """ln T − σ_s²/2 at initialization (ρ = 0, unit components), σ_s² = α² d_k: 1/√d_k → σ_s = 1;
    1/d_k → σ_s² = 1/d_k, i.e. 8.314 against the maximum 8.318 at T = 4,096, d_k = 128."""
    return math.log(T) - scale_of(rule, d_k) ** 2 * d_k / 2
