"""Uniform heads and rank collapse in stacks of pure attention (card 17).

    uniform head:  Var((1/T) Σ_j v_j) = σ_v² / T
    X = 1 x̄ᵀ + R (1ᵀR = 0):  s_ij = (query only: cancels) + (key only: same in every row) + r_iᵀ W r_j
    ⇒ P = 1πᵀ + Δ with Δ = O(r²), Δ1 = 0  ⇒  res(P X W_V) = res(Δ R W_V) = O(r³)
    r_{l+1} ≤ C r_l³  ⇒  doubly exponential collapse (Dong, Cordonnier and Loukas, 2021)

The distance from "all tokens identical" is r(X) = ‖X − 1x̄ᵀ‖_F / ‖X‖_F. No mask.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.attention import stable_softmax
from attn_core.limits import THEORY, check_range
from attn_core.oracle import COLLAPSE_FLOOR
from attn_core.theory.scaling import F64, check_sigma, generator


def uniform_head_variance(T: int, sigma_v: float = 1.0) -> float:
    """σ_v²/T: the variance of the plain mean of T independent values (2.44e-4 at T = 4,096)."""
    return check_sigma("σ_v", sigma_v) ** 2 / T


@dataclass(frozen=True)
class UniformHeadSample:
    variance: float  # sample variance of the uniform head's output over the trials
    standard_error: float  # √(2/(n − 1)) · variance (normal values)
    theory: float  # σ_v²/T
    trials: int


def uniform_head_sample(T: int, trials: int, sigma_v: float = 1.0, seed: int = 0) -> UniformHeadSample:
    """`trials` rows of T values ~ N(0, σ_v²) averaged with uniform weights softmax(0) = 1/T."""
    check_range("T", T, 1, THEORY.max_keys)
    check_range("trials", trials, 2, THEORY.max_trials)
    if trials * T > THEORY.max_entries:
        raise ValueError(f"{trials:,} trials × T = {T:,} is over the cap of {THEORY.max_entries:,} values")
    v = check_sigma("σ_v", sigma_v) * torch.randn(trials, T, generator=generator(seed), dtype=F64)
    weights = stable_softmax(torch.zeros(1, T, dtype=F64))  # (1, T): uniform
    out = (weights * v).sum(-1)  # (trials,)
    var = float(out.var())
    return UniformHeadSample(
        var, var * math.sqrt(2 / (trials - 1)), uniform_head_variance(T, sigma_v), trials
    )


def residual_distance(X: torch.Tensor) -> torch.Tensor:
    """r = ‖X − 1x̄ᵀ‖_F / ‖X‖_F over the last two axes (..., T, d) -> (...)."""
    return (X - X.mean(-2, keepdim=True)).norm(dim=(-2, -1)) / X.norm(dim=(-2, -1))


def attention_layer(X: torch.Tensor, W_Q: torch.Tensor, W_K: torch.Tensor, W_V: torch.Tensor) -> torch.Tensor:
    """softmax((X W_Q)(X W_K)ᵀ/√d) X W_V for X (..., T, d) and weights (..., d, d), no mask.

    The scores go through X W_Q and X W_K (2·T·d² multiply-adds) rather than W_Q W_Kᵀ (d³)."""
    d = W_Q.shape[-1]
    S = (X @ W_Q) @ (X @ W_K).transpose(-2, -1) / math.sqrt(d)  # (..., T, T)
    return stable_softmax(S) @ X @ W_V


def random_weights(stacks: int, layers: int, d: int, g: torch.Generator) -> torch.Tensor:
    """W_Q, W_K, W_V with N(0, 1/d) entries: (3, stacks, layers, d, d)."""
    return torch.randn(3, stacks, layers, d, d, generator=g, dtype=F64) / math.sqrt(d)


@dataclass(frozen=True)
class CollapseCurves:
    """Median over random stacks of r_l after each layer l = 0 … L (0 = the input)."""

    layers: list[int]
    pure: torch.Tensor  # (L + 1,) X ← Attn(X)
    residual: torch.Tensor  # (L + 1,) X ← X + Attn(X)
    cubic_ratio: torch.Tensor  # (L,) pure r_{l+1} / r_l³ (order 1 under the cubic law); NaN at rounding


def collapse_curves(
    tokens: int = 32, width: int = 64, layers: int = 12, stacks: int = 20, seed: int = 0
) -> CollapseCurves:
    """Random stacks of single-head attention layers on X ~ N(0, I) (tokens, width), with and
    without residual connections (no feed-forward, no normalization)."""
    check_range("tokens", tokens, 2, THEORY.max_tokens)
    check_range("width", width, 1, THEORY.max_width)
    check_range("layers", layers, 1, THEORY.max_layers)
    check_range("stacks", stacks, 1, THEORY.max_stacks)
    g = generator(seed)
    X0 = torch.randn(stacks, tokens, width, generator=g, dtype=F64)
    W_Q, W_K, W_V = random_weights(stacks, layers, width, g)
    pure, res = [residual_distance(X0)], [residual_distance(X0)]
    Xp, Xr = X0, X0
    for layer in range(layers):
        weights = (W_Q[:, layer], W_K[:, layer], W_V[:, layer])
        Xp = attention_layer(Xp, *weights)
        Xr = Xr + attention_layer(Xr, *weights)
        pure.append(residual_distance(Xp))
        res.append(residual_distance(Xr))
    pure_med = torch.stack(pure, -1).median(0).values  # (L + 1,)
    after, before = torch.stack(pure[1:], -1), torch.stack(pure[:-1], -1)  # (stacks, L)
    ratio = torch.where(after > COLLAPSE_FLOOR, after / before**3, torch.nan).nanmedian(0).values
    return CollapseCurves(list(range(layers + 1)), pure_med, torch.stack(res, -1).median(0).values, ratio)


@dataclass(frozen=True)
class CubicRate:
    """One attention layer fed inputs ever closer to rank 1: output residual vs input residual."""

    input_residual: torch.Tensor  # (n,) ‖R_in‖_F
    output_residual: torch.Tensor  # (n,) ‖res(Attn(X))‖_F
    slope: float  # least-squares slope of log10(out) against log10(in): 3 per decade


def cubic_rate(
    tokens: int = 32, width: int = 64, seed: int = 0, decades: tuple[float, float] = (-1.0, -3.0)
) -> CubicRate:
    """X = 1x̄ᵀ + ε R for ε over `decades` (log10): shrink the input residual 10× and the output
    residual of a pure attention layer shrinks 10³."""
    check_range("tokens", tokens, 2, THEORY.max_tokens)
    check_range("width", width, 1, THEORY.max_width)
    g = generator(seed)
    mean_row = torch.randn(1, width, generator=g, dtype=F64)
    R = torch.randn(tokens, width, generator=g, dtype=F64)
    R = R - R.mean(0, keepdim=True)  # 1ᵀR = 0
    W_Q, W_K, W_V = random_weights(1, 1, width, g)
    eps = torch.logspace(decades[0], decades[1], 9, dtype=F64).view(-1, 1, 1)
    X = mean_row + eps * R / R.norm()  # (n, T, d): ‖R_in‖_F = ε
    out = attention_layer(X, W_Q[0, 0], W_K[0, 0], W_V[0, 0])
    r_out = (out - out.mean(-2, keepdim=True)).norm(dim=(-2, -1))
    x, y = eps.flatten().log10(), r_out.log10()
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())
    return CubicRate(eps.flatten(), r_out, slope)
