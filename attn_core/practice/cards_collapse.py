"""Drills for card 17: a uniform head's variance σ_v²/T, and the doubly exponential rank collapse
of pure attention stacks. They link to the "one head" page.

Each answer is the card's closed form, worked out here from the drawn numbers; the slips are the
same formula with one recognisable step done wrong. `WORKED` holds the card's own check numbers.
"""

from __future__ import annotations

import math

import numpy as np

from attn_core.practice.page_links import COLLAPSE
from attn_core.practice.page_links import one_head_link as link
from attn_core.practice.question import Difficulty, Question, Worked, asks, fmt, variant_drill
from attn_core.theory.collapse import uniform_head_variance


# -- card 17: uniform heads and rank collapse ---------------------------------------------------------------
@asks("17", "A uniform head averages the values", hint="a number, e.g. 2.44e-4")
def uniform_question(T: int, sigma_v: float) -> Worked:
    answer = uniform_head_variance(T, sigma_v)  # the What-one-head page's own formula
    return Worked(
        prompt=(
            f"A head puts weight 1/T on each of T = {T:,} values whose coordinates are independent with "
            "standard "
            f"deviation σ_v = {fmt(sigma_v)}. What is the variance of one output coordinate?"
        ),
        answer=answer,
        steps=(
            "Var((1/T) Σ v_j) = (1/T²) Σ Var(v_j) = T σ_v² / T² = σ_v²/T: independent variances add.",
            f"{fmt(sigma_v**2)} / {T:,} = {fmt(answer)}: the mean is the most diluted summary, not the best "
            "one.",
        ),
        slips={
            "used σ_v where σ_v² belongs": sigma_v / T,
            "divided by √T (gave a standard error's scale)": sigma_v**2 / math.sqrt(T),
            "gave the standard deviation σ_v/√T": sigma_v / math.sqrt(T),
            "no shrinkage (σ_v²)": sigma_v**2,
        },
        link=link(COLLAPSE),
    )


def uniform(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    T = int(
        rng.choice([64, 256, 1024, 4096] if difficulty is not Difficulty.HARD else [100, 500, 3000, 8192])
    )
    return uniform_question(
        T, 1.0 if difficulty is Difficulty.EASY else float(rng.choice([0.5, 2.0, 3.0, 0.1]))
    )


@asks("17", "Rank collapse is doubly exponential", hint="a number, scientific notation welcome, e.g. 2.2e-6")
def collapse_bound_question(C: float, r0: float, L: int) -> Worked:
    u0 = math.sqrt(C) * r0
    answer = u0 ** (3**L) / math.sqrt(C)
    return Worked(
        prompt=(
            f"A stack of pure attention layers obeys r_{{l+1}} ≤ C r_l³ with C = {fmt(C)}, starting from "
            f"r_0 = {fmt(r0)}. "
            f"What bound does that give on r_{L}, the distance from 'all tokens identical' after {L} layers?"
        ),
        answer=answer,
        steps=(
            "Rescale u = √C r: u_{l+1} = √C r_{l+1} ≤ √C · C r_l³ = u_l³, so u_L ≤ u_0^{3^L}.",
            f"u_0 = √C r_0 = {u0:.4f}; 3^L = {3**L}; r_L ≤ C^{{−1/2}} u_0^{{3^L}} = {fmt(answer)}.",
            "Once u_0 < 1 the exponent triples every layer: doubly exponential in depth.",
        ),
        slips={
            "used 3L, not 3^L, as the exponent": u0 ** (3 * L) / math.sqrt(C),
            "dropped the C^{−1/2} in front": u0 ** (3**L),
            "forgot to rescale (r_0^{3^L})": r0 ** (3**L),
        },
        link=link(COLLAPSE, layers=L),
    )


def collapse_bound(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    C = float(rng.choice([0.5, 1.0, 2.0] if difficulty is not Difficulty.HARD else [0.6, 0.8, 1.2, 1.5]))
    r0 = round(float(rng.uniform(0.3, 0.95)) / math.sqrt(C), 2)
    return collapse_bound_question(C, r0, int(rng.integers(2, 4 if difficulty is Difficulty.EASY else 6)))


@asks("17", "Reading a cubic collapse off the measurements", hint="a number, e.g. 0.57")
def cubic_ratio_question(r: float, r_next: float, layer: int) -> Worked:
    ratio = r_next / r**3
    return Worked(
        prompt=(
            f"A pure-attention stack measures r_{layer} = {fmt(r)} and r_{layer + 1} = {fmt(r_next)}. If "
            "the layer "
            f"obeys r_{{l+1}} ≈ C r_l³, what is its C, r_{layer + 1}/r_{layer}³?"
        ),
        answer=ratio,
        steps=(
            "The logit's cross term is O(r²) and multiplies a residual O(r): the output residual is O(r³).",
            f"{fmt(r_next)} / {fmt(r)}³ = {fmt(r_next)} / {fmt(r**3)} = {fmt(ratio)}: of order 1, as a "
            "cubic law predicts.",
        ),
        slips={"took the plain ratio r_{l+1}/r_l": r_next / r, "divided by r_l², not r_l³": r_next / r**2},
        link=link(COLLAPSE),
    )


def cubic_ratio(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    r = round(float(rng.uniform(0.1, 0.9)), 3)
    r_next = float(f"{float(rng.uniform(0.4, 1.5)) * r**3:.3g}")
    return cubic_ratio_question(r, r_next, int(rng.integers(0, 6)))


WORKED = (  # the card's own numbers
    lambda: uniform_question(4096, 1.0),  # 2.44e-4
    lambda: cubic_ratio_question(0.783, 0.273, 1),  # 0.57
    lambda: cubic_ratio_question(0.273, 0.0126, 2),  # 0.62
    lambda: cubic_ratio_question(0.0126, 2.2e-6, 3),  # 1.10
)


DRILLS = (
    variant_drill(
        "17", "Uniform attention and rank collapse", (uniform, collapse_bound, cubic_ratio), WORKED
    ),
)
