"""The Scaling page's inputs (`ScalingInputs`): their defaults, their checks (`validate`, the
message a page shows next to a widget) and the caps they are held to (attn_core.limits.THEORY).
Shared by the page's view (attn_core.views.scaling) and its sinks section (scaling_sinks)."""

from __future__ import annotations

from dataclasses import dataclass

from attn_core.limits import THEORY, check_range
from attn_core.theory import alignment, scaling, sinks
from attn_core.theory.scaling import ScaleRule

PAIRS = 4000  # (q, k) pairs of the histogram: the variance's SE is ~2.3% of it
MAX_D_K, MAX_KEYS = THEORY.max_d_k, THEORY.max_keys  # the sidebar's caps


@dataclass(frozen=True)
class ScalingInputs:
    d_k: int = 128
    sigma_q: float = 1.0
    sigma_k: float = 1.0
    T: int = 4096
    rho: float = 0.5
    rule: ScaleRule = ScaleRule.SQRT
    seed: int = 0
    slip: str | None = None  # an id of attn_core.slips.scaling.SLIPS
    target_weight: float = 0.9  # card 18: the share a sink (or a QK-norm head) should reach
    advantage: float = 5.0  # a sink's logit advantage a
    gain: float = 5.0  # QK-norm gain g
    tokens: int = 256  # eviction experiment: sequence length
    window: int = 32  # eviction experiment: cache budget


def pairs(d_k: int) -> int:
    """PAIRS, or fewer at wide heads so that q and k together stay under THEORY.max_entries."""
    return min(PAIRS, THEORY.max_entries // (2 * d_k))


def validate(inputs: ScalingInputs) -> ScalingInputs:
    """Every input checked with the message a page shows next to its widget (ValueError)."""
    scaling.check_d_k(inputs.d_k)
    scaling.check_sigma("σ_q", inputs.sigma_q)
    scaling.check_sigma("σ_k", inputs.sigma_k)
    check_range("T (keys)", inputs.T, 2, THEORY.max_keys)
    alignment.check_rho(inputs.rho)
    sinks.check_weight(inputs.target_weight)
    return inputs
