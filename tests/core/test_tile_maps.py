"""attn_core.tile_maps (and what it adds to heads, tile_plan, online) against dense recomputations.

Oracles: the full (H, L, L) weights of ``attn_core.attention`` in float64 under the materialized
``causal_mask`` / ``sliding_window_mask`` (GQA by repeating K), summed into tiles with a plain
reshape; the head metrics of ``attn_core.heads`` on those weights; hand-built one-hot patterns
with known distances; a brute-force look at every tile of a materialized mask; and a dispatch
probe that sees every tensor the kernel allocates.
"""

from __future__ import annotations

import math

import pytest
import torch
from tile_reference import LargestStorage, tiles_of

from attn_core import heads
from attn_core.attention import attention
from attn_core.masks import causal_mask, sliding_window_mask
from attn_core.online import online_attention
from attn_core.stats import row_entropy
from attn_core.tile_maps import MAX_REGION, LayerQK, region, tile_maps
from attn_core.tile_plan import plan_tiles

F64 = torch.float64
# float64 both ways. A tile mass, a score or a profile is a sum of ≤ L ≤ 130 weights ≤ 1, each
# e^{s − lse} with |s|, |lse| ≲ 20: rounding ≲ L · 20 · 2⁻⁵³ ≈ 3e-13 → 1e-12. The distance sums
# weights times t − j ≤ L: L times that → 1e-10.
TOL = 1e-12
TOL_DISTANCE = 1e-10

CASES = [  # (Hq, Hkv, L, d, window, tile, block): GQA, MQA, windows, ragged edges, L = 1
    (4, 2, 97, 8, None, 16, 32),
    (3, 1, 130, 8, 20, 8, 32),
    (2, 2, 64, 16, None, 64, 64),
    (2, 1, 50, 8, 1, 5, 15),
    (1, 1, 1, 4, None, 4, 4),
    (6, 3, 41, 4, 7, 3, 9),
]


def capture(Hq, Hkv, L, d, window, seed=0, dtype=F64) -> LayerQK:
    g = torch.Generator().manual_seed(seed)
    q = 1.5 * torch.randn(Hq, L, d, generator=g, dtype=dtype)  # peaky rows: a wrong mask shows
    k = 1.5 * torch.randn(Hkv, L, d, generator=g, dtype=dtype)
    return LayerQK(q, k, d**-0.5, window)


def dense(c: LayerQK) -> torch.Tensor:
    """(Hq, L, L) float64 weights by attn_core.attention with the materialized mask."""
    L = c.length
    mask = causal_mask(L, L) if c.sliding_window is None else sliding_window_mask(L, L, c.sliding_window)
    q, k = c.q.double(), c.k.double()
    return attention(q, k, k, mask, scale=c.scale).weights


