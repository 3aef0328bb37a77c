"""Everything the "What one head can express" page shows, one section per call (cards 8, 10, 17;
the lesson's two circuits; card 9's heads sum).

`view(section, inputs)` returns a frozen dataclass of ready-to-draw numbers with the verdicts
decided (``Check``) against tolerances from ``attn_core.oracle``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import torch

from attn_core.limits import THEORY, check_range
from attn_core.oracle import IDENTITY_TOL, SE_MULTIPLE, SLOPE_TOL, Check
from attn_core.theory import circuits, collapse, kernel_smoothing, rank
from attn_core.theory.kernel_smoothing import check_bandwidth
from attn_core.theory.scaling import check_d_k
from attn_core.views.sections import SectionViews

__all__ = [  # what the page reads (the page import rule: tests/pages/test_page_shape.py)
    "CIRCLE_QUERIES",
    "CODE",
    "IDENTITY_TOL",
    "MAX_LAYERS",
    "MAX_RANK_T",
    "MAX_STACKS",
    "MAX_WIDTH",
    "NW_POINTS",
    "SECTION_INPUTS",
    "CircuitsView",
    "CollapseView",
    "ExpressivityInputs",
    "KernelView",
    "RankView",
    "Section",
    "SelectView",
    "validate",
    "view",
]

NW_POINTS = 40  # card 8's 40 noisy sine points
NW_GRID = 200  # query points along the curve
ONE_DIM_TRIALS = 2000  # card 10's 2,000 random instances
ONE_DIM_T = 16  # tokens per instance
CIRCLE_QUERIES = 360  # one query per degree
UNIFORM_T = 4096  # card 17's T = 4,096
UNIFORM_TRIALS = 256  # rows averaged by the uniform head (SE of the variance ≈ 9%)


class Section(StrEnum):
    """The page's sections; the value is the label shown, a link keeps the member's name, lower-cased."""

    KERNEL = "Nadaraya–Watson"
    RANK = "Rank of S, P, log P"
    SELECT = "Which keys can win"
    COLLAPSE = "Rank collapse"
    CIRCUITS = "Two circuits & heads"


# The page's sidebar caps, tighter than THEORY's so that one rerun stays near 0.1 s:
MAX_STACKS = 16  # stacks × layers × width² bound a collapse rerun: 16 × 24 × 64² stays near 0.1 s
MAX_WIDTH = 64
MAX_LAYERS = 24
MAX_RANK_T = 128  # a T × T SVD of three matrices per rerun
CODE = kernel_smoothing.kernel_attention  # what the page's "show the code" shows


@dataclass(frozen=True)
class ExpressivityInputs:
    bandwidth: float = 0.5  # λ of the kernel smoother
    noise: float = 0.3  # sd of the sine's noise
    T: int = 64  # tokens of the rank study
    d_k: int = 8  # head width of the rank study
    circle_keys: int = 12  # keys on the circle (d_k = 2)
    layers: int = 12  # depth of the collapse stacks
    width: int = 64  # model width of the collapse stacks and the circuits
    stacks: int = 8  # random stacks in the median
    heads: int = 4  # heads of the heads-sum check
    seed: int = 0


def validate(x: ExpressivityInputs) -> ExpressivityInputs:
    """Every input checked with the message a page shows next to its widget (ValueError)."""
    check_bandwidth(x.bandwidth)
    check_range("T", x.T, 2, THEORY.max_tokens)
    check_d_k(x.d_k)
    check_range("keys on the circle", x.circle_keys, 2, min(CIRCLE_QUERIES, THEORY.max_tokens))
    check_range("layers", x.layers, 1, THEORY.max_layers)
    check_range("width", x.width, 2, THEORY.max_width)
    check_range("stacks", x.stacks, 1, THEORY.max_stacks)
    return x


# The inputs each section's view reads (its builder below): the page's sidebar shows these only,
# and the others keep their last value. Hand-kept beside the builders; tests/pages/test_page_one_head.py
# holds the page to it.
SECTION_INPUTS = {
    Section.KERNEL: frozenset({"bandwidth", "noise", "seed"}),
    Section.RANK: frozenset({"T", "d_k", "seed"}),
    Section.SELECT: frozenset({"circle_keys", "seed"}),
    Section.COLLAPSE: frozenset({"layers", "width", "stacks", "seed"}),
    Section.CIRCUITS: frozenset({"width", "heads", "seed"}),
}


SECTIONS = SectionViews(Section, validate)  # each section's builder, registered below


def _identity(name: str, diff: float) -> Check:
    return Check(name, diff <= IDENTITY_TOL, f"max |Δ| = {diff:.2g} (tolerance {IDENTITY_TOL:.0e})")


@dataclass(frozen=True)
class KernelView:
    smoothing: kernel_smoothing.SmoothingResult
    equal_length: kernel_smoothing.EqualLengthCheck
    checks: list[Check]
    inputs: ExpressivityInputs  # what it was computed from, validated


@SECTIONS.builds(Section.KERNEL)
def kernel_view(x: ExpressivityInputs) -> KernelView:
    sm = kernel_smoothing.smooth_sine(NW_POINTS, x.bandwidth, x.noise, NW_GRID, x.seed)
    eq = kernel_smoothing.equal_length_checks(x.bandwidth, x.seed)
    checks = [
        _identity("Nadaraya–Watson = softmax(q·k/λ² − ‖k‖²/2λ²) V", sm.bias_error),
        _identity("equal-length keys (circle): plain attention is exact", eq.circle),
        _identity("equal-length keys (random, d = 3): plain attention is exact", eq.random_3d),
        Check(
            "dropping the bias is a different smoother",
            sm.no_bias_error > IDENTITY_TOL,
            f"max |NW − plain attention| = {sm.no_bias_error:.3g}",
        ),
    ]
    return KernelView(sm, eq, checks, x)


@dataclass(frozen=True)
class RankView:
    study: rank.RankStudy
    checks: list[Check]
    inputs: ExpressivityInputs  # what it was computed from, validated


@SECTIONS.builds(Section.RANK)
def rank_view(x: ExpressivityInputs) -> RankView:
    study = rank.rank_study(x.T, x.d_k, x.seed)
    r, b = study.ranks, study.bounds
    checks = [
        Check("rank(QKᵀ) ≤ d_k", r["S"] <= b["S"], f"rank {r['S']} (bound {b['S']})"),
        Check("rank(log P) ≤ d_k + 1", r["log P"] <= b["log P"], f"rank {r['log P']} (bound {b['log P']})"),
        Check(
            "P itself is not low-rank",
            r["P"] > b["S"] or x.d_k >= x.T,
            f"rank(P) = {r['P']} of T = {x.T}"
            + (" (d_k ≥ T: no low-rank bound to beat)" if x.d_k >= x.T else ""),
        ),
    ]
    return RankView(study, checks, x)


@dataclass(frozen=True)
class SelectView:
    one_dim: rank.OneDimHead
    circle: rank.CircleHead
    counts: dict[str, list[int]]  # "d_k = 2" / "d_k = 1 (first coordinate)" -> queries won per key
    checks: list[Check]
    inputs: ExpressivityInputs  # what it was computed from, validated


@SECTIONS.builds(Section.SELECT)
def select_view(x: ExpressivityInputs) -> SelectView:
    one = rank.one_dim_head(ONE_DIM_TRIALS, ONE_DIM_T, x.seed)
    circ = rank.circle_head(x.circle_keys, CIRCLE_QUERIES)
    checks = [
        Check(
            "d_k = 1: every top key is argmax k or argmin k",
            one.extreme_share == 1.0,
            f"{one.extreme_share:.1%} of {one.trials:,} random instances; at most {one.most_distinct} distinct top keys",
        ),
        Check(
            "d_k = 2: every key on the circle can win",
            circ.selectable_2d == x.circle_keys,
            f"{circ.selectable_2d} of {x.circle_keys} keys (a d_k = 1 head: {circ.selectable_1d})",
        ),
    ]
    n = x.circle_keys
    counts = {
        "d_k = 2": torch.bincount(circ.top_2d, minlength=n).tolist(),
        "d_k = 1 (first coordinate only)": torch.bincount(circ.top_1d, minlength=n).tolist(),
    }
    return SelectView(one, circ, counts, checks, x)


@dataclass(frozen=True)
class CollapseView:
    curves: collapse.CollapseCurves
    cubic: collapse.CubicRate
    uniform: collapse.UniformHeadSample
    checks: list[Check]
    inputs: ExpressivityInputs  # what it was computed from, validated


@SECTIONS.builds(Section.COLLAPSE)
def collapse_view(x: ExpressivityInputs) -> CollapseView:
    curves = collapse.collapse_curves(32, x.width, x.layers, x.stacks, x.seed)
    cubic = collapse.cubic_rate(32, x.width, x.seed)
    uni = collapse.uniform_head_sample(UNIFORM_T, UNIFORM_TRIALS, 1.0, x.seed)
    z = abs(uni.variance - uni.theory) / uni.standard_error
    checks = [
        Check(
            "one pure layer shrinks the residual cubically",
            abs(cubic.slope - 3) <= SLOPE_TOL,
            f"slope {cubic.slope:.3f} per decade (3 ± {SLOPE_TOL})",
        ),
        Check(
            "uniform head: Var = σ_v²/T",
            z <= SE_MULTIPLE,
            f"simulated {uni.variance:.3g} vs {uni.theory:.3g} ({z:.1f} SE; tolerance {SE_MULTIPLE:g} SE)",
        ),
        Check(
            "residuals slow the collapse",
            bool(curves.residual[-1] > curves.pure[-1]),
            f"after {x.layers} layers r = {float(curves.residual[-1]):.3g} with residuals vs {float(curves.pure[-1]):.2g}",
        ),
    ]
    return CollapseView(curves, cubic, uni, checks, x)


@dataclass(frozen=True)
class CircuitsView:
    orthogonal: circuits.BasisChange
    general: circuits.BasisChange
    heads: circuits.HeadsSum
    checks: list[Check]
    slip_checks: list[Check]  # multiplying W_Q and W_K by the same R
    inputs: ExpressivityInputs  # what it was computed from, validated


@SECTIONS.builds(Section.CIRCUITS)
def circuits_view(x: ExpressivityInputs) -> CircuitsView:
    """The change of basis and the heads sum; the only section that splits the width into heads,
    so the only one that refuses a width the heads do not divide (ValueError)."""
    if x.width % x.heads:
        raise ValueError(f"width {x.width} is not a multiple of h = {x.heads} heads")
    d_k = max(1, x.width // x.heads)
    orth = circuits.change_of_basis(8, x.width, d_k, orthogonal=True, seed=x.seed)
    gen = circuits.change_of_basis(8, x.width, d_k, orthogonal=False, seed=x.seed)
    heads = circuits.heads_sum(8, x.width, x.heads, x.seed)
    checks = [
        _identity("W_Q R, W_K R⁻ᵀ keep the scores (orthogonal R)", orth.scores_right),
        _identity(
            f"W_Q R, W_K R⁻ᵀ keep the scores (general R, κ = {gen.condition_number:.2f})", gen.scores_right
        ),
        _identity("W_V R, R⁻¹ W_O keep the outputs", gen.outputs_right),
        _identity(f"concat(heads)·W_O = Σ_h head_h·W_O[h] ({x.heads} heads)", heads.max_abs_diff),
    ]
    slip = [
        _identity("same R on both, orthogonal R (R Rᵀ = I)", orth.scores_slip),
        _identity("same R on both, general R", gen.scores_slip),
    ]
    return CircuitsView(orth, gen, heads, checks, slip, x)


def view(section: Section | str, inputs: ExpressivityInputs):
    """Everything one section of the expressivity page shows. ValueError on a bad input."""
    return SECTIONS.view(section, inputs)
