"""Why 1/√d_k: the variance of a dot product and what the spread does to a softmax row (card 3).

For q, k with independent mean-0 components of variances σ_q², σ_k²:

    Var(q·k) = d_k σ_q² σ_k²            (a sum of d_k independent products: variances add)
    H(softmax(s)) ≈ ln T − σ_s²/2       (T Gaussian logits of spread σ_s ≪ √(2 ln T))
    P(max p > 0.99 | 2 keys) = E_{‖q‖² ~ χ²(d_k)} [2 Φ(−ln 99 / (α √(2‖q‖²)))]

Every simulation is seeded and returns its samples' summary, never a plot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import torch

from attn_core.attention import stable_softmax
from attn_core.jacobian import jacobian_frobenius
from attn_core.limits import THEORY, check_range
from attn_core.stats import row_entropy

F64 = torch.float64
SATURATED = 0.99  # a row "above 0.99" puts more than this on one key (card 3, step 8)


class ScaleRule(StrEnum):
    """The factor on q·k; the value is the label shown, a link keeps the member's name, lower-cased."""

    SQRT = "1/√d_k"
    LINEAR = "1/d_k"
    NONE = "none (1)"


def scale_of(rule: ScaleRule | str, d_k: int) -> float:
    """α for a rule: 1/√d_k (Vaswani et al.), 1/d_k (μP, card 16) or 1."""
    rule = ScaleRule(rule)
    return {ScaleRule.SQRT: d_k**-0.5, ScaleRule.LINEAR: 1.0 / d_k, ScaleRule.NONE: 1.0}[rule]


def check_d_k(d_k: int) -> int:
    if d_k < 1:
        raise ValueError(f"d_k = {d_k}: queries and keys need at least one component")
    return check_range("d_k", d_k, 1, THEORY.max_d_k)


def check_sigma(name: str, sigma: float) -> float:
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"{name} = {sigma} must be a positive spread")
    return float(sigma)


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


# ---------------------------------------------------------------- variance of q·k (steps 1–4)


