"""Attention as Nadaraya–Watson kernel smoothing (card 8).

    f̂(q) = Σ_j κ_λ(q, k_j) v_j / Σ_j κ_λ(q, k_j),   κ_λ(q, k) = exp(−‖q − k‖²/2λ²)
    −‖q − k_j‖²/2λ² = q·k_j/λ² − ‖q‖²/2λ² − ‖k_j‖²/2λ²
    ⇒ f̂(q) = Σ_j softmax_j(q·k_j/λ² − ‖k_j‖²/2λ²) v_j   (the ‖q‖² term is the same for every key)

With keys of equal length the bias is a constant too, and plain attention at temperature λ² is the
smoother. Shapes: queries (m, d), keys (n, d), values (n, d_v); no mask (every key allowed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.attention import stable_softmax
from attn_core.limits import THEORY, check_range
from attn_core.theory.scaling import F64, generator


def check_bandwidth(bandwidth: float) -> float:
    if not (math.isfinite(bandwidth) and bandwidth > 0):
        raise ValueError(f"bandwidth λ = {bandwidth} must be positive")
    return float(bandwidth)


def nadaraya_watson(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, bandwidth: float
) -> torch.Tensor:
    """The 1964 estimator, written as kernel weights over their sum (no softmax, no expansion).

    Each row's squared distances are shifted by their minimum before exp: the ratio is unchanged
    and nothing underflows. (m, d), (n, d), (n, d_v) -> (m, d_v)."""
    d2 = torch.cdist(queries, keys).pow(2)  # (m, n) ‖q − k_j‖²
    kernel = torch.exp(-(d2 - d2.amin(-1, keepdim=True)) / (2 * bandwidth**2))
    return (kernel @ values) / kernel.sum(-1, keepdim=True)


def kernel_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    bandwidth: float,
    *,
    key_bias: bool = True,
) -> torch.Tensor:
    """softmax(q·k/λ² − ‖k‖²/2λ²) V; without `key_bias`, plain dot-product attention at temperature
    λ² (the slip "attention is a Gaussian kernel"). (m, d), (n, d), (n, d_v) -> (m, d_v)."""
    scores = queries @ keys.T / bandwidth**2  # (m, n)
    if key_bias:
        scores = scores - keys.pow(2).sum(-1) / (2 * bandwidth**2)
    return stable_softmax(scores) @ values


@dataclass(frozen=True)
class SmoothingResult:
    """A noisy curve smoothed three ways on a grid of query points."""

    x: torch.Tensor  # (n,) data positions (the keys, d = 1)
    y: torch.Tensor  # (n,) noisy observations (the values)
    grid: torch.Tensor  # (m,) query positions
    truth: torch.Tensor  # (m,) sin(grid)
    nadaraya_watson: torch.Tensor  # (m,)
    with_bias: torch.Tensor  # (m,) attention with the key-length bias
    without_bias: torch.Tensor  # (m,) plain attention at temperature λ²
    bias_error: float  # max |NW − attention with bias|: rounding only
    no_bias_error: float  # max |NW − plain attention|: the bias matters


def noisy_sine(n: int, noise: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n sorted points x ~ U[0, 2π] and y = sin x + noise · N(0, 1), seeded."""
    g = generator(seed)
    x = torch.sort(2 * math.pi * torch.rand(n, generator=g, dtype=F64)).values
    return x, torch.sin(x) + noise * torch.randn(n, generator=g, dtype=F64)


def smooth_sine(
    n: int = 40, bandwidth: float = 0.5, noise: float = 0.3, grid: int = 200, seed: int = 0
) -> SmoothingResult:
    """Card 8's check: n noisy sine points, bandwidth λ; NW vs attention with and without the bias."""
    check_range("points", n, 2, THEORY.max_points)
    check_range("grid points", grid, 2, THEORY.max_points)
    check_bandwidth(bandwidth)
    x, y = noisy_sine(n, noise, seed)
    xs = torch.linspace(0, 2 * math.pi, grid, dtype=F64)
    q, k, v = xs.view(-1, 1), x.view(-1, 1), y.view(-1, 1)
    nw = nadaraya_watson(q, k, v, bandwidth)[:, 0]
    with_bias = kernel_attention(q, k, v, bandwidth)[:, 0]
    without = kernel_attention(q, k, v, bandwidth, key_bias=False)[:, 0]
    return SmoothingResult(
        x,
        y,
        xs,
        torch.sin(xs),
        nw,
        with_bias,
        without,
        float((nw - with_bias).abs().max()),
        float((nw - without).abs().max()),
    )


@dataclass(frozen=True)
class EqualLengthCheck:
    """max |NW − plain attention| when every key has the same length."""

    circle: float  # the sine's positions mapped onto a circle of radius 1 (d = 2)
    random_3d: float  # random 3-D keys rescaled to one common length


def equal_length_checks(bandwidth: float = 0.5, seed: int = 0) -> EqualLengthCheck:
    """With ‖k_j‖ constant the bias cancels like the query term: plain attention is exact."""
    check_bandwidth(bandwidth)
    x, y = noisy_sine(40, 0.3, seed)
    xs = torch.linspace(0, 2 * math.pi, 200, dtype=F64)
    on_circle = lambda t: torch.stack([t.cos(), t.sin()], -1)  # noqa: E731
    k, q, v = on_circle(x), on_circle(xs), y.view(-1, 1)
    circle = float(
        (nadaraya_watson(q, k, v, bandwidth) - kernel_attention(q, k, v, bandwidth, key_bias=False))
        .abs()
        .max()
    )
    g = generator(seed + 1)
    k3 = torch.randn(30, 3, generator=g, dtype=F64)
    k3 = 1.5 * k3 / k3.norm(dim=-1, keepdim=True)
    q3, v3 = torch.randn(20, 3, generator=g, dtype=F64), torch.randn(30, 2, generator=g, dtype=F64)
    rand = float(
        (nadaraya_watson(q3, k3, v3, bandwidth) - kernel_attention(q3, k3, v3, bandwidth, key_bias=False))
        .abs()
        .max()
    )
    return EqualLengthCheck(circle, rand)
