"""The Scaling page's sinks section (card 18): how large a logit advantage a sink needs, or a
QK-norm head's gain, for a target share of the attention at T keys; the cap a gain allows; the
eviction experiment; every closed form checked by softmaxing the rows it describes.
attn_core.views.scaling registers `sinks_view` as the section's builder."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_core.oracle import IDENTITY_TOL, Check
from attn_core.theory import sinks
from attn_core.views.scaling_inputs import ScalingInputs

SINK_TABLE_T = (128, 1024, 4096)  # card 18's sequence lengths
CAP_MAX_GAIN = 10.0  # the cap curves run over g ∈ [0, 10]: at T = 4,096 the cap reaches 0.9 at 5.26
CAP_POINTS = 101


@dataclass(frozen=True)
class SinksView:
    T: int
    advantage_for_target: float  # a = ln(w (T − 1)/(1 − w))
    weight_for_advantage: float  # e^a/(e^a + T − 1)
    cap: float  # QK-norm cap at the user's gain
    gain_for_target: float  # ½ ln(w (T − 1)/(1 − w))
    bandwidth: float  # 1/√g at the user's gain
    usual_gain: float  # 1/√d_k: unit vectors under the usual scale
    usual_cap: float
    usual_bandwidth: float
    table: list[dict]  # card 18's T = 128, 1,024, 4,096
    gains: list[float]  # g from 0 to CAP_MAX_GAIN
    caps: dict[str, list[float]]  # "T = …" -> the cap at each gain, for card 18's T and the user's
    eviction: sinks.EvictionResult
    checks: list[Check]
    inputs: ScalingInputs  # what it was computed from, validated


def _softmax_round_trips(x: ScalingInputs, a: float, g_target: float) -> list[Check]:
    """Build the rows the formulas describe and softmax them: an independent oracle."""
    row = torch.zeros(x.T, dtype=torch.float64)
    row[0] = a
    w = float(torch.softmax(row, 0)[0])
    qk = torch.full((x.T,), -g_target, dtype=torch.float64)
    qk[0] = g_target  # q̂·k̂ = 1 for one key and −1 (k̂ = −q̂) for the others, times the gain
    top = float(torch.softmax(qk, 0)[0])
    best = max(x.target_weight, 1 / x.T)  # at g = 0 every weight is 1/T
    return [
        Check(
            "softmax of [a, 0, …, 0] gives the target weight",
            abs(w - x.target_weight) <= IDENTITY_TOL,
            f"{w:.12f}",
        ),
        Check(
            "the gain's best-case row reaches the target exactly",
            abs(top - best) <= IDENTITY_TOL,
            f"{top:.12f}",
        ),
    ]


def sinks_view(x: ScalingInputs) -> SinksView:
    a = sinks.sink_advantage(x.target_weight, x.T)
    g_target = sinks.qk_norm_gain(x.target_weight, x.T)
    usual = x.d_k**-0.5
    table = [
        {
            "T": t,
            "advantage for the target": sinks.sink_advantage(x.target_weight, t),
            "weight at the chosen a": sinks.sink_weight(x.advantage, t),
            "cap at the chosen g": sinks.qk_norm_cap(x.gain, t),
            "gain for the target": sinks.qk_norm_gain(x.target_weight, t),
        }
        for t in SINK_TABLE_T
    ]
    eviction = sinks.eviction_experiment(x.tokens, x.window, x.target_weight, seed=x.seed)
    gains = [CAP_MAX_GAIN * i / (CAP_POINTS - 1) for i in range(CAP_POINTS)]
    caps = {f"T = {t:,}": [sinks.qk_norm_cap(g, t) for g in gains] for t in sorted({*SINK_TABLE_T, x.T})}
    return SinksView(
        x.T,
        a,
        sinks.sink_weight(x.advantage, x.T),
        sinks.qk_norm_cap(x.gain, x.T),
        g_target,
        sinks.kernel_bandwidth(x.gain),
        usual,
        sinks.qk_norm_cap(usual, x.T),
        sinks.kernel_bandwidth(usual),
        table,
        gains,
        caps,
        eviction,
        _softmax_round_trips(x, a, g_target),
        x,
    )