def sample_qk(
    n: int, d_k: int, sigma_q: float, sigma_k: float, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """n independent pairs: q ~ N(0, σ_q² I), k ~ N(0, σ_k² I), each (n, d_k) float64."""
    g = generator(seed)
    q = sigma_q * torch.randn(n, d_k, generator=g, dtype=F64)
    k = sigma_k * torch.randn(n, d_k, generator=g, dtype=F64)
    return q, k


def variance_theory(d_k: int, sigma_q: float, sigma_k: float, scale: float) -> float:
    """Var(α q·k) = α² d_k σ_q² σ_k² (card 3, step 3); its mean is 0."""
    return scale**2 * d_k * sigma_q**2 * sigma_k**2


@dataclass(frozen=True)
class ScoreSample:
    """n scaled dot products and the moments a page compares with theory."""

    scores: torch.Tensor  # (n,) α q·k
    mean: float
    variance: float  # unbiased sample variance
    variance_se: float  # its standard error √((m₄ − s⁴)/n), from the sample's 4th central moment
    mean_se: float  # √(s²/n)


def score_sample(q: torch.Tensor, k: torch.Tensor, scale: float) -> ScoreSample:
    """α q·k row by row for q, k (n, d_k), with the moments and their standard errors."""
    s = (q * k).sum(-1) * scale  # (n,)
    n = s.numel()
    centred = s - s.mean()
    var = float(centred.pow(2).sum() / (n - 1))
    m4 = float(centred.pow(4).mean())
    return ScoreSample(s, float(s.mean()), var, math.sqrt(max(m4 - var**2, 0.0) / n), math.sqrt(var / n))


def check_pairs(n: int, d_k: int) -> None:
    check_range("pairs", n, 2, THEORY.max_pairs)
    if n * d_k > THEORY.max_entries:
        raise ValueError(f"{n:,} pairs × d_k = {d_k} is over the cap of {THEORY.max_entries:,} entries")


# ---------------------------------------------------------------- entropy of a row (steps 5–6)


def entropy_approximation(sigma: float | torch.Tensor, T: int) -> float | torch.Tensor:
    """H ≈ ln T − σ²/2: the T → ∞ limit of the entropy of T logits N(0, σ²) (card 3, step 5)."""
    return math.log(T) - sigma**2 / 2


def breakdown_sigma(T: int) -> float:
    """√(2 ln T): where the largest of T Gaussian logits sits, in units of σ; the approximation
    needs σ well below it (card 3, step 6: 4.08 at T = 4,096)."""
    return math.sqrt(2 * math.log(T))


def check_rows(rows: int, T: int) -> None:
    check_range("rows", rows, 1, THEORY.max_rows)
    check_range("T (keys)", T, 2, THEORY.max_keys)
    if rows * T > THEORY.max_entries:
        raise ValueError(f"{rows:,} rows × T = {T:,} is over the cap of {THEORY.max_entries:,} entries")


def query_logit_rows(
    rows: int, T: int, d_k: int, scale: float, sigma_q: float, sigma_k: float, seed: int
) -> torch.Tensor:
    """Logits α q·k_j of `rows` random queries against T random keys each -> (rows, T).

    Given q, the T dot products q·k_j with k_j ~ N(0, σ_k² I) are i.i.d. N(0, σ_k²‖q‖²), so each
    row is drawn as α σ_k ‖q‖ z with z ~ N(0, I_T): exact in distribution, and it costs rows·T
    instead of rows·T·d_k. ‖q‖ comes from real q ~ N(0, σ_q² I_{d_k}) vectors."""
    g = generator(seed)
    q_norm = (sigma_q * torch.randn(rows, d_k, generator=g, dtype=F64)).norm(dim=-1, keepdim=True)
    return scale * sigma_k * q_norm * torch.randn(rows, T, generator=g, dtype=F64)


@dataclass(frozen=True)
class RowStats:
    """Per-row statistics of softmax(logits), each (rows,), and their medians."""

    entropy: torch.Tensor  # nats
    top_weight: torch.Tensor  # max_j p_j
    jacobian_norm: torch.Tensor  # ‖diag(p) − ppᵀ‖_F

    @property
    def effective_keys(self) -> torch.Tensor:
        return self.entropy.exp()

    def median(self, field: str) -> float:
        return float(getattr(self, field).median())

    @property
    def saturated_share(self) -> float:
        """Share of rows whose top weight exceeds 0.99 (card 3, step 8)."""
        return float((self.top_weight > SATURATED).double().mean())


def row_stats(logits: torch.Tensor) -> RowStats:
    """Entropy, top weight and ‖J‖_F of softmax over the last axis of logits (rows, T)."""
    p = stable_softmax(logits)
    return RowStats(row_entropy(p), p.amax(-1), jacobian_frobenius(p))


@dataclass(frozen=True)
class EntropyCurve:
    sigmas: torch.Tensor  # (n,) logit spreads
    simulated: torch.Tensor  # (n,) median entropy over the rows, nats
    approximation: torch.Tensor  # (n,) ln T − σ²/2
    breakdown: float  # √(2 ln T)
    max_entropy: float  # ln T


def entropy_curve(T: int, sigmas: torch.Tensor, rows: int, seed: int) -> EntropyCurve:
    """Median entropy of rows of T logits σ z, z ~ N(0, I), for each σ (the same z for every σ,
    so the curve is smooth), against ln T − σ²/2."""
    check_rows(rows * len(sigmas), T)
    z = torch.randn(rows, T, generator=generator(seed), dtype=F64)
    p = stable_softmax(sigmas.to(F64).view(-1, 1, 1) * z)  # (n, rows, T)
    simulated = row_entropy(p).median(-1).values
    approx = entropy_approximation(sigmas.to(F64), T)
    return EntropyCurve(sigmas.to(F64), simulated, approx, breakdown_sigma(T), math.log(T))


# ---------------------------------------------------------------- two keys, exactly (step 7)


def _log_chi_density(u: torch.Tensor, d_k: int) -> torch.Tensor:
    """log of the χ(d_k) density of u = ‖q‖: u^{d−1} e^{−u²/2} / (2^{d/2−1} Γ(d/2))."""
    d = d_k
    return (d - 1) * u.clamp_min(1e-300).log() - u**2 / 2 - (d / 2 - 1) * math.log(2) - math.lgamma(d / 2)


def gap_threshold(weight: float = SATURATED) -> float:
    """The score gap above which the larger of two weights exceeds `weight`: ln(w/(1−w))."""
    return math.log(weight / (1 - weight))


def two_key_exact(d_k: int, scale: float, points: int = 4001) -> float:
    """P(max p > 0.99) over two keys, exact up to quadrature (card 3, step 7).

    Given q, the gap α q·(k₁ − k₂) is N(0, 2α²‖q‖²), so the two-sided tail is
    2Φ(−ln 99 / (α√2 ‖q‖)); average it over u = ‖q‖ ~ χ(d_k) by Simpson's rule on [0, √d_k + 12]
    (the χ density is smooth in u even at d_k = 1, unlike the χ² density in ‖q‖²)."""
    check_d_k(d_k)
    u = torch.linspace(0.0, math.sqrt(d_k) + 12.0, points, dtype=F64)
    density = _log_chi_density(u, d_k).exp()
    if d_k > 1:
        density[0] = 0.0
    tail = 2 * torch.special.ndtr(-gap_threshold() / (scale * math.sqrt(2) * u.clamp_min(1e-300)))
    return _simpson(density * tail, float(u[1] - u[0]))


def _simpson(y: torch.Tensor, h: float) -> float:
    """Composite Simpson's rule over an odd number of equally spaced samples."""
    return float(h / 3 * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum()))


