"""AppTest (no browser) of the "What one head can express" page: card 8's smoother, card 10's ranks
and selection, card 17's collapse, the change of basis and heads sum, shared links and bad input.
Oracles: a Nadaraya–Watson estimator written in numpy (tests/theory/test_expressivity.py) and
closed forms (generic random Q, K of width d_k give rank exactly min(d_k, T))."""

import functools

import numpy as np
import pytest
from apptest_helpers import badges, frame, metric, open_section
from theory_reference import nw_numpy

from attn_core.theory.kernel_smoothing import noisy_sine

PAGE = "pages/one_head.py"


section = functools.partial(open_section, key="oh_section")


def all_green(at) -> bool:
    return bool(badges(at)) and all(b.startswith(":green-badge") for b in badges(at))


def test_defaults_render_the_smoother(app):
    at = app(PAGE)
    assert not at.exception and at.error.len == 0
    assert float(metric(at, "max |NW − attention with bias|")) <= 1e-12
    assert all_green(at)


@pytest.mark.parametrize("lam", [0.25, 1.0])
def test_bandwidth_changes_the_no_bias_error(app, lam):
    at = app(PAGE)
    at.slider(key="oh_lam").set_value(lam).run()
    assert not at.exception
    x, y = (t.numpy() for t in noisy_sine(40, 0.3, 0))  # the page's seeded data
    grid = np.linspace(0, 2 * np.pi, 200)
    nw = nw_numpy(grid, x, y, lam)
    plain = nw_numpy(grid, x, y, lam, extra=np.exp((x**2 - x.max() ** 2) / (2 * lam**2)))
    assert metric(at, "✗ max |NW − attention without bias|") == f"{np.abs(nw - plain).max():.3g}"
    assert all_green(at)


def test_ranks_follow_d_k(app):
    at = section(app(PAGE), "Rank of S, P, log P")
    ranks = dict(zip(*frame(at, "numerical rank")[["matrix", "numerical rank"]].T.values, strict=True))
    assert ranks == {"S": 8, "P": 64, "log P": 9}  # card 10 at T = 64, d_k = 8
    at.slider(key="oh_dk").set_value(3).run()
    ranks = dict(zip(*frame(at, "numerical rank")[["matrix", "numerical rank"]].T.values, strict=True))
    assert ranks == {"S": 3, "P": 64, "log P": 4}
    assert all_green(at)
    assert at.query_params["oh_dk"] == "3"


def test_selection_on_the_circle(app):
    at = section(app(PAGE), "Which keys can win")
    assert metric(at, "d_k = 2: keys that some query picks") == "12 of 12"
    assert metric(at, "most distinct top keys in a trial") == "2"
    at.slider(key="oh_circle").set_value(20).run()
    assert metric(at, "d_k = 2: keys that some query picks") == "20 of 20"
    assert all_green(at)


def test_collapse_and_circuits(app):
    at = section(app(PAGE), "Rank collapse")
    assert float(metric(at, "cubic rate: slope per decade")) == pytest.approx(3.0, abs=0.005)
    assert all_green(at)
    at = section(at, "Two circuits & heads")
    red = [b for b in badges(at) if b.startswith(":red-badge")]
    assert len(red) == 1 and "same R on both, general R" in red[0]  # the slip, beside the right answer
    assert len(badges(at)) == 6


def test_bad_input_gives_a_message(app):
    at = section(app(PAGE), "Two circuits & heads")
    at.number_input(key="oh_heads").set_value(3).run()
    assert not at.exception
    assert any("not a multiple" in e.value for e in at.error)
    at.number_input(key="oh_heads").set_value(4).run()
    at = section(at, "Nadaraya–Watson")
    at.slider(key="oh_lam").set_value(0.0).run()
    assert not at.exception and any("bandwidth" in e.value for e in at.error)


# What each section's view reads (attn_core/views/one_head.py: kernel_view … circuits_view), by hand.
SIDEBAR = {
    "Nadaraya–Watson": {"seed"},
    "Rank of S, P, log P": {"T (tokens, rank study)", "d_k (rank study)", "seed"},
    "Which keys can win": {"keys on the circle", "seed"},
    "Rank collapse": {"layers", "width d (collapse, circuits)", "random stacks", "seed"},
    "Two circuits & heads": {"width d (collapse, circuits)", "heads h (must divide d)", "seed"},
}


@pytest.mark.parametrize("name", list(SIDEBAR))
def test_the_sidebar_shows_only_the_chosen_sections_controls(app, name):
    at = section(app(PAGE), name)
    shown = {w.label for w in (*at.sidebar.slider, *at.sidebar.number_input)}
    assert shown == SIDEBAR[name]


def test_a_hidden_control_keeps_its_value(app):
    at = section(app(PAGE), "Rank of S, P, log P")
    at.slider(key="oh_dk").set_value(3).run()
    at = section(at, "Which keys can win")
    at = section(at, "Rank of S, P, log P")
    assert at.slider(key="oh_dk").value == 3
    ranks = dict(zip(*frame(at, "numerical rank")[["matrix", "numerical rank"]].T.values, strict=True))
    assert ranks["S"] == 3
