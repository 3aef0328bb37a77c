"""Drills for the derivation cards: shapes (1), softmax (2), the Jacobian (4), backprop (5) and the
online-softmax merge (15). Each answer comes from the card's own function."""

from __future__ import annotations

import math

import numpy as np
import torch

from attn_core import toy
from attn_core.attention import attention, stable_softmax
from attn_core.backward import attention_backward
from attn_core.jacobian import jacobian_spectrum
from attn_core.limits import LIMITS
from attn_core.online import PartialState, merge_partials
from attn_core.practice.page_links import JACOBIAN, MERGE, NO_SCALE, ONE_ROW, RANDOM, TEMPERATURE, TYPED
from attn_core.practice.question import (
    AnswerKind,
    CardDrill,
    Difficulty,
    PageLink,
    Question,
    Worked,
    asks,
    fmt,
    vec,
)

F64 = torch.float64


def _scores(rng: np.random.Generator, difficulty: Difficulty, n: int = 3) -> tuple[float, ...]:
    """n scores: integers when easy, one decimal otherwise."""
    if difficulty is Difficulty.EASY:
        return tuple(float(x) for x in rng.integers(-2, 4, size=n))
    spread = 2.0 if difficulty is Difficulty.MEDIUM else 4.0
    return tuple(round(float(x), 1) for x in rng.uniform(-spread, spread, size=n))


def _typed(rows) -> str:
    return "\n".join(", ".join(f"{float(x):g}" for x in row) for row in rows)


def _row_params(scores, values, **extra: str) -> dict[str, str]:
    """The shared input picker loaded with one query whose raw scores are ``scores`` (its inputs by
    name): d_k = 1, q = 1, k_j = s_j, scale none (1), so S = q kᵀ = s exactly."""
    return {
        "src": TYPED,
        "Q": "1",
        "K": _typed([[s] for s in scores]),
        "V": _typed(values),
        "scale": NO_SCALE,
        **extra,
    }


# -- card 1: shapes ----------------------------------------------------------------------------
@asks(
    "1",
    "Attention in matrix form, with shapes",
    kind=AnswerKind.VECTOR,
    rel_tol=0.0,
    hint="four numbers, e.g. 2, 8, 5, 64",
)
def _shapes_question(B: int, h: int, L: int, S: int, d_k: int, d_v: int) -> Worked:
    meta = {"dtype": F64, "device": "meta"}  # shapes only: no numbers are computed
    q, k, v = (
        torch.empty(B, h, L, d_k, **meta),
        torch.empty(B, h, S, d_k, **meta),
        torch.empty(B, h, S, d_v, **meta),
    )
    out = attention(q, k, v).output  # the card's own function decides the shape
    return Worked(
        prompt=(
            f"Q is ({B}, {h}, {L}, {d_k}), K is ({B}, {h}, {S}, {d_k}) and V is ({B}, {h}, {S}, {d_v}) "
            "(batch, heads, length, width). What is the shape of the output O = softmax(QKᵀ/√d_k) V?"
        ),
        answer=tuple(float(n) for n in out.shape),
        steps=(
            "QKᵀ contracts the shared width d_k: (…, L, d_k) @ (…, d_k, S) → (…, L, S), one score per "
            "(query, key) pair.",
            "softmax runs along the key axis and keeps the shape; P V contracts S: (…, L, S) @ (…, S, d_v) "
            "→ (…, L, d_v).",
            f"So O is ({B}, {h}, {L}, {d_v}): one d_v-wide vector per query, whatever S and d_k are.",
        ),
        slips={
            "the output keeps the query width d_k": (B, h, L, d_k),
            "one output per key (L and S swapped)": (B, h, S, d_v),
            "the score matrix's shape (forgot P V)": (B, h, L, S),
        },
        link=_shapes_link(h, L, S, d_k, d_v),
    )


