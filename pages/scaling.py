"""Scaling: why 1/√d_k, and when it is wrong (cards 3, 16 and 18; the lesson's tied-Q/K slip).
Every number comes from one call into attn_core.views.scaling (the chosen section's)."""

from dataclasses import replace

import streamlit as st

from attn_core.views import scaling
from attn_core.views.scaling import MAX_D_K, MAX_KEYS, SLIPS, ScaleRule, ScalingInputs, Section
from lab_ui import figures, widgets
from lab_ui import scaling_charts as charts
from lab_ui.badges import check_badges, number_table, slip_columns, slip_picker
from lab_ui.page import compute, header, require, run_section, section_picker, show_code

INPUTS = "d_k, σ_q, σ_k, T, ρ, the scale and the seed in the sidebar"
TITLE = "Scaling"
INTRO = (
    "For independent q and k with mean-0 components, **Var(q·k) = d_k σ_q² σ_k²**: a sum of d_k independent "
    "products (card 3). Dividing by √d_k brings unit-variance components back to unit-variance logits; too "
    "big a spread makes rows one-hot, too small makes them uniform. The argument is about initialization: "
    "once training aligns q and k the mean grows like √d_k (card 16), which is why modern stacks also bound "
    "the logits directly (card 18)."
)
FIX = "the input marked above"


def section_inputs(section: Section, x: ScalingInputs) -> ScalingInputs:
    """The chosen section's own widgets, drawn above it (the slip picker, the sink calculator's
    sliders). They feed its view, so they are inputs, read before the page's one view call; a change
    reruns the whole page, not the section's fragment alone."""
    if section is Section.VARIANCE:
        return replace(x, slip=slip_picker(SLIPS, key="sc_slip"))
    if section is Section.SINKS:
        return charts.sink_inputs(x)
    return x


def variance(view: scaling.VarianceView) -> None:
    x = view.inputs
    st.markdown(
        f"**Logits of {scaling.pairs(x.d_k):,} independent (q, k) pairs at d_k = {x.d_k}, under each scale**"
    )
    for col, rule in zip(st.columns(3), ScaleRule, strict=True):
        title = f"{rule.value}: Var = {view.theory_by_rule[rule]:.4g}"
        with col:
            figures.show(
                charts.logit_histogram(view.by_rule[rule], view.theory_by_rule[rule], title),
                key=f"sc_hist_{rule.name}",
            )
    c = st.columns(3)
    c[0].metric("Var(q·k) simulated", f"{view.raw.variance:.4g}")
    c[1].metric("d_k σ_q² σ_k² (theory)", f"{scaling.variance_theory(x.d_k, x.sigma_q, x.sigma_k, 1.0):.4g}")
    c[2].metric(
        f"Var under {ScaleRule(x.rule).value}",
        f"{view.scaled.variance:.4g}",
        help=f"theory α² d_k σ_q² σ_k² = {view.theory_variance:.4g}",
    )

    def right() -> None:
        check_badges(view.checks)

    def wrong() -> None:
        st.metric("tied: mean of α‖x‖²", f"{view.slip.mean:.4g}")
        check_badges(view.slip_checks)

    if view.slip is None:
        right()
    else:
        slip_columns(right, wrong, SLIPS[x.slip].label)
    st.caption(
        "The right scale for other spreads is 1/(√d_k σ_q σ_k); normalization layers keep σ near 1. Table: "
        f"{scaling.TABLE_PAIRS:,} pairs per width (the lesson's 8, 32, 128 and card 3's 512)."
    )
    number_table(view.table, "scaling_variance.csv", "sc_var")


