"""Drills for card 3: the variance of q·k, the entropy it buys, effective keys, and how often a
two-key row saturates. They link to the Scaling page.

Each answer is the card's closed form, worked out here from the drawn numbers (plain `math`); the
slips are the same formula with one recognisable step done wrong. `WORKED` holds the card's own
check numbers as fixed questions.
"""

from __future__ import annotations

import math

import numpy as np

from attn_core.practice.page_links import ENTROPY, RULES, TWO_KEYS, VARIANCE
from attn_core.practice.page_links import scaling_link as link
from attn_core.practice.question import CardDrill, Difficulty, Question, Worked, asks, fmt, pick_variant, vec
from attn_core.theory.scaling import two_key_gaussian, variance_theory

LN99 = math.log(99)  # two keys: the top weight passes 0.99 when the gap passes ln 99
# Entropies are asked to three decimals: the 1/d_k row (8.314) and the maximum ln T (8.318) differ in
# the fourth significant digit, which a relative 0.5% would not see.
NATS = {"rel_tol": 1e-4, "abs_tol": 5e-4, "hint": "nats, to three decimals, e.g. 7.818"}


def phi(x: float) -> float:
    """The standard normal CDF Φ."""
    return 0.5 * math.erfc(-x / math.sqrt(2))


def draw_d_k(rng: np.random.Generator, difficulty: Difficulty) -> int:
    widths = {
        Difficulty.EASY: (64, 128),
        Difficulty.MEDIUM: (16, 32, 64, 128, 256),
        Difficulty.HARD: (8, 24, 96, 384, 1024),
    }
    return int(rng.choice(widths[difficulty]))


def _sigma(rng: np.random.Generator, difficulty: Difficulty) -> float:
    if difficulty is Difficulty.EASY:
        return 1.0
    if difficulty is Difficulty.MEDIUM:
        return float(rng.choice([0.5, 1.0, 1.5, 2.0]))
    return round(float(rng.uniform(0.3, 2.5)), 1)


# -- card 3: Var(q·k) = d_k σ_q² σ_k² ------------------------------------------------------------------
@asks("3", "Var(q·k) = d_k σ_q² σ_k², hence 1/√d_k", hint="a number, e.g. 128")
def variance_question(d_k: int, sigma_q: float, sigma_k: float, rule: str = "none (1)") -> Worked:
    alpha = RULES[rule](d_k)
    raw = d_k * sigma_q**2 * sigma_k**2
    var = variance_theory(d_k, sigma_q, sigma_k, alpha)  # the Scaling page's own closed form
    scaled = "" if rule == "none (1)" else f" after the scale α = {rule}"
    return Worked(
        prompt=(
            f"A query and a key have d_k = {d_k} independent components with mean 0, standard deviations "
            f"σ_q = {fmt(sigma_q)} and σ_k = {fmt(sigma_k)}. What is the variance of their dot "
            f"product{scaled}?"
        ),
        answer=var,
        steps=(
            "q·k = Σ_c q_c k_c, a sum of d_k products. Each has mean 0 and variance E[q_c²]E[k_c²] = "
            "σ_q²σ_k² "
            "(independent factors), and the products are independent, so the variances add: d_k σ_q² σ_k².",
            f"d_k σ_q² σ_k² = {d_k} × {fmt(sigma_q**2)} × {fmt(sigma_k**2)} = {fmt(raw)}.",
            f"A constant factor α multiplies the variance by α²: α² = {fmt(alpha**2, 6)}, so {fmt(var)}. "
            "Only "
            "1/(√d_k σ_q σ_k) brings it back to 1, which is why normalisation layers keep σ near 1.",
        ),
        slips={
            "forgot to square the scale (α, not α²)": alpha * raw,
            "used the standard deviations σ_q σ_k where the variances belong": alpha**2
            * d_k
            * sigma_q
            * sigma_k,
            "gave the standard deviation, not the variance": math.sqrt(var),
            "added the component variances (σ_q² + σ_k²)": alpha**2 * d_k * (sigma_q**2 + sigma_k**2),
            "left the scale out": raw,
        },
        link=link(VARIANCE, dk=d_k, sq=sigma_q, sk=sigma_k, rule=rule),
    )


