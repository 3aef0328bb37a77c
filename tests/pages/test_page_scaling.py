"""AppTest (no browser) of the Scaling page: card 3's variance, entropy and two-key numbers, card 16's
alignment, card 18's sink calculator and eviction, the tied-Q/K slip failing beside the right answer,
shared links and bad input. Oracles: closed forms written here, and the χ² quadrature of
tests/theory/test_theory_scaling.py (numpy, independent of attn_core)."""

import functools
import math

import pytest
from apptest_helpers import badges, frame, metric, open_section
from theory_reference import chi2_expectation, two_sided_tail

PAGE = "pages/scaling.py"


section = functools.partial(open_section, key="sc_section")


def all_green(at) -> bool:
    return bool(badges(at)) and all(b.startswith(":green-badge") for b in badges(at))


def test_defaults_render_card_3(app):
    at = app(PAGE)
    assert not at.exception and at.error.len == 0
    assert metric(at, "d_k σ_q² σ_k² (theory)") == "128"
    assert all_green(at)
    assert len(at.get("plotly_chart")) == 3  # one histogram per scale rule


def test_unequal_spreads_change_the_theory(app):
    at = app(PAGE)
    at.number_input(key="sc_dk").set_value(64).run()
    at.slider(key="sc_sq").set_value(1.5).run()
    at.slider(key="sc_sk").set_value(0.5).run()
    assert not at.exception
    assert metric(at, "d_k σ_q² σ_k² (theory)") == f"{64 * 1.5**2 * 0.5**2:.4g}" == "36"
    # 1/√d_k leaves σ_q²σ_k² = 0.5625; 4,000 pairs put the simulated value within ~4 SE (≈ 0.05)
    assert float(metric(at, "Var under 1/√d_k")) == pytest.approx(0.5625, abs=0.06)
    assert all_green(at)
    assert at.query_params["sc_dk"] == "64"  # the view is in the URL


def test_tied_qk_slip_fails_beside_the_right_answer(app):
    at = app(PAGE)
    at.toggle(key="sc_slip_on").set_value(True).run()
    assert not at.exception
    # ‖x‖²/√d_k has mean √d_k = 11.31 (χ² mean d_k): printed to 4 digits, SE √(2/4000) = 0.022
    assert float(metric(at, "tied: mean of α‖x‖²")) == pytest.approx(math.sqrt(128), abs=0.1)
    red = [b for b in badges(at) if b.startswith(":red-badge")]
    assert len(red) == 2 and "mean 0" in red[0]  # the slip fails both of card 3's claims…
    assert (
        sum("own prediction" in b and b.startswith(":green") for b in badges(at)) == 1
    )  # …and meets its own


def test_two_keys_match_the_quadrature_and_card_3(app):
    at = section(app(PAGE), "Two keys, exactly")
    df = frame(at, "exact (integral over ‖q‖² ~ χ²)")
    exact = dict(zip(df["scale"], df["exact (integral over ‖q‖² ~ χ²)"], strict=True))
    assert exact["none (1)"] == pytest.approx(chi2_expectation(two_sided_tail(1.0), 128), abs=1e-9)
    assert exact["1/√d_k"] == pytest.approx(chi2_expectation(two_sided_tail(128**-0.5), 128), abs=1e-9)
    assert round(exact["none (1)"], 3) == 0.773 and round(exact["1/√d_k"], 5) == 0.00135
    assert all_green(at)


def test_entropy_and_alignment_sections(app):
    at = section(app(PAGE), "Entropy & saturation")
    assert metric(at, "ln T − 1/2 (σ = 1)") == f"{math.log(4096) - 0.5:.4f} nats" == "7.8178 nats"
    assert metric(at, "breakdown √(2 ln T)") == "4.08"
    assert all_green(at)
    at = section(at, "Alignment (1/d_k)")
    df = frame(at, "mean exact")
    assert df["mean exact"].tolist() == pytest.approx([0.5 * math.sqrt(128), 0.5], rel=1e-12)
    assert df["sd exact"].tolist() == pytest.approx([math.sqrt(1.25), math.sqrt(1.25 / 128)], rel=1e-12)
    assert all_green(at)


def test_sink_calculator_and_eviction(app):
    at = app(PAGE, sc_T=1024)
    at = section(at, "Sinks & QK-norm")
    assert metric(at, "advantage for w = 0.9") == f"{math.log(0.9 * 1023 / 0.1):.3f}" == "9.128"
    assert metric(at, "sink weight at a = 5") == f"{1 / (1 + 1023 * math.exp(-5)):.2%}" == "12.67%"
    at.slider(key="sc_g").set_value(2.0).run()
    assert metric(at, "cap at g = 2") == f"{1 / (1 + 1023 * math.exp(-4)):.4g}"
    assert float(metric(at, "✗ window only: relative error")) == pytest.approx(0.9 / 0.1, rel=1e-3)
    assert float(metric(at, "✓ sinks + window: relative error")) < 1e-4
    assert all_green(at)


def test_bad_input_gives_a_message(app):
    at = app(PAGE)
    at.slider(key="sc_sq").set_value(0.0).run()
    assert not at.exception
    assert any("σ_q" in e.value for e in at.error)
    assert any("Fix the input" in i.value for i in at.info)
    at.slider(key="sc_sq").set_value(1.0).run()
    assert at.error.len == 0 and all_green(at)