def two_key_gaussian(d_k: int, scale: float) -> float:
    """The approximation ‖q‖² ≈ d_k: 2Φ(−ln 99 / (α √(2 d_k)))."""
    return float(
        2 * torch.special.ndtr(torch.tensor(-gap_threshold() / (scale * math.sqrt(2 * d_k)), dtype=F64))
    )


@dataclass(frozen=True)
class TwoKeySimulation:
    share: float  # share of draws whose top weight exceeds 0.99
    standard_error: float  # √(p(1−p)/n)
    n: int


def two_key_gaps(d_k: int, n: int, seed: int) -> torch.Tensor:
    """n draws of q, k₁, k₂ ~ N(0, I_{d_k}) (real vectors, no distributional shortcut) -> the
    unscaled score gaps q·(k₁ − k₂), (n,). One draw serves every scale α."""
    check_d_k(d_k)
    check_pairs(3 * n, d_k)
    q, k1, k2 = torch.randn(3, n, d_k, generator=generator(seed), dtype=F64)
    return (q * (k1 - k2)).sum(-1)


def two_key_share(gaps: torch.Tensor, scale: float) -> TwoKeySimulation:
    """The share of gaps with |α gap| > ln 99, i.e. of two-key rows whose top weight exceeds 0.99."""
    n = gaps.numel()
    share = float(((scale * gaps).abs() > gap_threshold()).double().mean())
    return TwoKeySimulation(share, math.sqrt(max(share * (1 - share), 1.0 / n) / n), n)


def two_key_simulated(d_k: int, scale: float, n: int, seed: int) -> TwoKeySimulation:
    """n draws of q, k₁, k₂ ~ N(0, I_{d_k}); the share with |α q·(k₁ − k₂)| > ln 99."""
    return two_key_share(two_key_gaps(d_k, n, seed), scale)


def tied_moments(d_k: int, sigma: float, scale: float) -> tuple[float, float]:
    """Mean and variance of α ‖x‖² for x ~ N(0, σ² I_{d_k}) (the tied-Q/K slip): ‖x‖²/σ² is
    χ²(d_k), mean d_k and variance 2d_k, so α d_k σ² and α² 2 d_k σ⁴."""
    return scale * d_k * sigma**2, scale**2 * 2 * d_k * sigma**4