def variance(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    rules = ("none (1)", "1/√d_k") if difficulty is Difficulty.EASY else tuple(RULES)
    return variance_question(
        draw_d_k(rng, difficulty), _sigma(rng, difficulty), _sigma(rng, difficulty), str(rng.choice(rules))
    )


@asks("3", "Entropy of Gaussian logits", **NATS)
def entropy_question(T: int, sigma_s: float | None = None, d_k: int | None = None, rule: str = "") -> Worked:
    """H ≈ ln T − σ_s²/2, with σ_s given, or set by unit-variance q, k at width d_k under ``rule``."""
    if sigma_s is None:
        var_s = RULES[rule](d_k) ** 2 * d_k
        given = (
            f"the logits are α q·k with α = {rule}, d_k = {d_k}, and q, k with independent unit-variance "
            "components"
        )
        spread = f"σ_s² = α² d_k = {fmt(var_s, 6)} (Card 3)"
    else:
        var_s = sigma_s**2
        given = f"the logits are Gaussian across the keys with spread σ_s = {fmt(sigma_s)}"
        spread = f"σ_s² = {fmt(var_s)}"
    H = math.log(T) - var_s / 2
    slips = {
        "forgot the ½ (ln T − σ_s²)": math.log(T) - var_s,
        "subtracted σ_s/2, not σ_s²/2": math.log(T) - math.sqrt(var_s) / 2,
        "worked in bits (log₂ T − σ_s²/2)": math.log2(T) - var_s / 2,
        "gave the maximum ln T (a uniform row)": math.log(T),
    }
    if d_k is not None and rule != "none (1)":
        slips["used the unscaled spread σ_s² = d_k"] = math.log(T) - d_k / 2
    return Worked(
        prompt=(
            f"One attention row over T = {T:,} keys; {given}. About how many nats of entropy does the row "
            "have?"
        ),
        answer=H,
        steps=(
            "H = log Σ e^{s_j} − Σ p_j s_j. With many keys the sums become averages: Σ e^{s_j} ≈ T "
            "e^{σ²/2} and "
            "Σ p_j s_j ≈ E[s e^s]/E[e^s] = σ², so H ≈ ln T + σ²/2 − σ² = ln T − σ²/2.",
            f"{spread}; ln {T:,} = {math.log(T):.4f}.",
            f"H ≈ {math.log(T):.4f} − {fmt(var_s / 2, 6)} = {H:.4f} nats, i.e. e^H ≈ {fmt(math.exp(H))} "
            "effective keys. "
            f"Valid while σ_s is well below √(2 ln T) = {math.sqrt(2 * math.log(T)):.3f}.",
        ),
        slips=slips,
        link=link(
            ENTROPY,
            T=T,
            **({"dk": d_k, "rule": rule} if d_k else {"sq": sigma_s, "sk": 1.0, "rule": "1/√d_k"}),
        ),
    )


def entropy(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    T = int(rng.choice([256, 1024, 2048, 4096]))
    if rng.random() < 0.5:
        return entropy_question(T, d_k=draw_d_k(rng, difficulty), rule=str(rng.choice(["1/√d_k", "1/d_k"])))
    edge = math.sqrt(2 * math.log(T))  # keep σ_s ≤ edge/2, where the approximation holds
    top = {Difficulty.EASY: 1.0, Difficulty.MEDIUM: 1.5, Difficulty.HARD: edge / 2}[difficulty]
    return entropy_question(T, sigma_s=round(float(rng.uniform(0.2, top)), 1))


@asks("3", "Where ln T − σ²/2 breaks", hint="a number, e.g. 4.08")
def edge_question(T: int) -> Worked:
    edge = math.sqrt(2 * math.log(T))
    return Worked(
        prompt=(
            "The approximation H ≈ ln T − σ_s²/2 holds only while σ_s is well below the largest value a "
            "standard "
            f"normal reaches among T = {T:,} draws. What is that scale, √(2 ln T)?"
        ),
        answer=edge,
        steps=(
            "The largest of T standard normals is about √(2 ln T). Once σ_s is comparable, the top logit "
            "pulls away "
            "from the bulk, the sums stop behaving like averages and the row saturates.",
            f"√(2 ln {T:,}) = √(2 × {math.log(T):.4f}) = {edge:.4f}. Unscaled logits at d_k = 128 have σ_s "
            "= 11.3, far past it.",
        ),
        slips={
            "forgot the 2 (√(ln T))": math.sqrt(math.log(T)),
            "forgot the square root (2 ln T)": 2 * math.log(T),
            "used log₂ (√(2 log₂ T))": math.sqrt(2 * math.log2(T)),
        },
        link=link(ENTROPY, T=T),
    )


def edge(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    return edge_question(int(rng.choice([16, 128, 512, 1000, 2048, 4096])))


@asks("3", "Entropy and effective keys", hint="a number, e.g. 1.63")
def effective_keys_question(
    weights: tuple[float, ...] | None = None, entropy_nats: float | None = None
) -> Worked:
    if weights is not None:
        p = np.asarray(weights, dtype=np.float64)
        H = float(-(p * np.log(p)).sum())
        given, work = f"weights p = {vec(weights)}", f"H = −Σ p_j ln p_j = {H:.4f} nats"
    else:
        H = float(entropy_nats)
        given, work = f"entropy H = {fmt(H)} nats", f"H = {fmt(H)}"
    slips = {"raised 2, not e, to the entropy in nats (2^H)": 2**H, "gave the entropy itself": H}
    if weights is not None:
        slips["used the participation ratio 1/Σp², a different count"] = float(1 / (p**2).sum())
    return Worked(
        prompt=f"An attention row has {given}. How many effective keys is that (e^H)?",
        answer=math.exp(H),
        steps=(
            "A uniform row over n keys has entropy ln n, so e^H counts the keys a row behaves as if it "
            "spread over: "
            "1 for one-hot, T for uniform.",
            f"{work}; e^H = {math.exp(H):.4f}.",
        ),
        slips=slips,
        link=link(ENTROPY),
        inputs={"weights": weights, "H": H},
    )


def effective_keys(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    if difficulty is Difficulty.EASY:
        return effective_keys_question(entropy_nats=round(float(rng.uniform(0.1, 3.0)), 2))
    n = int(rng.integers(3, 6 if difficulty is Difficulty.MEDIUM else 8))
    cuts = np.sort(rng.choice(np.arange(1, 100), size=n - 1, replace=False))
    pct = np.diff(np.concatenate([[0], cuts, [100]]))
    return effective_keys_question(weights=tuple(float(x) / 100 for x in pct))


@asks(
    "3",
    "Two keys: how often a row saturates",
    rel_tol=1e-2,
    hint="a probability, e.g. 0.774 (Φ from a table is close enough: ±1%)",
)
def two_keys_question(d_k: int, rule: str) -> Worked:
    alpha = RULES[rule](d_k)
    sd = alpha * math.sqrt(2 * d_k)  # the gap α q·(k₁ − k₂) with ‖q‖² replaced by its mean d_k
    answer = two_key_gaussian(d_k, alpha)  # 2Φ(−ln 99 / sd), as the Scaling page computes it
    return Worked(
        prompt=(
            f"Two keys, d_k = {d_k}, unit-variance independent q, k₁, k₂, "
            f"{'no scale (α = 1)' if rule == 'none (1)' else f'scale α = {rule}'}. Replacing ‖q‖² by its "
            "mean "
            "d_k (the Gaussian approximation), what is the probability that the top weight exceeds 0.99?"
        ),
        answer=answer,
        steps=(
            "With two keys, max p > 0.99 exactly when |s₁ − s₂| > ln 99 = 4.595.",
            "Given q, the gap α qᵀ(k₁ − k₂) is normal with variance 2α²‖q‖²; with ‖q‖² ≈ d_k its sd is "
            "α√(2 d_k).",
            f"sd = {sd:.4f}; P = 2Φ(−ln 99 / sd) = 2Φ({-LN99 / sd:.4f}) = {fmt(answer)}.",
            "Averaging the tail over ‖q‖² ~ χ²_{d_k} instead gives the exact value; at d_k = 128 the card "
            "has "
            "0.773 (unscaled) and 0.00135 (scaled) against this approximation's 0.774 and 0.00116.",
        ),
        slips={
            "took one tail (Φ, not 2Φ)": answer / 2,
            "gave the gap variance α² d_k (one key's, not the difference of two)": 2
            * phi(-LN99 / (alpha * math.sqrt(d_k))),
        },
        link=link(TWO_KEYS, dk=d_k, rule=rule),
    )


def two_keys(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    return two_keys_question(draw_d_k(rng, difficulty), str(rng.choice(["none (1)", "1/√d_k"])))


WORKED = (  # the card's own numbers
    lambda: variance_question(128, 1.0, 1.0),  # 128 (sd 11.3)
    lambda: variance_question(64, 1.5, 0.5),  # 36
    lambda: entropy_question(4096, sigma_s=1.0),  # 7.818
    lambda: entropy_question(4096, sigma_s=2.0),  # 6.32
    lambda: entropy_question(4096, d_k=128, rule="1/d_k"),  # 8.314
    lambda: edge_question(4096),  # 4.08
    lambda: effective_keys_question(entropy_nats=0.49),  # 1.63
    lambda: two_keys_question(128, "none (1)"),  # 0.774
    lambda: two_keys_question(128, "1/√d_k"),  # 0.00116
)


def card3(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    makers = (variance, entropy, effective_keys, edge)
    return pick_variant(
        rng, difficulty, (*makers, two_keys) if difficulty is not Difficulty.EASY else makers, WORKED
    )


DRILLS = (CardDrill("3", "Var(q·k) = d_k σ_q²σ_k², entropy, effective keys", card3, WORKED[0]),)
