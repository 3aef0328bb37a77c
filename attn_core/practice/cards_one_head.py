"""Drills for what one head can express: Nadaraya–Watson smoothing as attention (8), the rank bound
and the d_k = 1 head (10). They link to the "one head" page.

Each answer is the card's closed form worked out here from the drawn numbers. Card 8's estimate
goes through `attn_core.attention` itself: the key-length bias rides on one extra coordinate
(q' = (q/λ², 1), k' = (k, −‖k‖²/2λ²), scale 1), which is the card's statement made literal.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from attn_core.attention import attention
from attn_core.practice.page_links import KERNEL, RANK, SELECT
from attn_core.practice.page_links import one_head_link as link
from attn_core.practice.question import (
    AnswerKind,
    Difficulty,
    Question,
    Worked,
    asks,
    fmt,
    variant_drill,
    vec,
)


# -- card 8: Nadaraya–Watson is attention ---------------------------------------------------------------
def nw_as_attention(x: float, points, values, lam: float) -> float:
    """The estimate at ``x`` as dot-product attention at temperature λ² with bias −k²/2λ² per key."""
    k = torch.tensor(points, dtype=torch.float64)
    q = torch.tensor([[x / lam**2, 1.0]], dtype=torch.float64)
    keys = torch.stack([k, -(k**2) / (2 * lam**2)], dim=1)
    v = torch.tensor(values, dtype=torch.float64).reshape(-1, 1)
    return float(attention(q, keys, v, scale=1.0).output[0, 0])


def _plain(x: float, points, values, temperature: float) -> float:
    """Attention without the bias: softmax(x k_j / temperature) · y."""
    s = np.asarray(points) * x / temperature
    p = np.exp(s - s.max())
    return float(p @ np.asarray(values) / p.sum())


@asks("8", "Attention as Nadaraya–Watson kernel smoothing", abs_tol=5e-4, hint="a number, e.g. 0.412")
def nw_question(x: float, points: tuple[float, ...], values: tuple[float, ...], lam: float) -> Worked:
    answer = nw_as_attention(x, points, values, lam)
    bias = tuple(-(k**2) / (2 * lam**2) for k in points)
    logits = tuple(x * k / lam**2 + b for k, b in zip(points, bias, strict=True))
    return Worked(
        prompt=(
            f"Data points x_j = {vec(points)} with observations y_j = {vec(values)}. A Gaussian-kernel "
            f"Nadaraya–Watson smoother with bandwidth λ = {fmt(lam)} estimates the curve at x = {fmt(x)}. "
            "What is the estimate f̂(x)?"
        ),
        answer=answer,
        steps=(
            "The weights κ_j / Σκ are a softmax of log κ_j = −(x − x_j)²/2λ² = x x_j/λ² − x²/2λ² − x_j²/2λ².",
            "The x²/2λ² term is the same for every key and cancels: attention at temperature λ² with the "
            "per-key bias −x_j²/2λ².",
            f"Logits x x_j/λ² − x_j²/2λ² = {vec(logits)}; their softmax weighs y into f̂({fmt(x)}) = "
            f"{answer:.4f}.",
        ),
        slips={
            "dropped the key-length bias (plain attention at temperature λ²)": _plain(
                x, points, values, lam**2
            ),
            "used temperature λ, not λ² (bandwidth √λ)": nw_as_attention(x, points, values, math.sqrt(lam)),
        },
        link=link(KERNEL, lam=lam),
        inputs={"x": x, "points": points, "values": values, "lambda": lam},
    )


def nw_estimate(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    n = {Difficulty.EASY: 3, Difficulty.MEDIUM: 4, Difficulty.HARD: 6}[difficulty]
    points = tuple(float(v) for v in rng.choice(np.arange(-20, 21), size=n, replace=False) / 10)
    values = tuple(round(float(v), 1) for v in rng.uniform(-2, 2, size=n))
    lam = float(rng.choice([0.5, 1.0, 1.5] if difficulty is not Difficulty.HARD else [0.4, 0.7, 1.2, 2.0]))
    return nw_question(round(float(rng.uniform(-2, 2)), 1), points, values, lam)


@asks("8", "The key-length bias of a Gaussian kernel", abs_tol=5e-4, hint="a signed number, e.g. −2.5")
def bias_question(key: tuple[float, ...], lam: float) -> Worked:
    sq = sum(c * c for c in key)
    answer = -sq / (2 * lam**2)
    return Worked(
        prompt=(
            f"Written as dot-product attention at temperature λ² = {fmt(lam**2)} (bandwidth λ = "
            f"{fmt(lam)}), a "
            "Gaussian-kernel smoother adds a per-key bias to each logit. What is it for the key k = "
            f"{vec(key)}?"
        ),
        answer=answer,
        steps=(
            "−‖q − k‖²/2λ² = qᵀk/λ² − ‖q‖²/2λ² − ‖k‖²/2λ²; the query term cancels in the softmax, the key "
            "term stays.",
            f"‖k‖² = {fmt(sq)}; the bias is −{fmt(sq)} / (2 × {fmt(lam**2)}) = {fmt(answer)}. Equal-length "
            "keys "
            "(QK-norm) make it a constant, and then the smoother is plain attention.",
        ),
        slips={
            "flipped the sign (a bonus for long keys)": -answer,
            "forgot the 2 (−‖k‖²/λ²)": 2 * answer,
            "used λ, not λ² (−‖k‖²/2λ)": -sq / (2 * lam),
        },
        link=link(KERNEL, lam=lam),
        inputs={"key": key, "lambda": lam},
    )


def key_bias(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    dim = 2 if difficulty is not Difficulty.HARD else 3
    key = tuple(float(v) for v in rng.integers(-3, 4, size=dim))
    if not any(key):
        key = (1.0, *key[1:])
    lams = [0.5, 2.0] if difficulty is Difficulty.EASY else [0.5, 1.5, 2.0, 3.0]
    return bias_question(key, float(rng.choice(lams)))


@asks("8", "The bandwidth inside plain attention", hint="a bandwidth, e.g. 3.36")
def bandwidth_question(d_k: int | None = None, gain: float | None = None, shown: str = "") -> Worked:
    """The bandwidth plain attention amounts to, for equal-length keys: λ = d_k^{1/4} under 1/√d_k,
    λ = 1/√g under QK-norm's gain g."""
    if d_k is not None:
        lam, setting = d_k**0.25, f"scaled dot-product attention (1/√d_k) at d_k = {d_k}"
        work = f"1/λ² = 1/√d_k ⇒ λ = d_k^{{1/4}} = {d_k}^{{1/4}} = {d_k**0.25:.4f}"
        slips = {
            "gave the temperature √d_k, not the bandwidth": math.sqrt(d_k),
            "inverted it (d_k^{−1/4})": d_k**-0.25,
        }
    else:
        lam, setting = 1 / math.sqrt(gain), f"QK-norm logits g q̂·k̂ with gain g = {shown or fmt(gain)}"
        work = f"g q̂·k̂ = g − (g/2)‖q̂ − k̂‖² = const − ‖q̂ − k̂‖²/2λ² ⇒ λ = 1/√g = {lam:.4f}"
        slips = {"gave √g": math.sqrt(gain), "gave 1/g, the temperature": 1 / gain}
    return Worked(
        prompt=(
            f"All keys have the same length. Read as a Gaussian kernel smoother, {setting} has what "
            "bandwidth λ?"
        ),
        answer=lam,
        steps=(
            "Equal key lengths turn the bias into a constant; the logit's factor on qᵀk is then 1/λ².",
            work + ".",
        ),
        slips=slips,
        link=link(KERNEL),
        inputs={"d_k": d_k, "gain": gain},
    )


