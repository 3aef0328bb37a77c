"""Drills for the masking cards: how many pairs a causal mask allows (6) and permutation
equivariance (7). Each answer comes from the card's own function."""

from __future__ import annotations

import numpy as np
import torch

from attn_core.experiments.equivariance import permutation_test
from attn_core.masks import MaskKind, causal_mask
from attn_core.oracle import MATCH_TOL
from attn_core.practice.page_links import GALLERY, PERMUTATIONS
from attn_core.practice.question import AnswerKind, CardDrill, Difficulty, Question, Worked, asks, choice_id

F64 = torch.float64


# -- card 6: the causal mask -------------------------------------------------------------------------
@asks("6", "Causal mask correctness", rel_tol=0.0, hint="a whole number, e.g. 15")
def _causal_question(T: int) -> Worked:
    allowed = int(causal_mask(T, T).sum())
    return Worked(
        prompt=f"A causal mask over T = {T:,} tokens: how many (query, key) pairs may attend?",
        answer=float(allowed),
        steps=(
            "Query i sees keys 0 … i: i + 1 of them. Summing over i = 0 … T − 1 gives T(T + 1)/2.",
            f"T(T + 1)/2 = {T:,} × {T + 1:,} / 2 = {allowed:,}, a fraction (T + 1)/2T = {allowed / T**2:.4f} of T².",
        ),
        slips={
            "blocked the diagonal too (triu(ones, 0))": float(T * (T - 1) // 2),
            "counted every pair (no mask)": float(T * T),
        },
        link=GALLERY.link(
            {
                "kind": choice_id(MaskKind.CAUSAL_TOP_LEFT),
                "gL": str(min(T, 64)),
                "gS": str(min(T, 64)),
            }
        ),
    )


def causal_pairs(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    top = {Difficulty.EASY: 12, Difficulty.MEDIUM: 200, Difficulty.HARD: 2048}[difficulty]
    return _causal_question(int(rng.integers(3, top + 1)))


# -- card 7: permutation equivariance ------------------------------------------------------------------
MOVED, SAME, DIFFERENT = (
    "the old outputs, moved along with their tokens",
    "the old outputs, in the old order",
    "different vectors",
)


@asks(
    "7",
    "Permutation equivariance without positions",
    kind=AnswerKind.CHOICE,
    choices=(MOVED, SAME, DIFFERENT),
    hint="pick one",
)
def _permutation_question(T: int, perm: tuple[int, ...], causal: bool, positions: bool, seed: int) -> Worked:
    X = torch.randn(T, 8, generator=torch.Generator().manual_seed(seed), dtype=F64)
    report = permutation_test(X, perm, causal=causal, positions=positions, seed=seed)
    answer = MOVED if report.equivariance_error <= MATCH_TOL else DIFFERENT
    setting = " and ".join(
        [w for w, on in (("a causal mask", causal), ("sinusoidal positions added to X", positions)) if on]
    )
    slips = {"confused equivariance with invariance: the outputs move, they do not stay put": SAME}
    if answer == DIFFERENT:
        slips[f"forgot that {setting} ties each output to its position"] = MOVED
    return Worked(
        prompt=(
            f"One self-attention layer over {T} tokens, {setting or 'no mask and no positional information'}. "
            f"Reorder the input tokens as {perm} (new position n holds old token perm[n]). What comes out?"
        ),
        answer=answer,
        steps=(
            "Without a mask or positions, each score depends only on the two tokens' vectors, so permuting "
            "the tokens permutes the rows and columns of S and P together: Attn(ΠX) = Π Attn(X).",
            "A causal mask depends on positions (j ≤ i), and so do added position vectors: either breaks it.",
            f"Measured here: max |Attn(ΠX) − Π Attn(X)| = {report.equivariance_error:.2g}.",
        ),
        slips=slips,
        link=PERMUTATIONS.link({"causal": str(causal), "pos": str(positions)}),
        inputs={"T": T, "perm": perm, "causal": causal, "positions": positions},
    )


def permutation(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    T = int(rng.integers(3, 7))
    perm = tuple(int(i) for i in rng.permutation(T))
    while perm == tuple(range(T)):
        perm = tuple(int(i) for i in rng.permutation(T))
    causal, positions = (
        (False, False) if difficulty is Difficulty.EASY else tuple(bool(b) for b in rng.integers(0, 2, 2))
    )
    return _permutation_question(T, perm, causal, positions, int(rng.integers(1000)))


DRILLS = (
    CardDrill("6", "Causal mask correctness", causal_pairs, lambda: _causal_question(5)),
    CardDrill(
        "7",
        "Permutation equivariance",
        permutation,
        lambda: _permutation_question(5, (4, 3, 2, 1, 0), False, False, 0),
    ),
)