def entropy(view: scaling.EntropyView) -> None:
    x = view.inputs
    fig = charts.entropy_curve(
        view.curve.sigmas,
        view.curve.simulated,
        view.curve.approximation,
        view.breakdown,
        view.curve.max_entropy,
        f"Entropy of a row of T = {x.T:,} logits N(0, σ²)",
    )
    figures.show(fig, key="sc_entropy")
    fig = charts.effective_keys_curve(
        view.curve.sigmas,
        view.curve.simulated,
        view.breakdown,
        "Effective keys e^H: T when uniform, 1 when one-hot",
    )
    figures.show(fig, key="sc_keys")
    c = st.columns(3)
    c[0].metric("ln T − 1/2 (σ = 1)", f"{view.approximation_at_1:.4f} nats")
    c[1].metric("breakdown √(2 ln T)", f"{view.breakdown:.2f}")
    c[2].metric(
        "curve leaves the formula at",
        "—" if view.breaks_at is None else f"σ ≈ {view.breaks_at:.2f}",
        help=f"first σ where |simulated − approximation| > {scaling.APPROX_GAP} nats",
    )
    check_badges(view.checks)
    st.markdown(
        f"**Rows of T = {x.T:,} keys at d_k = {x.d_k}**, σ_q = {x.sigma_q:g}, σ_k = {x.sigma_k:g} (median "
        f"of {scaling.ROWS} rows per scale):"
    )
    number_table(view.table, "scaling_rows.csv", "sc_rows")
    st.caption(
        "Slips: dividing by d_k makes every row almost uniform (e^H ≈ T); saying unscaled gradients "
        "'vanish' — ‖J‖_F unscaled is larger, but concentrated on ~2 keys. Where the spec is off: at d_k = "
        "128, T = 4,096 it prints top weight 0.868, entropy 0.49, 22% of rows above 0.99 and ‖J‖_F 0.181; "
        "large samples give ≈ 0.82, 0.63, 18% and 0.23 (its 46% at d_k = 512 and the scaled 2,511 keys and "
        "0.025 do reproduce). It does not state its sample."
    )


def two_keys(view: scaling.TwoKeysView) -> None:
    x = view.inputs
    fig = charts.two_key_curves(
        view.widths,
        view.exact,
        view.gaussian,
        view.simulated,
        view.simulated_se,
        "Two keys: P(top weight > 0.99) against d_k",
    )
    figures.show(fig, key="sc_two")
    rows = [
        {"scale": n, "exact (integral over ‖q‖² ~ χ²)": v["exact"], "Gaussian (‖q‖² = d_k)": v["gaussian"]}
        for n, v in view.at_d_k.items()
    ]
    st.markdown(f"At **d_k = {x.d_k}** the gap must exceed ln 99 = {view.threshold:.3f}:")
    number_table(rows, "scaling_two_keys.csv", "sc_two")
    check_badges(view.checks)
    st.caption(
        f"Simulated: {scaling.TWO_KEY_DRAWS} draws of real q, k₁, k₂ per width (a share of 0 has no point "
        "on the log axis). Card 3 at d_k = 128: exact 0.773 / 0.00135, Gaussian 0.774 / 0.00116."
    )


def aligned(view: scaling.AlignmentView) -> None:
    x = view.inputs
    curve = view.curve
    by_rule = {r.value: ([m.mean for m in ms], [m.sd for m in ms]) for r, ms in curve.by_rule.items()}
    fig = charts.alignment_plot(curve.d_ks, by_rule, x.d_k, f"k = ρq + √(1−ρ²) z, ρ = {x.rho:g}")
    figures.show(fig, key="sc_align")
    rows = [
        {
            "scale": r.value,
            "mean simulated": s.mean,
            "mean exact": s.theory.mean,
            "sd simulated": s.sd,
            "sd exact": s.theory.sd,
            "row entropy at ρ = 0 (nats)": view.init_entropy_simulated[r],
            "ln T − α²d_k/2": view.init_entropy[r],
        }
        for r, s in view.samples.items()
    ]
    number_table(rows, "scaling_alignment.csv", "sc_align")
    check_badges(view.checks)
    st.caption(
        f"ln T = {view.max_entropy:.4f}. At ρ = 0, 1/d_k gives spread 1/√d_k: rows almost uniform (card 16: "
        "8.314 vs 8.318 at d_k = 128, T = 4,096). Slip: declaring one scale right at every stage — √d_k is "
        "an argument about initialization, d_k one about trained alignment."
    )