@pytest.mark.parametrize(("Hq", "Hkv", "L", "d", "window", "tile", "block"), CASES)
def test_maps_scores_and_profiles_match_the_dense_weights(Hq, Hkv, L, d, window, tile, block):
    c = capture(Hq, Hkv, L, d, window)
    band = 5
    tm = tile_maps(c, tile, band, block=block, dtype=F64)
    P = dense(c)
    mass, mx = tiles_of(P, tile)
    assert (tm.mass - mass).abs().max() <= TOL and (tm.max - mx).abs().max() <= TOL
    assert (tm.mass.sum(-1) - 1).abs().max() <= TOL  # each row block's masses sum to 1
    S = (c.q.double() @ c.k.double().repeat_interleave(Hq // Hkv, 0).transpose(1, 2)) * c.scale
    S = S.masked_fill(P == 0, -math.inf)  # no weight underflows to 0 at these scores
    assert (tm.lse - torch.logsumexp(S, -1)).abs().max() <= TOL

    ref_rows = {
        "sink": heads.row_sink(P),
        "previous": heads.row_previous(P),
        "distance": heads.row_distance(P),
        "local": heads.row_local(P, band),
        "entropy": row_entropy(P),
    }
    ref_scores = {
        "sink": heads.sink_share(P),
        "distance": heads.mean_distance(P),
        "local": heads.local_share(P, band),
        "entropy": heads.mean_entropy(P),
    }
    if L > 1:  # one row has no previous token (heads' mean over no rows)
        ref_scores["previous"] = heads.previous_token_score(P)
    rows, scores = tm.rows.as_dict(), tm.scores()
    first = 1 if L > 1 else 0
    for name, ref in ref_rows.items():
        tol = TOL_DISTANCE if name == "distance" else TOL
        assert (rows[name][:, first:] - ref[:, first:]).abs().max() <= tol, name
    for name, ref in ref_scores.items():
        tol = TOL_DISTANCE if name == "distance" else TOL
        assert (scores[name] - ref).abs().max() <= tol, name

    edges = heads.distance_edges(L)
    assert tm.distance_edges == edges
    assert (tm.distance_mass - heads.distance_mass(P, edges)).abs().max() <= TOL
    assert (tm.distance_mass.sum(-1) - 1).abs().max() <= TOL
    pos_edges, profiles = tm.profiles(bins=7)
    assert pos_edges == heads.position_edges(L, 7)
    for name, ref in ref_rows.items():
        tol = TOL_DISTANCE if name == "distance" else TOL
        assert (profiles[name] - heads.position_profile(ref, pos_edges)).abs().max() <= tol, name


def test_float32_maps_within_their_rounding():
    """The default arithmetic is the model's float32. Each weight e^{s − lse} then carries a relative
    error of about (d + 4)·u·(|s| + |lse|) (a d-term dot product, the exp, the lse): with u = 2⁻²⁴,
    d = 16 and |s|, |lse| ≤ 12 here that is ≈ 3e-5 relative, so a mass or weight ≤ 1 is off by at most
    that; a score averages such terms (entropy multiplies them by |s| ≤ 12 once more)."""
    c = capture(4, 2, 300, 16, None, seed=3, dtype=torch.float32)
    tm = tile_maps(c)  # float32, defaults
    P = dense(c)
    bound = (16 + 4) * 2.0**-24 * 2 * float(tm.lse.abs().max() + 1)
    mass, mx = tiles_of(P, tm.tile)
    assert (tm.mass.double() - mass).abs().max() <= bound
    assert (tm.max.double() - mx).abs().max() <= bound
    scores = tm.scores()
    assert (scores["sink"].double() - heads.sink_share(P)).abs().max() <= bound
    assert (scores["previous"].double() - heads.previous_token_score(P)).abs().max() <= bound
    assert (scores["entropy"].double() - heads.mean_entropy(P)).abs().max() <= 12 * bound
    assert (scores["distance"].double() - heads.mean_distance(P)).abs().max() <= 300 * bound


def test_never_forms_the_score_matrix():
    L, Hq, Hkv, d, block = 1024, 4, 2, 16, 128
    c = capture(Hq, Hkv, L, d, None, dtype=torch.float32)
    with LargestStorage() as seen:
        tm = tile_maps(c, 64, block=block)
    # the design's largest blocks: the scaled Q (Hq·L·d) and one compute tile (Hq·block²), float32
    assert seen.largest <= 4 * max(Hq * L * d, Hq * block * block)
    assert seen.largest <= 4 * L * L // 16  # one float L × S matrix would be 4·L² bytes
    assert tm.tiles_run == 8 * 9 // 2  # the upper triangle of 8 × 8 compute tiles never ran
    with LargestStorage() as naive:
        dense(capture(Hq, Hkv, L, d, None, dtype=torch.float32))
    assert naive.largest >= 4 * L * L  # the probe does see an L × S matrix when there is one


@pytest.mark.parametrize(("Hq", "Hkv", "L", "d", "window", "tile", "block"), CASES[:4])
def test_region_equals_the_dense_block(Hq, Hkv, L, d, window, tile, block):
    c = capture(Hq, Hkv, L, d, window)
    tm = tile_maps(c, tile, block=block, dtype=F64)
    P = dense(c)
    for head, rows, cols in [(0, (0, L), (0, L)), (Hq - 1, (L // 3, L // 2 + 1), (L // 4, L // 2 + 3))]:
        got = region(c, tm.lse, head, rows, cols)
        assert got.shape == (rows[1] - rows[0], cols[1] - cols[0])
        assert (got - P[head, rows[0] : rows[1], cols[0] : cols[1]]).abs().max() <= TOL


def test_region_refuses_what_it_cannot_show():
    c = capture(2, 1, 40, 4, None)
    lse = tile_maps(c, 8, dtype=F64).lse
    for head, rows, cols, message in [
        (2, (0, 4), (0, 4), "head 2 is outside"),
        (0, (5, 5), (0, 4), "must lie within"),
        (0, (0, 41), (0, 4), "must lie within"),
    ]:
        with pytest.raises(ValueError, match=message):
            region(c, lse, head, rows, cols)
    big = capture(1, 1, 600, 4, None)
    with pytest.raises(ValueError, match=f"at most {MAX_REGION:,}"):
        region(big, torch.zeros(1, 600, dtype=F64), 0, (0, 600), (0, 600))


def test_bad_captures_and_sizes_are_refused():
    with pytest.raises(ValueError, match="cannot share"):
        LayerQK(torch.zeros(3, 4, 2), torch.zeros(2, 4, 2), 1.0)
    with pytest.raises(ValueError, match="q \\(Hq, L, d\\)"):
        LayerQK(torch.zeros(3, 4, 2), torch.zeros(3, 5, 2), 1.0)
    with pytest.raises(ValueError, match="not a multiple"):
        tile_maps(capture(1, 1, 8, 2, None), tile=3, block=8)


# ---------------------------------------------------------------------------------------------
# What the kernel stands on: the windowed tile plan, the windowed online kernel, heads' new metrics
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("L", "S", "bq", "bk", "window"), [(13, 13, 4, 5, 3), (33, 97, 10, 7, 20), (8, 8, 3, 3, 1)]
)
def test_window_plan_matches_a_brute_force_look_at_every_tile(L, S, bq, bk, window):
    plan = plan_tiles(L, S, (), bq, bk, causal=True, window=window)
    truth = sliding_window_mask(L, S, window)
    n_q, n_k = plan.shape
    for i in range(n_q):
        for j in range(n_k):
            r0, r1, c0, c1 = i * bq, min((i + 1) * bq, L), j * bk, min((j + 1) * bk, S)
            block = truth[r0:r1, c0:c1]
            assert plan.runs[i][j] == bool(block.any()) and plan.dense[i][j] == bool(block.all())
            if plan.runs[i][j]:
                blocked = plan.blocked(i, j, torch.device("cpu"))
                got = torch.ones_like(block) if blocked is None else ~blocked[0]
                assert torch.equal(got, block)


def test_window_plan_refuses_a_window_with_a_mask():
    with pytest.raises(ValueError, match="sliding window"):
        plan_tiles(4, 4, (), 2, 2, allowed=causal_mask(4, 4), window=2)


def test_online_attention_with_a_window_matches_the_dense_mask():
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, h, 45, 8, generator=g, dtype=F64) for h in (4, 2, 2))
    got = online_attention(q, k, v, causal=True, window=6, block_size=8, query_block_size=16)
    ref = attention(q, k, v, sliding_window_mask(45, 45, 6))
    assert (got.output - ref.output).abs().max() <= TOL and got.tiles_skipped > 0


def one_hot(T: int, reads) -> torch.Tensor:
    return torch.tensor([[1.0 if j == reads(t) else 0.0 for j in range(T)] for t in range(T)], dtype=F64)


def test_distance_metrics_on_hand_built_heads():
    T = 12
    prev = one_hot(T, lambda t: max(t - 1, 0))
    sink = one_hot(T, lambda t: 0)
    assert float(heads.mean_distance(prev)) == 1 and heads.row_previous(prev)[1:].tolist() == [1.0] * (T - 1)
    assert float(heads.local_share(prev, 2)) == 1 and float(heads.local_share(prev, 1)) == 0
    assert float(heads.mean_distance(sink)) == pytest.approx(sum(range(1, T)) / (T - 1), abs=TOL)  # T / 2
    edges = heads.distance_edges(T)
    assert edges == [0, 1, 2, 4, 8, 12]
    assert heads.distance_mass(prev, edges).tolist() == [0.0, 1.0, 0.0, 0.0, 0.0]
    # the sink head's row t reads distance t: bins [1,2) one row, [2,4) two, [4,8) four, [8,12) four
    assert heads.distance_mass(sink, edges).tolist() == pytest.approx(
        [0, 1 / 11, 2 / 11, 4 / 11, 4 / 11], abs=TOL
    )
    # the uniform causal head: row t reads 0…t evenly, Σ_j (t − j)/(t + 1) = t / 2
    uniform = torch.tril(torch.ones(T, T, dtype=F64)) / torch.arange(1, T + 1, dtype=F64)[:, None]
    assert heads.row_distance(uniform).tolist() == pytest.approx([t / 2 for t in range(T)], abs=TOL)


def test_position_profile_is_the_mean_over_each_run():
    edges = heads.position_edges(11, 4)  # rows 1…10 in runs of ⌈10 / 4⌉ = 3
    assert edges == [1, 4, 7, 10, 11]
    ramp = torch.arange(11, dtype=F64)  # value t at row t
    assert heads.position_profile(ramp, edges).tolist() == pytest.approx([2, 5, 8, 10], abs=TOL)
    assert heads.position_edges(1, 4) == [0, 1] and heads.distance_edges(1) == [0, 1]
