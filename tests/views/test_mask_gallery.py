"""Gallery masks against brute-force definitions and against what they are for.

Oracles: nested-loop definitions of each mask written here from the prose; for packed documents,
torch SDPA run on each document separately (what the block-diagonal mask must reproduce).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attn_core.masks import document_mask, prefix_lm_mask
from attn_core.views import mask_gallery as mg

F64 = torch.float64
TOL = 1e-12  # float64 SDPA on the same rows, different batch layout: summation order only (~1e-15)


def brute(L, S, rule):
    off = S - L
    return torch.tensor([[rule(i + off, j) for j in range(S)] for i in range(L)], dtype=torch.bool)


@pytest.mark.parametrize(
    ("L", "S", "lengths"), [(6, 6, [2, 3, 1]), (4, 7, [3, 4]), (1, 5, [5]), (9, 9, [1] * 9)]
)
@pytest.mark.parametrize("causal", [True, False])
def test_document_mask_matches_definition(L, S, lengths, causal):
    doc = [d for d, n in enumerate(lengths) for _ in range(n)]
    expected = brute(L, S, lambda i, j: doc[i] == doc[j] and (j <= i or not causal))
    assert torch.equal(document_mask(L, S, lengths, causal=causal), expected)


def test_packed_documents_equal_separate_documents():
    lengths = [3, 1, 4]
    T, d = sum(lengths), 5
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(T, d, generator=g, dtype=F64) for _ in range(3))
    packed = F.scaled_dot_product_attention(q, k, v, attn_mask=document_mask(T, T, lengths), dropout_p=0.0)
    start = 0
    for n in lengths:
        sl = slice(start, start + n)
        alone = F.scaled_dot_product_attention(q[sl], k[sl], v[sl], is_causal=True, dropout_p=0.0)
        assert torch.allclose(packed[sl], alone, atol=TOL, rtol=0)
        start += n


@pytest.mark.parametrize(("L", "S", "prefix"), [(6, 6, 3), (6, 6, 0), (6, 6, 6), (3, 8, 5)])
def test_prefix_lm_matches_definition(L, S, prefix):
    expected = brute(L, S, lambda i, j: j <= i or j < prefix)
    assert torch.equal(prefix_lm_mask(L, S, prefix), expected)


def test_prefix_lm_with_no_prefix_is_causal_and_full_prefix_is_bidirectional():
    assert torch.equal(prefix_lm_mask(5, 5, 0), brute(5, 5, lambda i, j: j <= i))
    assert bool(prefix_lm_mask(5, 5, 5).all())


def test_parse_grid_reads_every_spelling():
    grid = mg.parse_grid("1 0 0\n#.x\n\n■·█\n")
    assert torch.equal(grid, torch.tensor([[1, 0, 0], [1, 0, 1], [1, 0, 1]], dtype=torch.bool))
    assert torch.equal(mg.parse_grid(mg.format_grid(grid)), grid)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("10\n1", "row 2 has 1"),
        ("1?", "column 2"),
        ("1\n" * 33, "capped"),
        ("1" * 33, "capped"),
    ],
)
def test_parse_grid_errors_name_the_problem(text, message):
    with pytest.raises(ValueError, match=message):
        mg.parse_grid(text)


def test_fully_masked_rows_are_reported():
    view = mg.gallery_mask("custom painted grid", 0, 0, grid_text="10\n00\n01")
    assert view.fully_masked_rows == (1,)
    assert (view.allowed_pairs, view.total_pairs) == (2, 6)
    # Bottom-right alignment with more queries than keys leaves the first L - S rows empty.
    assert mg.gallery_mask("causal (bottom-right, cached prefix)", 5, 3).fully_masked_rows == (0, 1)


@pytest.mark.parametrize("kind", mg.GALLERY_KINDS)
def test_every_kind_builds_a_bool_l_by_s_mask(kind):
    view = mg.gallery_mask(
        kind, 4, 7, window=2, valid_keys=5, doc_lengths=[3, 4], prefix=2, grid_text="110\n011"
    )
    expected_shape = (2, 3) if kind == "custom painted grid" else (4, 7)
    assert view.allowed.dtype == torch.bool and tuple(view.allowed.shape) == expected_shape
    assert view.fraction == pytest.approx(view.allowed_pairs / view.total_pairs, abs=1e-15)


def test_padding_kind_is_the_key_padding_mask_on_every_row():
    view = mg.gallery_mask("padding", 3, 6, valid_keys=4)
    row = torch.tensor([1, 1, 1, 1, 0, 0], dtype=torch.bool)  # 4 real keys, then 2 pads
    assert tuple(view.allowed.shape) == (3, 6)
    for i in range(3):
        assert torch.equal(view.allowed[i], row)


def test_causal_fraction_is_t_plus_one_over_two_t():
    assert mg.gallery_mask("causal (top-left)", 5, 5).fraction == 0.6  # spec card 6: 15/25


@pytest.mark.parametrize(
    ("kind", "kwargs", "message"),
    [
        ("document (block-diagonal)", {"doc_lengths": [2, 2]}, "add up"),
        ("prefix-LM", {"prefix": 9}, "prefix"),
        ("sliding window", {"window": 0}, "window"),
        ("causal (top-left)", {"L": 600}, "range"),
        ("nonsense", {}, "unknown mask kind"),
    ],
)
def test_gallery_errors(kind, kwargs, message):
    args = {"L": 5, "S": 5, **kwargs}
    L, S = args.pop("L"), args.pop("S")
    with pytest.raises(ValueError, match=message):
        mg.gallery_mask(kind, L, S, **args)


def test_parse_lengths():
    assert mg.parse_lengths("3, 2 4") == [3, 2, 4]
    for bad, message in [("", "type"), ("3, x", "whole number"), ("0", "at least one")]:
        with pytest.raises(ValueError, match=message):
            mg.parse_lengths(bad)


@pytest.mark.parametrize(("L", "S"), [(5, 3), (3, 5), (4, 4), (1, 6), (6, 1)])
@pytest.mark.parametrize(
    ("kind", "offset"),
    [("causal (top-left)", lambda L, S: 0), ("causal (bottom-right, cached prefix)", lambda L, S: S - L)],
)
def test_row_positions_follow_the_masks_alignment(kind, offset, L, S):
    """Each row's position must allow exactly the keys the row allows: j ≤ position (causal)."""
    view = mg.gallery_mask(kind, L, S)
    assert view.query_positions == tuple(i + offset(L, S) for i in range(L))
    for row, p in zip(view.allowed.tolist(), view.query_positions, strict=True):
        assert row == [j <= p for j in range(S)]


def test_top_left_positions_agree_with_sdpa_is_causal():
    """Oracle: SDPA's is_causal (top-left). Row i's output is the softmax over keys j ≤ position i."""
    L, S, d = 5, 3, 4
    g = torch.Generator().manual_seed(0)
    q, k, v = (
        torch.randn(L, d, generator=g, dtype=F64),
        *(torch.randn(S, d, generator=g, dtype=F64) for _ in range(2)),
    )
    sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.0)
    view = mg.gallery_mask("causal (top-left)", L, S)
    for i, p in enumerate(view.query_positions):
        keys = slice(0, min(p, S - 1) + 1)
        w = torch.softmax(q[i] @ k[keys].T / d**0.5, -1)
        assert torch.allclose(sdpa[i], w @ v[keys], atol=TOL, rtol=0)


def test_painted_grid_rows_are_their_line_numbers():
    assert mg.gallery_mask("custom painted grid", 0, 0, grid_text="10\n01\n11").query_positions == (0, 1, 2)
