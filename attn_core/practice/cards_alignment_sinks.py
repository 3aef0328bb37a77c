"""Drills for the rest of the scale chain: aligned queries and μP's 1/d_k (16), attention sinks and
QK-norm (18). They link to the Scaling page.

Each answer is the card's closed form, worked out here from the drawn numbers (plain `math`); the
slips are the same formula with one recognisable step done wrong. `WORKED` holds the cards' own
check numbers as fixed questions.
"""

from __future__ import annotations

import math

import numpy as np

from attn_core.practice.cards_variance import draw_d_k
from attn_core.practice.page_links import ALIGNMENT, RULES, SINKS
from attn_core.practice.page_links import scaling_link as link
from attn_core.practice.question import Difficulty, Question, Worked, asks, fmt, variant_drill
from attn_core.theory import sinks as sink_theory
from attn_core.theory.alignment import aligned_moments


# -- card 16: aligned q and k ----------------------------------------------------------------------------
@asks("16", "When 1/√d_k is wrong: alignment and μP's 1/d_k", abs_tol=5e-4, hint="a number, e.g. 5.66")
def alignment_question(d_k: int, rho: float, rule: str, ask: str) -> Worked:
    """k = ρq + √(1 − ρ²) z: E[q·k] = ρ d_k and Var(q·k) = d_k(1 + ρ²); ``ask`` is "mean" or "sd"."""
    alpha = RULES[rule](d_k)
    moments = aligned_moments(d_k, rho, alpha)  # the Scaling page's own closed form
    mean, sd = moments.mean, moments.sd
    other = "1/d_k" if rule == "1/√d_k" else "1/√d_k"
    slips = (
        {
            "left the scale out (ρ d_k)": rho * d_k,
            f"used the other scale ({other})": RULES[other](d_k) * rho * d_k,
            "assumed q and k independent (mean 0, Card 3)": 0.0,
        }
        if ask == "mean"
        else {
            "treated ‖q‖² as the constant d_k (dropped its variance 2d_k)": alpha
            * math.sqrt(d_k * (1 - rho**2)),
            "used Card 3's independent answer (variance d_k)": alpha * math.sqrt(d_k),
            "gave the variance, not the standard deviation": sd**2,
        }
    )
    return Worked(
        prompt=(
            f"q has d_k = {d_k} standard-normal components and the key is aligned with it: k = ρq + √(1 − "
            "ρ²) z with "
            f"ρ = {fmt(rho)} and z standard normal, independent of q. What is the "
            f"{'mean' if ask == 'mean' else 'standard deviation'} "
            f"of the logit α q·k with α = {rule}?"
        ),
        answer=mean if ask == "mean" else sd,
        steps=(
            "Mean: E[q·k] = ρ E‖q‖² + √(1 − ρ²) E[q·z] = ρ d_k.",
            "Variance: ‖q‖² is χ²_{d_k} with variance 2d_k; q·z has variance d_k; the two are uncorrelated "
            "(flip z's sign), "
            "so Var(q·k) = ρ² · 2d_k + (1 − ρ²) d_k = d_k(1 + ρ²).",
            f"With α = {rule} = {fmt(alpha, 5)}: mean α ρ d_k = {fmt(mean)}, sd α √(d_k(1 + ρ²)) = "
            f"{fmt(sd)}. "
            "Under 1/√d_k the mean grows like √d_k while the noise stays put; under 1/d_k the mean stays ρ.",
        ),
        slips=slips,
        link=link(ALIGNMENT, dk=d_k, rho=rho, rule=rule),
    )


