"""The masking slips as a registry: every id runs with the right computation's arguments, returns
the same shapes, and fails a check that the right computation passes. The checks are written here
by hand (plain softmax over the allowed keys), not taken from the code under test."""

import math

import pytest
import torch

from attn_core.slips.masking import SLIPS
from attn_core.views import masks as view

T, D = 6, 4


def tokens(L: int = T, S: int = T):
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, n, D, generator=g, dtype=torch.float64) for n in (L, S, S))
    return q, k, v


def right(q, k, v):
    """Causal attention by hand: query i (at position S − L + i) reads keys j ≤ S − L + i."""
    L, S = q.shape[-2], k.shape[-2]
    s = q @ k.transpose(-1, -2) / math.sqrt(D)
    blocked = torch.arange(S)[None, :] > (torch.arange(L)[:, None] + S - L)
    p = s.masked_fill(blocked, -math.inf).softmax(-1)
    return p, p @ v


def test_every_slip_has_the_right_shapes_and_a_label():
    q, k, v = tokens()
    p, o = right(q, k, v)
    assert set(SLIPS) == {"zero_after_softmax", "triu_diagonal", "finite_fill", "top_left"}
    for slip in SLIPS.values():
        out = slip.fn(q, k, v)
        assert out.weights.shape == p.shape and out.output.shape == o.shape
        assert slip.label and slip.note


def test_zeroing_after_the_softmax_leaves_rows_short_of_one():
    q, k, v = tokens()
    p, _ = right(q, k, v)
    w = SLIPS["zero_after_softmax"].fn(q, k, v).weights
    assert torch.allclose(p.sum(-1), torch.ones(T, dtype=torch.float64))
    assert (w.sum(-1)[..., :-1] < 1 - 1e-6).all()  # every row but the last loses the future's mass


def test_triu_diagonal_empties_row_zero_and_finite_fill_hides_it():
    q, k, v = tokens()
    p, o = right(q, k, v)
    loud = SLIPS["triu_diagonal"].fn(q, k, v)
    quiet = SLIPS["finite_fill"].fn(q, k, v)
    assert torch.isnan(loud.weights[0, 0, 0]).all()
    assert torch.allclose(quiet.weights[0, 0, 0], torch.full((T,), 1 / T, dtype=torch.float64))
    assert (quiet.output - o).abs().max() > 1e-3


def test_top_left_with_a_cache_differs_from_the_full_pass():
    q, k, v = tokens(L=3, S=T)
    _, o = right(q, k, v)
    wrong = SLIPS["top_left"].fn(q, k, v).output
    assert (wrong - o).abs().max() > 1e-3


@pytest.mark.parametrize("slip_id", list(SLIPS))
def test_the_page_view_dispatches_on_the_id(slip_id):
    q, k, v = tokens()
    shown = view.slip_view(slip_id, q, k, v)
    assert shown.right.values.shape[-1] == T and shown.text
    assert view.SLIP_ALIASES[SLIPS[slip_id].label] == slip_id  # an old link's label still opens it
