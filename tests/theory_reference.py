"""Independent oracles of the scaling and one-head theory (numpy and scipy, no attn_core)."""

from __future__ import annotations

import math

import numpy as np

LN99 = math.log(99)  # the tails' 1 % two-sided level, as the scaling tests read them


def chi2_expectation(f, d_k: int) -> float:
    """E[f(x)], x = ‖q‖² ~ χ²(d_k), by the trapezoid rule in t = ln x (written here, unlike the
    module's Simpson's rule in ‖q‖): x·density(x) is smooth in t and decays doubly exponentially
    at both ends, so 20,001 points on [ln d − 40, ln d + 5] reach ~1e-15."""
    t = np.linspace(math.log(d_k) - 40, math.log(d_k) + 5, 20_001)
    x = np.exp(t)
    log_density = (d_k / 2 - 1) * np.log(x) - x / 2 - (d_k / 2) * math.log(2) - math.lgamma(d_k / 2)
    return float(np.trapezoid(f(x) * np.exp(log_density) * x, t))


def two_sided_tail(alpha: float):
    erfc = np.vectorize(math.erfc)
    return lambda x: erfc(LN99 / (alpha * np.sqrt(2 * x)) / math.sqrt(2))  # 2Φ(−z) = erfc(z/√2)


def nw_numpy(x_query: np.ndarray, x_data: np.ndarray, y: np.ndarray, lam: float, extra=None) -> np.ndarray:
    """Σ_j w_j y_j / Σ_j w_j with w_j = exp(−(x − x_j)²/2λ²) · extra_j, one query at a time."""
    out = []
    for xq in x_query:
        w = np.exp(-((xq - x_data) ** 2) / (2 * lam**2))
        if extra is not None:
            w = w * extra
        out.append((w * y).sum() / w.sum())
    return np.array(out)