def _shapes_link(h: int, L: int, S: int, d_k: int, d_v: int) -> PageLink:
    """The Playground's random input at these sizes, cut to its caps (LIMITS: lengths, widths, heads
    and the work heads · L · S · (d_k + d_v)) where the card's own numbers are larger: a value over
    a cap would open at the widget's default instead."""
    shown = (h, L, S, d_k, d_v)
    h, L, S = min(h, LIMITS.max_heads), min(L, LIMITS.max_len), min(S, LIMITS.max_len)
    d_k, d_v = min(d_k, LIMITS.max_width), min(d_v, LIMITS.max_width)
    cut = (h, L, S, d_k, d_v) != shown
    while h * L * S * (d_k + d_v) > LIMITS.max_work:
        L, S = max(L // 2, 1), max(S // 2, 1)
        cut = True
    sizes = {"L": L, "S": S, "dk": d_k, "dv": d_v, "H": h, "Hkv": h}
    where = "Shapes of every intermediate" + (" (sizes cut to the page's caps)" if cut else "")
    return PageLink("playground", where, inputs={"src": RANDOM, **{k: str(v) for k, v in sizes.items()}})


def shapes(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    top = {Difficulty.EASY: 8, Difficulty.MEDIUM: 32, Difficulty.HARD: 64}[difficulty]
    B, h = int(rng.integers(1, 5)), int(rng.choice([1, 2, 4, 8]))
    L, S, d_k, d_v = (int(x) for x in rng.integers(2, top + 1, size=4))
    return _shapes_question(B, h, L, S, d_k, d_v)


# -- card 2: softmax and temperature -------------------------------------------------------------
@asks("2", "Softmax: shift invariance, temperature, stable logsumexp", hint="a number in (0, 1], e.g. 0.576")
def _softmax_question(scores: tuple[float, ...], tau: float) -> Worked:
    s = torch.tensor(scores, dtype=F64)
    p = stable_softmax(s / tau)
    values = [[1.0 if j == i else 0.0 for j in range(len(scores))] for i in range(len(scores))]
    return Worked(
        prompt=f"Scores s = {vec(scores)}, temperature τ = {fmt(tau)}. What is the largest weight of softmax(s/τ)?",
        answer=float(p.max()),
        steps=(
            "Divide by τ, subtract the row max (shift invariance: the weights do not change), exponentiate, "
            "normalise: p_j = e^{(s_j − m)/τ} / Σ_k e^{(s_k − m)/τ}.",
            f"s/τ = {vec((s / tau).tolist())}; the weights are {vec(p.tolist())}.",
            f"The largest is {float(p.max()):.4f}. A smaller τ sharpens the row, a larger one flattens it.",
        ),
        slips={
            "multiplied by τ instead of dividing": float(stable_softmax(s * tau).max()),
            "ignored the temperature": float(stable_softmax(s).max()),
        },
        link=PageLink(
            "playground",
            "How peaked is each row?",
            inputs=_row_params(scores, values, scale=TEMPERATURE, tau=f"{tau:g}"),
        ),
    )


def softmax_temperature(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    taus = {
        Difficulty.EASY: (1.0, 2.0),
        Difficulty.MEDIUM: (0.5, 1.0, 2.0, 4.0),
        Difficulty.HARD: (0.3, 0.7, 1.5, 3.0),
    }
    return _softmax_question(_scores(rng, difficulty), float(rng.choice(taus[difficulty])))


# -- card 4: the softmax Jacobian ------------------------------------------------------------------
@asks("4", "The softmax Jacobian", abs_tol=5e-4, hint="a number in [0, 1/2], e.g. 0.393")
def _jacobian_question(scores: tuple[float, ...], scale: float = 1.0) -> Worked:
    p = stable_softmax(torch.tensor(scores, dtype=F64) * scale)
    spectrum = jacobian_spectrum(p)
    lam = float(spectrum.eigenvalues.max())
    shown = vec(scores) if scale == 1.0 else f"{vec(scores)} · {fmt(scale)}"
    return Worked(
        prompt=f"One attention row has scores {shown}. What is the largest eigenvalue of its softmax Jacobian ∂p/∂s?",
        answer=lam,
        steps=(
            "∂p/∂s = diag(p) − p pᵀ: symmetric, positive semi-definite, and J·1 = 0 (one eigenvalue is 0).",
            f"p = {vec(p.tolist())}.",
            f"Its eigenvalues are {vec(sorted(spectrum.eigenvalues.tolist(), reverse=True))}; the largest is "
            f"{lam:.4f}, under the Gershgorin bound 2·max p(1 − p) = {2 * float((p * (1 - p)).max()):.4f} ≤ 1/2.",
        ),
        slips={
            "only the diagonal p(1 − p)": float((p * (1 - p)).max()),
            "the Gershgorin bound, not the eigenvalue": 2 * float((p * (1 - p)).max()),
            "the largest weight": float(p.max()),
        },
        link=JACOBIAN.link(inputs=_row_params(scores, [[1.0]] * len(scores))),
    )


def jacobian_eigenvalue(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    return _jacobian_question(_scores(rng, difficulty))


# -- card 5: backprop through one row ---------------------------------------------------------------
@asks("5", "Backpropagation through attention", abs_tol=5e-4, hint="a signed number, e.g. −0.244")
def _backward_question(scores, values, g, key: int) -> Worked:
    S = len(scores)
    q = torch.ones(1, 1, dtype=F64)
    k = torch.tensor(scores, dtype=F64).reshape(S, 1)  # q kᵀ = s with d_k = 1, scale 1
    v = torch.tensor(values, dtype=F64)  # (S, d_v)
    G = torch.tensor([g], dtype=F64)  # (1, d_v)
    back = attention_backward(q, k, v, G, scale=1.0)
    dS = back.dscores[0]  # (S,)
    p, o = back.forward.weights[0], back.forward.output[0]
    gv, go = (v @ G[0]), float(o @ G[0])
    return Worked(
        prompt=(
            f"One query row with scores s = {vec(scores)} over {S} keys, values v = "
            f"{', '.join(vec(r) for r in values)}, and upstream gradient g = ∂L/∂o = {vec(g)}. "
            f"What is ∂L/∂s for key {key} (0-based)?"
        ),
        answer=float(dS[key]),
        steps=(
            "∂L/∂s_j = p_j (gᵀv_j − gᵀo): a key's score gains when its value beats the current output "
            "along g.",
            f"p = {vec(p.tolist())}, o = {vec(o.tolist())}, gᵀv = {vec(gv.tolist())}, gᵀo = {go:.4f}.",
            f"∂L/∂s_{key} = {float(p[key]):.4f} × ({float(gv[key]):.4f} − {go:.4f}) = {float(dS[key]):.4f}.",
        ),
        slips={
            "dropped the row-sum term gᵀo": float(p[key] * gv[key]),
            "forgot the weight p_j": float(gv[key] - go),
        },
        link=ONE_ROW.link(inputs=_row_params(scores, values)),
        inputs={"scores": tuple(scores), "values": tuple(map(tuple, values)), "g": tuple(g), "key": key},
    )


def backward_row(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    S = 3 if difficulty is Difficulty.EASY else 4
    scores = _scores(rng, difficulty, S)
    values = [tuple(float(x) for x in rng.integers(-1, 3, size=2)) for _ in range(S)]
    g = tuple(float(x) for x in rng.integers(-1, 2, size=2))
    if not any(g):
        g = (-1.0, 0.0)
    return _backward_question(scores, values, g, int(rng.integers(0, S)))


# -- card 15: merging two online-softmax states ------------------------------------------------------
@asks("15", "The online-softmax (FlashAttention) recurrence", abs_tol=5e-4, hint="a number, e.g. 3.688")
def _merge_question(a: tuple[float, float, float], b: tuple[float, float, float]) -> Worked:
    merged = merge_partials(PartialState(*a), PartialState(*b))
    o = float(merged.output)
    m = max(a[0], b[0])
    wa, wb = math.exp(a[0] - m), math.exp(b[0] - m)
    return Worked(
        prompt=(
            f"Two partial states over disjoint keys (one value per key): (m, ℓ, u) = {vec(a)} and {vec(b)}. "
            "Merge them: what is the output o = u/ℓ?"
        ),
        answer=o,
        steps=(
            "Move both onto the larger max m = max(m_a, m_b): ℓ = e^{m_a − m} ℓ_a + e^{m_b − m} ℓ_b, "
            "u likewise, o = u/ℓ.",
            f"m = {fmt(m)}; the factors are e^{{m_a − m}} = {wa:.4f} and e^{{m_b − m}} = {wb:.4f}.",
            f"ℓ = {float(merged.state.l):.4f}, u = {float(merged.state.u):.4f}, o = {o:.4f} "
            f"(logsumexp {float(merged.lse):.4f}).",
        ),
        slips={
            "added without rescaling": (a[2] + b[2]) / (a[1] + b[1]),
            "rescaled the wrong way (e^{m − m_a})": (a[2] / wa + b[2] / wb) / (a[1] / wa + b[1] / wb),
            "averaged the two outputs": (a[2] / a[1] + b[2] / b[1]) / 2,
        },
        link=MERGE.link(),
    )


def merge_states(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    def state() -> tuple[float, float, float]:
        m = (
            float(rng.integers(0, 7))
            if difficulty is Difficulty.EASY
            else round(float(rng.uniform(-3, 6)), 1)
        )
        ell = round(float(rng.uniform(1.0, 3.0)), 4)
        return (m, ell, round(float(rng.uniform(-2, 5)) * ell, 4))

    a, b = state(), state()
    while a[0] == b[0]:  # equal maxima make the rescaling slips indistinguishable from the answer
        b = state()
    return _merge_question(a, b)


# -- the card's own numbers --------------------------------------------------------------------------
def _bank_scores() -> tuple[float, ...]:
    t = toy.bank_row()
    return tuple((t.k @ t.q[0]).tolist())  # raw scores (0, 2, 1)


DRILLS = (
    CardDrill(
        "1",
        "Attention in matrix form, with shapes",
        shapes,
        lambda: _shapes_question(1, 32, 4096, 4096, 128, 128),
    ),
    CardDrill(
        "2",
        "Softmax and temperature",
        softmax_temperature,
        lambda: _softmax_question(_bank_scores(), math.sqrt(2)),
    ),
    CardDrill(
        "4",
        "The softmax Jacobian",
        jacobian_eigenvalue,
        lambda: _jacobian_question(_bank_scores(), 1 / math.sqrt(2)),
    ),
    CardDrill(
        "5",
        "Backpropagation through attention",
        backward_row,
        lambda: _backward_question(
            tuple(s / math.sqrt(2) for s in _bank_scores()), toy.bank_row().v.tolist(), (-1.0, 0.0), 1
        ),
    ),
    CardDrill(
        "15",
        "The online-softmax recurrence",
        merge_states,
        lambda: _merge_question((3.0, 1.1353, 2.1353), (5.0, 1.0498, 4.1494)),
    ),
)
