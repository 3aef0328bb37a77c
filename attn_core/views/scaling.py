"""Everything the Scaling page shows, one section per call (cards 3, 16 and 18; the lesson's slip);
its inputs are scaling_inputs', its sinks section (card 18) scaling_sinks'.

`view(section, inputs)` runs the section's seeded simulations and closed forms and returns a
frozen dataclass of ready-to-draw numbers, the verdicts already decided (``Check``), every
tolerance from ``attn_core.oracle``. Sizes are fixed here (named constants) under the
caps of ``attn_core.limits.THEORY``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import torch

from attn_core.limits import THEORY
from attn_core.oracle import SE_MULTIPLE, Check
from attn_core.slips.scaling import SLIPS
from attn_core.theory import alignment, scaling
from attn_core.theory.scaling import ScaleRule
from attn_core.views.scaling_inputs import MAX_D_K, MAX_KEYS, ScalingInputs, pairs, validate
from attn_core.views.scaling_sinks import SinksView, sinks_view
from attn_core.views.sections import SectionViews

__all__ = [  # what the page reads (the page import rule: tests/pages/test_page_shape.py)
    "APPROX_GAP",
    "CODE",
    "MAX_D_K",
    "MAX_KEYS",
    "ROWS",
    "SLIPS",
    "TABLE_PAIRS",
    "TWO_KEY_DRAWS",
    "AlignmentView",
    "EntropyView",
    "ScaleRule",
    "ScalingInputs",
    "Section",
    "SinksView",
    "TwoKeysView",
    "VarianceView",
    "pairs",
    "validate",
    "variance_theory",
    "view",
]

TABLE_PAIRS = 500  # pairs per width in the d_k table (8, 32, 128, 512: 0.7M entries; SE ≈ 6%)
TABLE_WIDTHS = (8, 32, 128, 512)  # the lesson's loop (8, 32, 128) and card 3's 512
ROWS = 64  # softmax rows per scale rule in the row table (a median of 64 rows)
CURVE_ROWS = 8  # rows per σ on the entropy curve
CURVE_SIGMAS = torch.linspace(0.0, 6.0, 13, dtype=torch.float64)  # steps of 0.5
TWO_KEY_WIDTHS = tuple(2**i for i in range(11))  # 1 … 1,024
TWO_KEY_DRAWS = 250  # draws per width, shared by both scales (3 · 250 · 2,047 entries); SE ≤ 3.2%
# nats: where ln T − σ²/2 is said to "break". At T = 4,096 one row's entropy has sd ≈ 0.02 nats at
# σ = 1, so a 0.1 gap is 5 sd of a single row (more for the median of 8) and 1% of ln T.
APPROX_GAP = 0.1


class Section(StrEnum):
    """The page's sections; the value is the label shown, a link keeps the member's name, lower-cased."""

    VARIANCE = "Variance of q·k"
    ENTROPY = "Entropy & saturation"
    TWO_KEYS = "Two keys, exactly"
    ALIGNMENT = "Alignment (1/d_k)"
    SINKS = "Sinks & QK-norm"


CODE = scaling.two_key_exact  # what the page's "show the code" shows
variance_theory = scaling.variance_theory  # Var(q·k) = d_k σ_q² σ_k² (card 3)


SECTIONS = SectionViews(Section, validate)  # each section's builder, registered below


def _within(name: str, simulated: float, theory: float, se: float, unit: str = "") -> Check:
    """simulated vs closed form within SE_MULTIPLE standard errors of the simulation."""
    gap = abs(simulated - theory)
    z = gap / se if se > 0 else (0.0 if gap == 0 else math.inf)
    detail = f"simulated {simulated:.4g}{unit} vs theory {theory:.4g}{unit} ({z:.1f} SE; tolerance {SE_MULTIPLE:g} SE)"
    return Check(name, z <= SE_MULTIPLE, detail)


# ------------------------------------------------------------------------------ variance


@dataclass(frozen=True)
class VarianceView:
    scale: float
    raw: scaling.ScoreSample  # unscaled q·k of the independent pairs
    by_rule: dict[ScaleRule, torch.Tensor]  # the same pairs under each scale: (n,) logits
    theory_by_rule: dict[ScaleRule, float]  # their theoretical variances
    scaled: scaling.ScoreSample  # under the chosen rule
    theory_variance: float
    checks: list[Check]
    table: list[dict]  # d_k, raw var (sim, theory), scaled var (sim, theory)
    slip: scaling.ScoreSample | None  # the slip's scores under the chosen rule
    slip_theory: tuple[float, float] | None  # the slip's own mean and variance
    slip_checks: list[Check]
    inputs: ScalingInputs  # what it was computed from, validated


def _variance_checks(sample: scaling.ScoreSample, theory: float) -> list[Check]:
    return [
        _within("mean 0", sample.mean, 0.0, sample.mean_se),
        _within("variance α² d_k σ_q² σ_k²", sample.variance, theory, sample.variance_se),
    ]


def _variance_table(sigma_q: float, sigma_k: float, seed: int) -> list[dict]:
    rows = []
    for d in TABLE_WIDTHS:
        q, k = scaling.sample_qk(TABLE_PAIRS, d, sigma_q, sigma_k, seed)
        raw, scaled = scaling.score_sample(q, k, 1.0), scaling.score_sample(q, k, d**-0.5)
        rows.append(
            {
                "d_k": d,
                "Var(q·k) simulated": raw.variance,
                "d_k σ_q² σ_k²": scaling.variance_theory(d, sigma_q, sigma_k, 1.0),
                "Var(q·k/√d_k) simulated": scaled.variance,
                "σ_q² σ_k²": sigma_q**2 * sigma_k**2,
            }
        )
    return rows


@SECTIONS.builds(Section.VARIANCE)
def variance_view(x: ScalingInputs) -> VarianceView:
    args = (pairs(x.d_k), x.d_k, x.sigma_q, x.sigma_k, x.seed)
    q, k = scaling.sample_qk(*args)
    raw = scaling.score_sample(q, k, 1.0)
    scales = {r: scaling.scale_of(r, x.d_k) for r in ScaleRule}
    scale = scales[ScaleRule(x.rule)]
    scaled = scaling.score_sample(q, k, scale)
    theory = scaling.variance_theory(x.d_k, x.sigma_q, x.sigma_k, scale)
    slip = slip_theory = None
    slip_checks: list[Check] = []
    if x.slip is not None:
        slip = scaling.score_sample(*SLIPS[x.slip].fn(*args), scale)
        slip_theory = scaling.tied_moments(x.d_k, x.sigma_q, scale)
        slip_checks = [
            *_variance_checks(slip, theory),
            _within("…but its own prediction: mean α d_k σ_q²", slip.mean, slip_theory[0], slip.mean_se),
            _within("…and variance 2 α² d_k σ_q⁴", slip.variance, slip_theory[1], slip.variance_se),
        ]
    return VarianceView(
        scale,
        raw,
        {r: raw.scores * s for r, s in scales.items()},
        {r: scaling.variance_theory(x.d_k, x.sigma_q, x.sigma_k, s) for r, s in scales.items()},
        scaled,
        theory,
        _variance_checks(scaled, theory),
        _variance_table(x.sigma_q, x.sigma_k, x.seed),
        slip,
        slip_theory,
        slip_checks,
        x,
    )


# ------------------------------------------------------------------------------ entropy


@dataclass(frozen=True)
class EntropyView:
    T: int
    approximation_at_1: float  # ln T − 1/2
    breakdown: float  # √(2 ln T)
    curve: scaling.EntropyCurve
    breaks_at: float | None  # first σ where |simulated − approximation| > APPROX_GAP
    table: list[dict]  # one row per scale rule: median top weight, entropy, e^H, share > 0.99, ‖J‖_F
    checks: list[Check]
    inputs: ScalingInputs  # what it was computed from, validated


def _row_table(x: ScalingInputs) -> tuple[list[dict], dict[ScaleRule, scaling.RowStats]]:
    stats, rows = {}, []
    for rule in ScaleRule:
        s = scaling.scale_of(rule, x.d_k)
        logits = scaling.query_logit_rows(ROWS, x.T, x.d_k, s, x.sigma_q, x.sigma_k, x.seed)
        stats[rule] = st = scaling.row_stats(logits)
        rows.append(
            {
                "scale": rule.value,
                "logit sd α σ_q σ_k √d_k": s * x.sigma_q * x.sigma_k * math.sqrt(x.d_k),
                "median top weight": st.median("top_weight"),
                "median entropy (nats)": st.median("entropy"),
                "effective keys e^H": math.exp(st.median("entropy")),
                "rows above 0.99": st.saturated_share,
                "median ‖J‖_F": st.median("jacobian_norm"),
            }
        )
    return rows, stats


@SECTIONS.builds(Section.ENTROPY)
def entropy_view(x: ScalingInputs) -> EntropyView:
    curve = scaling.entropy_curve(x.T, CURVE_SIGMAS, CURVE_ROWS, x.seed)
    gap = (curve.simulated - curve.approximation).abs() > APPROX_GAP
    breaks_at = float(curve.sigmas[gap.nonzero()[0, 0]]) if gap.any() else None
    table, _ = _row_table(x)
    at_1 = int((curve.sigmas - 1.0).abs().argmin())
    sim, approx = float(curve.simulated[at_1]), float(curve.approximation[at_1])
    detail = f"simulated median {sim:.4f} vs ln T − 1/2 = {approx:.4f} nats (tolerance {APPROX_GAP:g} nats)"
    checks = [Check("ln T − σ²/2 holds at σ = 1", abs(sim - approx) <= APPROX_GAP, detail)]
    return EntropyView(
        x.T, scaling.entropy_approximation(1.0, x.T), curve.breakdown, curve, breaks_at, table, checks, x
    )


# ------------------------------------------------------------------------------ two keys


@dataclass(frozen=True)
class TwoKeysView:
    widths: list[int]
    exact: dict[str, list[float]]  # "none (1)" / "1/√d_k" -> P(max p > 0.99) by quadrature
    gaussian: dict[str, list[float]]  # ‖q‖² ≈ d_k
    simulated: dict[str, list[float]]
    simulated_se: dict[str, list[float]]
    at_d_k: dict[str, dict[str, float]]  # the user's d_k: rule -> exact, gaussian
    threshold: float  # ln 99
    checks: list[Check]
    inputs: ScalingInputs  # what it was computed from, validated


@SECTIONS.builds(Section.TWO_KEYS)
def two_keys_view(x: ScalingInputs) -> TwoKeysView:
    widths = [d for d in TWO_KEY_WIDTHS if d <= THEORY.max_d_k]
    rules = {ScaleRule.NONE.value: lambda d: 1.0, ScaleRule.SQRT.value: lambda d: d**-0.5}
    gaps = [scaling.two_key_gaps(d, TWO_KEY_DRAWS, x.seed + i) for i, d in enumerate(widths)]
    exact, gauss, sim, se = {}, {}, {}, {}
    fails = []
    for name, alpha in rules.items():
        exact[name] = [scaling.two_key_exact(d, alpha(d)) for d in widths]
        gauss[name] = [scaling.two_key_gaussian(d, alpha(d)) for d in widths]
        runs = [scaling.two_key_share(g, alpha(d)) for g, d in zip(gaps, widths, strict=True)]
        sim[name], se[name] = [r.share for r in runs], [r.standard_error for r in runs]
        fails += [
            d
            for d, e, r in zip(widths, exact[name], runs, strict=True)
            if abs(r.share - e) > SE_MULTIPLE * r.standard_error
        ]
    at = {
        n: {
            "exact": scaling.two_key_exact(x.d_k, a(x.d_k)),
            "gaussian": scaling.two_key_gaussian(x.d_k, a(x.d_k)),
        }
        for n, a in rules.items()
    }
    detail = f"{2 * len(widths) - len(fails)} of {2 * len(widths)} widths within {SE_MULTIPLE:g} SE of the integral"
    checks = [
        Check(
            "simulation agrees with the exact integral",
            not fails,
            detail + (f"; off at d_k = {fails}" if fails else ""),
        )
    ]
    return TwoKeysView(widths, exact, gauss, sim, se, at, scaling.gap_threshold(), checks, x)


# ------------------------------------------------------------------------------ alignment


@dataclass(frozen=True)
class AlignmentView:
    samples: dict[ScaleRule, alignment.AlignedSample]  # 1/√d_k and 1/d_k at the user's d_k, ρ
    curve: alignment.AlignmentCurve
    init_entropy: dict[ScaleRule, float]  # ln T − α² d_k / 2 at ρ = 0
    init_entropy_simulated: dict[ScaleRule, float]  # median over ROWS rows
    max_entropy: float  # ln T
    checks: list[Check]
    inputs: ScalingInputs  # what it was computed from, validated


@SECTIONS.builds(Section.ALIGNMENT)
def alignment_view(x: ScalingInputs) -> AlignmentView:
    rules = (ScaleRule.SQRT, ScaleRule.LINEAR)
    samples = alignment.aligned_samples(x.d_k, x.rho, rules, pairs(x.d_k), x.seed)
    checks = []
    for r, s in samples.items():
        checks.append(_within(f"{r.value}: mean", s.mean, s.theory.mean, s.mean_se))
        checks.append(_within(f"{r.value}: sd", s.sd, s.theory.sd, s.sd_se))
    widths = [2**i for i in range(11) if 2**i <= THEORY.max_d_k]
    init = {r: alignment.init_entropy_approximation(x.T, x.d_k, r) for r in rules}
    simulated = {}
    for r in rules:
        logits = scaling.query_logit_rows(ROWS, x.T, x.d_k, scaling.scale_of(r, x.d_k), 1.0, 1.0, x.seed)
        simulated[r] = scaling.row_stats(logits).median("entropy")
    return AlignmentView(
        samples, alignment.alignment_curve(x.rho, widths), init, simulated, math.log(x.T), checks, x
    )


SECTIONS.builds(Section.SINKS)(sinks_view)  # its builder lives in scaling_sinks (card 18)


def view(section: Section | str, inputs: ScalingInputs):
    """Everything one section of the Scaling page shows. ValueError on a bad input."""
    return SECTIONS.view(section, inputs)