def bandwidth(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    if rng.random() < 0.5:
        return bandwidth_question(d_k=int(rng.choice([16, 64, 128, 256, 81, 625])))
    return bandwidth_question(gain=float(rng.choice([0.25, 0.5, 2.0, 4.0, 5.0, 9.0])))


# -- card 10: the rank bound and the d_k = 1 head ----------------------------------------------------------
RANK_OF = {
    "S": "the score matrix S = QKᵀ/√d_k",
    "log P": "log P (entry by entry)",
    "P": "the weight matrix P",
}


@asks("10", "The rank bound", rel_tol=0.0, hint="a whole number, e.g. 8")
def rank_question(T: int, d_k: int, which: str) -> Worked:
    answer = {"S": d_k, "log P": d_k + 1, "P": T}[which]
    slips = {
        "S": {"took the T × T score matrix for full rank": T},
        "log P": {"forgot the row logsumexp (log P = S − ℓ1ᵀ adds one)": d_k, "took log P for full rank": T},
        "P": {
            "put the bound on the weights; it is on the logits": d_k,
            "carried log P's bound to P": d_k + 1,
        },
    }[which]
    return Worked(
        prompt=(
            f"Self-attention over T = {T} tokens with d_k = {d_k}; Q and K have generic (random Gaussian) "
            "entries. "
            f"What is the rank of {RANK_OF[which]}?"
        ),
        answer=float(answer),
        steps=(
            "QKᵀ = Σ_c Q_{·c} K_{·c}ᵀ, a sum of d_k rank-1 outer products: rank(S) ≤ d_k (= d_k when "
            "generic).",
            "log P = S − ℓ1ᵀ, with ℓ the row logsumexps: one more rank-1 term, so rank(log P) ≤ d_k + 1.",
            f"The exponential is nonlinear, so P itself is generically full rank. Here: S {d_k}, log P "
            f"{d_k + 1}, P {T}.",
        ),
        slips=slips,
        link=link(RANK, T=T, dk=d_k),
    )


def rank(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    T = int(rng.integers(6, 17 if difficulty is Difficulty.EASY else 41))
    d_k = int(rng.integers(3, min(16, T - 2) + 1))  # d_k + 1 < T keeps the three answers apart
    return rank_question(T, d_k, str(rng.choice(list(RANK_OF))))


@asks("10", "Which key a d_k = 1 head selects", rel_tol=0.0, hint="a key index, e.g. 3")
def top_key_question(keys: tuple[float, ...], q: float) -> Worked:
    k = np.asarray(keys)
    answer = int(np.argmax(q * k))
    nearest = int(np.argmin(np.abs(k - q)))
    slips = {"ignored the query's sign (took the largest key)": float(np.argmax(k))}
    if nearest != answer:
        slips["picked the key nearest the query (a distance kernel, not a dot product)"] = float(nearest)
    return Worked(
        prompt=(
            f"A head with d_k = 1: the keys are k = {vec(keys)} and the query is q = {fmt(q)}. Which key "
            "(0-based) gets the largest weight?"
        ),
        answer=float(answer),
        steps=(
            "At d_k = 1 each score is a product, s_j = q k_j (times a positive scale).",
            "A positive query is maximised by the largest key, a negative one by the smallest; nearness "
            "does not enter.",
            f"q = {fmt(q)} is {'positive' if q > 0 else 'negative'}, so key {answer} (k = "
            f"{fmt(keys[answer])}) wins.",
        ),
        slips=slips,
        link=link(SELECT),
    )


@asks(
    "10",
    "The keys a d_k = 1 head can ever select",
    kind=AnswerKind.VECTOR,
    rel_tol=0.0,
    hint="the indices in increasing order, e.g. 1, 4",
)
def winners_question(keys: tuple[float, ...]) -> Worked:
    k = np.asarray(keys)
    answer = tuple(sorted({float(np.argmin(k)), float(np.argmax(k))}))
    return Worked(
        prompt=(
            f"A head with d_k = 1 and keys k = {vec(keys)}. Over every possible query, which keys (0-based) "
            "can be the top key?"
        ),
        answer=answer,
        steps=(
            "s_j = q k_j: q > 0 selects argmax k, q < 0 selects argmin k, q = 0 gives a uniform row.",
            f"argmin k = {int(np.argmin(k))}, argmax k = {int(np.argmax(k))}: at most two keys, however "
            "many queries. "
            "At d_k = 2, keys on a circle can all win.",
        ),
        slips={
            "thought every key can win": tuple(float(i) for i in range(len(keys))),
            "forgot negative queries (argmax only)": (float(np.argmax(k)),),
        },
        link=link(SELECT),
    )


def _keys(rng: np.random.Generator, difficulty: Difficulty) -> tuple[float, ...]:
    n = {Difficulty.EASY: 4, Difficulty.MEDIUM: 6, Difficulty.HARD: 8}[difficulty]
    return tuple(float(v) for v in rng.choice(np.arange(-30, 31), size=n, replace=False) / 10)


def selection(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    keys = _keys(rng, difficulty)
    if rng.random() < 0.5:
        return winners_question(keys)
    q = round(float(rng.uniform(0.2, 3.0)) * float(rng.choice([-1, 1])), 1)
    return top_key_question(keys, q)


WORKED = {  # the cards' own numbers
    "8": (
        lambda: bandwidth_question(d_k=128),  # λ = 128^{1/4} = 3.36
        lambda: bandwidth_question(gain=1 / math.sqrt(128), shown="1/√128"),  # 3.36
    ),
    "10": (
        lambda: rank_question(64, 8, "P"),  # 64
        lambda: rank_question(64, 8, "S"),  # 8
        lambda: rank_question(64, 8, "log P"),  # ≤ 9
    ),
}


DRILLS = (
    variant_drill(
        "8", "Attention as Nadaraya–Watson smoothing", (nw_estimate, key_bias, bandwidth), WORKED["8"]
    ),
    variant_drill("10", "The rank bound and the d_k = 1 head", (rank, selection), WORKED["10"]),
)