def sinks_section(view: scaling.SinksView) -> None:
    x = view.inputs
    w, a, g, window = x.target_weight, x.advantage, x.gain, x.window
    m = st.columns(4)
    m[0].metric(f"advantage for w = {w:g}", f"{view.advantage_for_target:.3f}")
    m[1].metric(f"sink weight at a = {a:g}", f"{view.weight_for_advantage:.2%}")
    m[2].metric(f"cap at g = {g:g}", f"{view.cap:.4g}")
    m[3].metric(
        f"gain needed for {w:g}", f"{view.gain_for_target:.3f}", help=f"bandwidth 1/√g = {view.bandwidth:.3g}"
    )
    check_badges(view.checks)
    st.caption(
        f"Unit vectors with the usual scale (g = 1/√d_k = {view.usual_gain:.4f}): cap {view.usual_cap:.2g}, "
        f"bandwidth {view.usual_bandwidth:.3g} — no row can select anything. All at T = {x.T:,}."
    )
    figures.show(charts.cap_curves(view.gains, view.caps, w, "QK-norm caps the top weight"), key="sc_caps")
    number_table(view.table, "scaling_sinks.csv", "sc_sinks")
    ev = view.eviction
    st.markdown(
        f"**Eviction** — {len(ev.positions) + window} tokens, a local head whose sink (token 0, value 0) "
        f"takes w = {w:g}. The slip (drop the oldest tokens first) against StreamingLLM (4 sinks + window):"
    )
    left, right = st.columns(2)
    left.metric(
        "✗ window only: relative error",
        f"{ev.relative_error['window']:.3g}",
        help=f"predicted w/(1 − w) = {ev.predicted_window_error:.3g}",
    )
    right.metric("✓ sinks + window: relative error", f"{ev.relative_error['sinks + window']:.2g}")
    figures.show(charts.eviction_chart(ev.positions, ev.error, "Output error after eviction"), key="sc_evict")
    st.caption("Seeded data: the spec gives no sequence for this experiment.")


# -- sidebar and sections ---------------------------------------------------------------------
SHOW = {
    Section.VARIANCE: variance,
    Section.ENTROPY: entropy,
    Section.TWO_KEYS: two_keys,
    Section.ALIGNMENT: aligned,
    Section.SINKS: sinks_section,
}


def inputs() -> tuple[Section, ScalingInputs]:
    """The sidebar's numbers, checked, and the section (the page stops on a number to fix)."""
    with st.sidebar:
        st.header("Inputs")
        d_k = widgets.number("d_k", 1, MAX_D_K, 128, key="sc_dk", step=1)
        sigma_q = widgets.slider("σ_q", 0.0, 3.0, 1.0, key="sc_sq", step=0.05)
        sigma_k = widgets.slider("σ_k", 0.0, 3.0, 1.0, key="sc_sk", step=0.05)
        T = widgets.number("T (keys)", 2, MAX_KEYS, 4096, key="sc_T", step=1)
        rho = widgets.slider("alignment ρ", -1.0, 1.0, 0.5, key="sc_rho", step=0.05)
        rule = widgets.selectbox("scale", ScaleRule, key="sc_rule")
        seed = widgets.number("seed", 0, 10_000, 0, key="sc_seed", step=1)
        asked = ScalingInputs(
            int(d_k), float(sigma_q), float(sigma_k), int(T), float(rho), ScaleRule(rule), int(seed)
        )
        x = compute(scaling.validate, asked, inputs=INPUTS)
    section = section_picker(Section, key="sc_section")
    require(x)
    return section, x


def build(ask: tuple[Section, ScalingInputs]):
    return compute(scaling.view, ask[0], section_inputs(*ask), inputs=INPUTS)


def show(ask: tuple[Section, ScalingInputs], view) -> None:
    run_section(SHOW[ask[0]], view, inputs=INPUTS)
    show_code("attn_core.theory.scaling: the exact two-key probability", scaling.CODE)


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
