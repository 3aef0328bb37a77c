"""The slip of the variance experiment (card 3; the lesson's "tied-Q/K demo").

A slip takes the arguments of `attn_core.theory.scaling.sample_qk` (n, d_k, σ_q, σ_k, seed) and
returns the (q, k) pairs it would feed the variance experiment in place of independent ones.
"""

from __future__ import annotations

import torch

from attn_core.slips import Slip
from attn_core.theory.scaling import F64, generator


def tied_qk(n: int, d_k: int, sigma_q: float, sigma_k: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """q = k = x, x ~ N(0, σ_q² I) (σ_k is ignored: there is one vector). Each score is a
    self-score ‖x‖², mean d_k σ_q² and variance 2 d_k σ_q⁴, so the 1/√d_k-scaled score has mean
    √d_k σ_q² and variance 2σ_q⁴: the experiment never tests Var(q·k) = d_k σ_q² σ_k²."""
    x = sigma_q * torch.randn(n, d_k, generator=generator(seed), dtype=F64)
    return x, x


SLIPS: dict[str, Slip] = {
    "tied_qk": Slip(
        tied_qk,
        "q and k from one shared vector (Q = K = X)",
        "The 'variance demo' that sets Q = K = X measures self-scores ‖x‖²: their mean is d_k, not 0, "
        "so even after dividing by √d_k the mean grows like √d_k, and the variance is 2d_k, not d_k. "
        "The unit-variance argument assumes independent q and k; this demo never tests it.",
    ),
}
