"""AppTest (no browser) of the home page and the Attention Playground: defaults, every input
source, shared links, bad input, and the slips. Numbers are checked against the spec or SDPA."""

import json

import pytest
import torch
import torch.nn.functional as F
from apptest_helpers import badges, heatmap_z, metric

PAGE = "pages/playground.py"


def test_home_links_every_page(app):
    at = app()
    assert not at.exception
    from lab_ui.nav import PAGES

    assert at.title[0].value == "Attention Lab"
    assert len(at.get("page_link")) == len(PAGES)


def test_defaults_show_the_toy_row(app):
    at = app(PAGE)
    assert not at.exception
    assert at.error.len == 0
    assert badges(at)[0].startswith(":green-badge[✓ matches torch SDPA")
    # The spec's bank row: weights (0.140, 0.576, 0.284), output (0.576, 0.284).
    stats = at.dataframe[0].value if at.dataframe[0].value.shape[0] == 1 else at.dataframe[1].value
    assert stats["max weight"].iloc[0] == pytest.approx(0.576, abs=5e-4)
    assert stats["top key"].iloc[0] == "river"
    weights = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert weights["layout"]["title"]["text"].startswith("Weights P")


def test_random_input_matches_sdpa_and_shows_its_size(app):
    at = app(PAGE)
    at.radio(key="in_src").set_value("random").run()
    at.slider(key="in_L").set_value(9).run()
    at.slider(key="in_S").set_value(13).run()
    at.slider(key="in_H").set_value(4).run()
    at.selectbox(key="in_Hkv").set_value(2).run()
    at.selectbox(key="in_mask").set_value("causal (bottom-right, cached prefix)").run()
    assert not at.exception and at.error.len == 0
    assert metric(at, "L (queries)") == "9" and metric(at, "S (keys)") == "13"
    assert metric(at, "heads (Q / KV)") == "4 / 2"
    # Allowed pairs of a bottom-right 9 × 13 mask: 9 rows seeing 5…13 keys = 81 of 117.
    assert metric(at, "allowed pairs") == f"{100 * 81 / 117:.3g}%"  # 69.2%
    assert all(b.startswith(":green-badge") for b in badges(at))


def test_shared_link_restores_the_view(app):
    at = app(PAGE, in_src="random", in_L=3, in_S=5, in_seed=42, in_mask="sliding window", in_win=2)
    assert not at.exception
    assert metric(at, "L (queries)") == "3"
    assert at.slider(key="in_win").value == 2
    assert at.number_input(key="in_seed").value == 42


def test_malformed_link_falls_back_to_defaults(app):
    at = app(PAGE, in_src="nonsense", in_L="abc")
    assert not at.exception
    assert at.radio(key="in_src").value == "toy: bank's row"


def test_non_numeric_cell_is_reported_and_page_survives(app):
    at = app(PAGE)
    at.radio(key="in_src").set_value("typed matrices").run()
    at.text_area(key="in_K").set_value("0, 0\n1, zero\n1, 1").run()
    assert not at.exception
    assert any("K row 2, column 2: 'zero' is not a number" in e.value for e in at.error)
    # The sidebar still works: fixing the cell brings the page back.
    at.text_area(key="in_K").set_value("0, 0\n1, 0\n1, 1").run()
    assert at.error.len == 0
    assert badges(at)[0].startswith(":green-badge")


@pytest.mark.parametrize(
    ("field", "text", "message"),
    [
        ("in_V", "0, 0\n1, 0", "K has 3 rows but V has 2"),
        ("in_Q", "2, -1, 5", "d_k must match"),
        ("in_Q", "2, inf", "not finite"),
        ("in_Q", "nan, 1", "not finite"),
        ("in_Q", "", "Q is empty"),
    ],
)
def test_bad_typed_matrices(app, field, text, message):
    at = app(PAGE)
    at.radio(key="in_src").set_value("typed matrices").run()
    at.text_area(key=field).set_value(text).run()
    assert not at.exception
    assert any(message in e.value for e in at.error)


def test_typed_matrices_match_sdpa(app):
    at = app(PAGE)
    at.radio(key="in_src").set_value("typed matrices").run()
    at.text_area(key="in_Q").set_value("1 2\n3 -1").run()
    at.selectbox(key="in_scale").set_value("none (1)").run()
    out = torch.tensor([[1.0, 2], [3, -1]], dtype=torch.float64)
    k = torch.tensor([[0.0, 0], [1, 0], [1, 1]], dtype=torch.float64)
    v = torch.tensor([[0.0, 0], [1, 0], [0, 1]], dtype=torch.float64)
    ref = F.scaled_dot_product_attention(out, k, v, scale=1.0)
    spec = json.loads(at.get("plotly_chart")[2].proto.spec)
    assert spec["layout"]["title"]["text"].startswith("Output")
    assert torch.allclose(torch.from_numpy(heatmap_z(spec).copy()), ref, atol=1e-12)
    assert badges(at)[0].startswith(":green-badge")


def test_fully_masked_row_is_explained(app):
    at = app(PAGE, in_src="random", in_L=8, in_S=6)
    at.selectbox(key="in_mask").set_value("causal (bottom-right, cached prefix)").run()
    assert not at.exception
    assert any("may attend to no key" in e.value for e in at.error)
    assert at.info[0].value.startswith("Fix the input")


def test_size_caps_are_enforced(app):
    # A link asking for more than the cap is clamped to the default instead of stalling the server.
    at = app(PAGE, in_src="random", in_L=100000)
    assert not at.exception
    assert at.slider(key="in_L").value == 6


@pytest.mark.parametrize("slip", ["wrong_axis", "multiply_mask", "qt_k"])
def test_each_slip_fails_a_check(app, slip):
    at = app(PAGE, in_src="random", in_L=5, in_S=5, in_mask="causal (top-left)")
    at.toggle(key="pg_slip_on").set_value(True).run()
    at.selectbox(key="pg_slip_which").set_value(slip).run()
    assert not at.exception
    assert any(b.startswith(":red-badge[✗") for b in badges(at))
    assert any(b.startswith(":green-badge[✓ rows sum to 1") for b in badges(at))


def test_temperature_sweep_reaches_uniform(app):
    at = app(PAGE)
    caption = next(c.value for c in at.caption if c.value.startswith("Entropy goes"))
    # Three allowed keys: the uniform limit is ln 3 = 1.099 nats.
    assert "ln(allowed keys) = 1.099" in caption


def test_projector_mode_enlarges_figures(app):
    at = app(PAGE)
    base = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["font"]["size"]
    at.toggle(key="projector").set_value(True).run()
    big = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["font"]["size"]
    assert big > base
    assert not at.exception


def test_choices_survive_a_page_switch_and_are_shared(app):
    # Never lose a user's work: the Gradients page reads the same input, and coming back to the
    # Playground finds it as it was left.
    at = app(PAGE)
    at.radio(key="in_src").set_value("random").run()
    at.slider(key="in_L").set_value(9).run()
    at.switch_page("pages/gradients.py").run()
    assert not at.exception
    assert at.slider(key="in_L").value == 9
    at.switch_page(PAGE).run()
    assert at.radio(key="in_src").value == "random"
    assert metric(at, "L (queries)") == "9"
