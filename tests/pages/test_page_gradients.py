"""AppTest (no browser) of the Gradients page: the card 4 and 5 numbers on the toy, agreement with
torch autograd computed here, the size caps, bad input, shared links, and every slip failing.

Tolerances: the card prints three decimals (half a unit in the last place is 5e-4); values the
page computes in float64 and this test recomputes by autograd agree to 1e-12 (sums of a few O(1)
products in another order: ≤ 1e-15 apart)."""

import functools

import pytest
import torch
from apptest_helpers import badges, chart, frame, heatmap_z, metric, open_section

PAGE = "pages/gradients.py"
F64 = torch.float64
SLIPS = ["drop_rowsum", "forget_scale", "transpose_dv", "diagonal_jacobian"]  # ids of slips.backward.SLIPS


section = functools.partial(open_section, key="gr_section", errors_allowed=True)


def toy_autograd_dS() -> torch.Tensor:
    """∂⟨O, g⟩/∂s for bank's row by autograd through torch.softmax, g = (−1, 0)."""
    q = torch.tensor([2.0, -1.0], dtype=F64)
    k = torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]], dtype=F64)
    v = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=F64)
    s = ((k @ q) / 2**0.5).requires_grad_(True)
    loss = torch.softmax(s, -1) @ v @ torch.tensor([-1.0, 0.0], dtype=F64)
    return torch.autograd.grad(loss, s)[0]


def test_jacobian_of_bank_row(app):
    at = app(PAGE)
    assert not at.exception and at.error.len == 0
    eig = frame(at, "eigenvalue")
    assert eig["eigenvalue"].tolist() == pytest.approx([0.393, 0.175, 0.0], abs=5e-4)
    assert eig["|cos(eigenvector, 1)|"].iloc[-1] == pytest.approx(1.0, abs=1e-12)  # zero along 1
    assert metric(at, "λ_max(J)") == "0.3933"
    assert metric(at, "Gershgorin 2·max p(1−p)") == "0.4885"  # the card's 0.488 = 2 · 0.576 · 0.424
    J = heatmap_z(chart(at, "J = diag(p)"))
    assert J[1, 1] == pytest.approx(0.244, abs=5e-4) and J[1, 2] == pytest.approx(-0.164, abs=5e-4)
    assert all(b.startswith(":green-badge") for b in badges(at))


def test_temperature_saturates_the_row(app):
    at = app(PAGE)
    at.slider(key="gr_tau").set_value(0.02).run()
    assert not at.exception
    # τ = 0.02: river's score beats bank's by 0.707 / 0.02 ≈ 35 nats, so λ_max ≈ e⁻³⁵ ≈ 6e-16.
    assert float(metric(at, "λ_max(J)")) < 1e-14
    assert all(b.startswith(":green-badge") for b in badges(at))


def test_two_equal_keys_reach_the_half_bound(app):
    at = app(PAGE, in_src="typed matrices")
    at.text_area(key="in_Q").set_value("1, 0").run()
    at.text_area(key="in_K").set_value("1, 0\n1, 0").run()
    at.text_area(key="in_V").set_value("1, 0\n0, 1").run()
    assert not at.exception and at.error.len == 0
    assert metric(at, "λ_max(J)") == "0.5" and metric(at, "Gershgorin 2·max p(1−p)") == "0.5"


def test_backward_three_way_agreement_on_the_toy(app):
    at = section(app(PAGE), "Backward pass")
    agree = frame(at, "oracle")
    assert agree["oracle"].tolist() == [
        "torch autograd (SDPA)",
        "finite differences, ε = 1e-04",
        "finite differences, ε = 1e-05",
        "finite differences, ε = 1e-06",
    ]
    assert (agree["agrees"] == "✓").all()
    dS = heatmap_z(chart(at, "dS"))[0]
    assert torch.allclose(torch.from_numpy(dS.copy()), toy_autograd_dS(), rtol=0, atol=1e-12)
    assert dS.tolist() == pytest.approx([0.081, -0.244, 0.164], abs=5e-4)
    assert all(b.startswith(":green-badge") for b in badges(at))