def alignment(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    rhos = {
        Difficulty.EASY: [0.5, 1.0],
        Difficulty.MEDIUM: [round(0.1 * i, 1) for i in range(1, 11)],
        Difficulty.HARD: [round(float(x), 2) for x in rng.uniform(0.05, 1.0, 4)],
    }
    return alignment_question(
        draw_d_k(rng, difficulty),
        float(rng.choice(rhos[difficulty])),
        str(rng.choice(["1/√d_k", "1/d_k"])),
        str(rng.choice(["mean", "sd"])),
    )


# -- card 18: sinks and QK-norm ----------------------------------------------------------------------------
@asks(
    "18", "Attention sinks: the logit needed to park mass", abs_tol=5e-4, hint="a logit difference, e.g. 9.13"
)
def sink_advantage_question(T: int, w: float) -> Worked:
    a = sink_theory.sink_advantage(w, T)
    return Worked(
        prompt=(
            f"A row over T = {T:,} keys. By how much must a sink's logit beat each of the other T − 1 "
            f"(equal) logits for the sink to take {fmt(100 * w)}% of the weight?"
        ),
        answer=a,
        steps=(
            "Shift invariance: set the other T − 1 logits to 0 and the sink's to a, so w = e^a / (e^a + T "
            "− 1).",
            "Solve: w e^a + w(T − 1) = e^a ⇒ e^a = w(T − 1)/(1 − w) ⇒ a = ln(w(T − 1)/(1 − w)).",
            f"a = ln({fmt(w)} × {T - 1:,} / {fmt(1 - w)}) = {a:.4f}: it grows only like ln T, so a sink is "
            "cheap.",
        ),
        slips={
            "forgot the other keys (ln(w/(1 − w)))": math.log(w / (1 - w)),
            "counted T keys besides the sink, not T − 1": math.log(w * T / (1 - w)),
            "dropped the 1 − w (ln(w(T − 1)))": math.log(w * (T - 1)),
            "used log₁₀": math.log10(w * (T - 1) / (1 - w)),
        },
        link=link(SINKS, T=T, w=w),
    )


@asks(
    "18",
    "Attention sinks: the share a logit advantage buys",
    unit="%",
    hint="a percentage, e.g. 12.7 or 12.7%",
)
def sink_share_question(T: int, a: float) -> Worked:
    w = sink_theory.sink_weight(a, T)
    return Worked(
        prompt=(
            f"A sink's logit beats each of the other keys of a T = {T:,} row by a = {fmt(a)}. What "
            "percentage of the row's weight does it take?"
        ),
        answer=100 * w,
        steps=(
            "Set the other T − 1 logits to 0 (shift invariance) and the sink's to a: w = e^a / (e^a + T − "
            "1).",
            f"e^a = {fmt(math.exp(a))}; w = {fmt(math.exp(a))} / ({fmt(math.exp(a))} + {T - 1:,}) = "
            f"{100 * w:.4g}%.",
        ),
        slips={
            "gave a fraction, not a percentage": w,
            "forgot the other keys (the sigmoid 1/(1 + e^{−a}))": 100 / (1 + math.exp(-a)),
            "counted T other keys, not T − 1": 100 * math.exp(a) / (math.exp(a) + T),
        },
        link=link(SINKS, T=T, a=a),
    )


@asks("18", "QK-norm caps every weight", hint="a weight in (0, 1), e.g. 0.843 or 2.9e-4")
def qk_norm_cap_question(T: int, g: float, shown_g: str | None = None) -> Worked:
    cap = sink_theory.qk_norm_cap(g, T)
    return Worked(
        prompt=(
            f"QK-norm: every logit is g q̂·k̂ with unit-length q̂, k̂ and gain g = {shown_g or fmt(g)}. "
            f"Over T = {T:,} keys, "
            "what is the largest weight any key can get?"
        ),
        answer=cap,
        steps=(
            "Unit vectors put every logit in [−g, g]. A weight is largest when its own logit is g and all "
            "T − 1 others are −g.",
            f"max p = e^g / (e^g + (T − 1) e^{{−g}}) = {fmt(math.exp(g))} / ({fmt(math.exp(g))} + {T - 1:,} "
            f"× {fmt(math.exp(-g))}) "
            f"= {fmt(cap)}.",
        ),
        slips={
            "put the other logits at 0, not −g": math.exp(g) / (math.exp(g) + T - 1),
            "gave the uniform weight 1/T": 1 / T,
        },
        link=link(SINKS, T=T, g=f"{g:.6g}"),
        inputs={"T": T, "g": g},
    )


@asks("18", "The QK-norm gain a sharp head needs", abs_tol=5e-4, hint="a gain, e.g. 5.26")
def qk_norm_gain_question(T: int, w: float) -> Worked:
    g = sink_theory.qk_norm_gain(w, T)
    return Worked(
        prompt=f"With QK-norm over T = {T:,} keys, what is the smallest gain g that lets one key take {fmt(100 * w)}% of a row?",
        answer=g,
        steps=(
            "The cap is e^g / (e^g + (T − 1)e^{−g}) = e^{2g} / (e^{2g} + T − 1): a sink with advantage a = "
            "2g.",
            f"Set it to w: 2g = ln(w(T − 1)/(1 − w)) = {2 * g:.4f}, so g = {g:.4f}.",
        ),
        slips={
            "forgot the ½: gave the sink advantage a = 2g": 2 * g,
            "forgot the other keys (½ ln(w/(1 − w)))": 0.5 * math.log(w / (1 - w)),
        },
        link=link(SINKS, T=T, w=w),
    )


KEYS = {  # row lengths: within the Scaling page's 4,096 simulated keys, so its link loads them
    Difficulty.EASY: (128, 1024, 4096),
    Difficulty.MEDIUM: (16, 128, 512, 1024, 2048, 4096),
    Difficulty.HARD: (8, 24, 100, 777, 3000, 4095),
}


def _T(rng: np.random.Generator, difficulty: Difficulty) -> int:
    return int(rng.choice(KEYS[difficulty]))


def _w(rng: np.random.Generator, difficulty: Difficulty) -> float:
    if difficulty is Difficulty.HARD:
        return round(float(rng.uniform(0.3, 0.99)), 2)
    return float(rng.choice([0.5, 0.8, 0.9, 0.95, 0.99]))


def sinks(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    kind = int(rng.integers(4))
    T = _T(rng, difficulty)
    # Keep shares and caps at most 98% (advantage ≤ ln(T − 1) + 3.9): above that a 0.5% tolerance
    # would accept "100%" and the question stops asking anything.
    a_max = math.log(T - 1) + 3.9
    if kind == 0:
        return sink_advantage_question(T, _w(rng, difficulty))
    if kind == 1:
        if difficulty is Difficulty.EASY:
            return sink_share_question(T, float(rng.integers(1, int(a_max) + 1)))
        return sink_share_question(T, round(float(rng.uniform(0.5, a_max)), 1))
    if kind == 2:
        if difficulty is Difficulty.HARD:
            return qk_norm_cap_question(T, round(float(rng.uniform(0.1, a_max / 2)), 2))
        return qk_norm_cap_question(T, float(rng.choice([g for g in (0.5, 1, 2, 3, 4, 5) if g <= a_max / 2])))
    return qk_norm_gain_question(T, _w(rng, difficulty))


WORKED = {  # the cards' own numbers
    "16": (
        lambda: alignment_question(128, 1.0, "1/√d_k", "mean"),  # 11.3
        lambda: alignment_question(128, 1.0, "1/d_k", "mean"),  # 1.00
        lambda: alignment_question(128, 0.5, "1/√d_k", "mean"),  # 5.66
        lambda: alignment_question(128, 0.5, "1/√d_k", "sd"),  # 1.118
    ),
    "18": (
        lambda: sink_advantage_question(1024, 0.9),  # 9.13
        lambda: sink_advantage_question(128, 0.9),  # 7.04
        lambda: sink_advantage_question(4096, 0.9),  # 10.51
        lambda: sink_share_question(1024, 5.0),  # 12.7%
        lambda: qk_norm_cap_question(4096, 5.0),  # 0.843
        lambda: qk_norm_cap_question(4096, 1 / math.sqrt(128), "1/√128"),  # 2.9e-4
        lambda: qk_norm_gain_question(4096, 0.9),  # 5.26
    ),
}


DRILLS = (
    variant_drill("16", "Alignment and μP's 1/d_k", (alignment,), WORKED["16"]),
    variant_drill("18", "Attention sinks and QK-norm", (sinks,), WORKED["18"]),
)