def test_per_key_reading_and_descent_step(app):
    at = section(app(PAGE), "One row, one key")
    reading = frame(at, "gᵀv_j")
    assert reading["∂L/∂s_j"].tolist() == pytest.approx([0.081, -0.244, 0.164], abs=5e-4)
    assert reading["gᵀo"].iloc[0] == pytest.approx(-0.576, abs=5e-4)
    assert metric(at, "∂L/∂q") == "-0.057, 0.116"
    step = frame(at, "Δ score")
    river = step[step["key"] == "river"].iloc[0]
    assert river["Δ score"] > 0  # the step raises river's score
    assert step[step["key"] == "bank"].iloc[0]["Δ score"] < 0
    assert float(metric(at, "after the step")) < float(metric(at, "row loss gᵀo before"))


def test_random_gqa_causal_matches_autograd(app):
    at = app(PAGE, in_src="random", in_L=4, in_S=6, in_H=4, in_Hkv=2, gr_G="random (seeded)")
    at.selectbox(key="in_mask").set_value("causal (bottom-right, cached prefix)").run()
    at.slider(key="gr_head").set_value(3).run()
    section(at, "Backward pass")
    assert at.error.len == 0
    agree = frame(at, "oracle")
    assert len(agree) == 4 and (agree["agrees"] == "✓").all()
    assert chart(at, "dK (KV head 1)")  # head 3 of 4 reads KV head 3 // 2 = 1
    assert all(b.startswith(":green-badge") for b in badges(at))


def test_finite_differences_are_capped(app):
    # 64 × 64 with d = 8: 3 · 512 = 1,536 coordinates, over the 1,024 cap.
    at = app(PAGE, in_src="random", in_L=64, in_S=64, in_dk=8, in_dv=8, gr_section="Backward pass")
    assert not at.exception
    assert any("Finite differences skipped" in w.value and "1,024" in w.value for w in at.warning)
    assert len(frame(at, "oracle")) == 1
    assert badges(at)[0].startswith(":green-badge[✓ matches torch autograd")


def test_long_row_shows_o_t_numbers_without_forming_j(app):
    at = app(PAGE, in_src="random", in_L=2, in_S=80, in_dk=2, in_dv=2)
    assert not at.exception and at.error.len == 0
    assert any("80 allowed keys" in i.value for i in at.info)
    assert 0 < float(metric(at, "λ_max(J)")) <= float(metric(at, "Gershgorin 2·max p(1−p)")) <= 0.5


def test_bad_typed_gradient_is_reported_and_page_survives(app):
    at = app(PAGE, gr_G="typed")
    at.text_area(key="gr_Gtext").set_value("-1, 0, 5").run()
    assert not at.exception
    assert any("G must be L × d_v = 1 × 2" in e.value for e in at.error)
    at.text_area(key="gr_Gtext").set_value("-1, oops").run()
    assert any("not a number" in e.value for e in at.error)
    at.text_area(key="gr_Gtext").set_value("-1, 0").run()
    assert at.error.len == 0
    assert metric(at, "loss L = ⟨O, G⟩") == "-0.575975"  # −o_geography = −0.576


def test_shared_link_restores_the_view(app):
    at = app(PAGE, in_src="random", in_L=3, in_S=5, gr_row=1, gr_section="One row, one key", gr_lr=2.5)
    assert not at.exception
    assert at.slider(key="gr_row").value == 1 and at.slider(key="gr_lr").value == 2.5
    assert metric(at, "query row") == "q3"  # row 1 of 3 queries sits at position 1 + 5 − 3
    assert frame(at, "gᵀv_j") is not None


@pytest.mark.parametrize("slip", SLIPS)
def test_each_slip_fails_a_check(app, slip):
    at = app(PAGE, in_src="random", in_L=3, in_S=4, gr_section="Slips")
    at.toggle(key="gr_slip_on").set_value(True).run()
    at.selectbox(key="gr_slip_which").set_value(slip).run()
    assert not at.exception
    assert any(b.startswith(":red-badge[✗") for b in badges(at))
    assert any(b.startswith(":green-badge[✓ dQ matches autograd") for b in badges(at))


def test_forgotten_scale_is_invisible_at_scale_one(app):
    at = app(PAGE, gr_section="Slips", gr_slip_on="true", gr_slip_which=SLIPS[1])
    at.selectbox(key="in_scale").set_value("none (1)").run()
    assert not at.exception
    assert not any(b.startswith(":red-badge") for b in badges(at))
    assert any("With scale = 1 forgetting the scale changes nothing" in w.value for w in at.warning)
