"""Online softmax (card 15): the tiled kernel and its tile plan, the one-row trace, the merge, the
slips (attn_core.slips.online) and the page's views (attn_core.views.online_softmax).

Oracles, none of them attn_core.online itself:
- attn_core.attention (the plain float64 reference that forms the full L×S matrix) and torch's
  scaled_dot_product_attention (PyTorch's own kernel) for outputs;
- torch.logsumexp on independently formed scores for the lse;
- the spec's check numbers (bank's trace, Drill 11's merge, card 15's 4,096-key row);
- a brute-force count over attn_core.masks for which tiles hold an allowed pair, and a counter
  on the tile function for which tiles actually ran;
- a TorchDispatchMode that sees every tensor the kernel creates (no L×S tensor may appear).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from tile_reference import LargestStorage

from attn_core import online
from attn_core.attention import attention
from attn_core.masks import causal_mask, padding_mask, sliding_window_mask
from attn_core.online import (
    PartialState,
    merge_partials,
    online_attention,
    online_softmax_trace,
    partial_state,
)
from attn_core.slips.online import (
    SLIPS,
    slip_no_max_subtraction,
    slip_rescale_l_not_u,
    slip_wrong_sign_rescale,
)
from attn_core.tile_plan import plan_tiles
from attn_core.toy import bank_row
from attn_core.views import online_tiles
from attn_core.views.online_rows import head_row, row_split_merge, split_merge, walk_row
from attn_core.views.online_tiles import block_size_sweep

F64 = torch.float64
# fp64 tolerance for online vs direct: both sum at most S terms e^{s-m}·v with |v| ≲ 5 and the
# online path adds one rescale per block; the rounding error is bounded by ~(S + blocks)·u·max|v|
# ≈ 2,000 · 1.1e-16 · 5 ≈ 1e-12 for the largest case here. Observed ~1e-15.
TOL64 = 1e-12


def qkv(B: int, Hq: int, Hkv: int, L: int, S: int, d: int = 8, dv: int = 5, seed: int = 0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, Hq, L, d, generator=g, dtype=dtype)
    k = torch.randn(B, Hkv, S, d, generator=g, dtype=dtype)
    v = torch.randn(B, Hkv, S, dv, generator=g, dtype=dtype)
    return q, k, v


def random_mask(L: int, S: int, seed: int = 1) -> torch.Tensor:
    """Random (L, S) mask with at least one allowed key per row (diagonal-ish key forced on)."""
    g = torch.Generator().manual_seed(seed)
    allowed = torch.rand(L, S, generator=g) < 0.3
    allowed[torch.arange(L), torch.arange(L) % S] = True
    return allowed


MASKS = {
    "none": lambda L, S, B: None,
    "causal_bottom_right": lambda L, S, B: causal_mask(L, S),
    "causal_top_left": lambda L, S, B: causal_mask(L, S, "top_left") if L <= S else causal_mask(L, S),
    "sliding_window_3": lambda L, S, B: sliding_window_mask(L, S, 3),
    "padding": lambda L, S, B: padding_mask([max(1, S - 3 * b) for b in range(B)], S),
    "random": lambda L, S, B: random_mask(L, S),
}
SHAPES = [  # (B, Hq, Hkv, L, S): square, L < S (cached prefix), L > S, GQA, MQA, odd sizes
    (1, 1, 1, 1, 1),
    (2, 2, 2, 16, 16),
    (1, 4, 2, 7, 19),
    (2, 4, 1, 13, 11),
    (1, 3, 3, 33, 65),
]


# Causal and sliding-window masks leave the first rows empty when L > S (bottom-right
# alignment): those combinations are the fully-masked-row error, tested on their own below.
CASES = [
    (shape, name)
    for shape in SHAPES
    for name in MASKS
    if not (shape[3] > shape[4] and name in ("causal_bottom_right", "causal_top_left", "sliding_window_3"))
]


@pytest.mark.parametrize(
    ("shape", "mask_name"), CASES, ids=lambda c: "x".join(map(str, c)) if isinstance(c, tuple) else c
)
def test_online_equals_attention_every_block_size(shape, mask_name):
    B, Hq, Hkv, L, S = shape
    q, k, v = qkv(B, Hq, Hkv, L, S)
    allowed = MASKS[mask_name](L, S, B)
    reference = attention(q, k, v, allowed)
    lse_ref = torch.logsumexp(reference.scores, -1)  # torch's own logsumexp on the masked scores
    for block in range(1, S + 1):  # every block size 1…S, and one larger than S
        r = online_attention(q, k, v, allowed, block_size=block)
        assert (r.output - reference.output).abs().max() <= TOL64, block
        assert (r.lse - lse_ref).abs().max() <= TOL64, block
    r = online_attention(q, k, v, allowed, block_size=S + 5, query_block_size=3)
    assert (r.output - reference.output).abs().max() <= TOL64


@pytest.mark.parametrize("block", [1, 4, 7, 64])
def test_online_matches_torch_sdpa_causal_gqa(block):
    """PyTorch's kernel as a second, fully independent oracle (is_causal = top-left, L == S)."""
    q, k, v = qkv(2, 6, 2, 37, 37, d=16, dv=16)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    r = online_attention(q, k, v, causal=True, block_size=block)
    assert (r.output - expected).abs().max() <= TOL64


def test_causal_flag_equals_causal_mask_and_leading_axes_broadcast():
    q, k, v = qkv(1, 2, 2, 9, 14)
    q2 = torch.cat([q, 2 * q])  # (2, 2, 9, d) against k, v with batch 1: leading axes broadcast
    reference = attention(q2, k, v, causal_mask(9, 14))
    for block in (1, 3, 5, 14):
        r = online_attention(q2, k, v, causal=True, block_size=block)
        assert r.output.shape == (2, 2, 9, 5)
        assert (r.output - reference.output).abs().max() <= TOL64
        r2 = online_attention(q2, k, v, causal_mask(9, 14), block_size=block)
        assert r2.computed_tiles == r.computed_tiles


def brute_force_tiles(allowed: torch.Tensor, bq: int, bk: int, every: bool = False) -> set[tuple[int, int]]:
    """Tiles (i, j) holding at least one allowed (query, key) pair (``every``: only allowed
    pairs), by looking at every tile."""
    L, S = allowed.shape
    test = torch.all if every else torch.any
    return {
        (i, j)
        for i in range(math.ceil(L / bq))
        for j in range(math.ceil(S / bk))
        if bool(test(allowed[i * bq : (i + 1) * bq, j * bk : (j + 1) * bk]))
    }


@pytest.mark.parametrize(
    ("L", "S", "bq", "bk"), [(64, 64, 16, 16), (40, 64, 8, 16), (33, 97, 10, 7), (7, 7, 1, 1)]
)
def test_causal_block_skipping_computes_exactly_the_tiles_it_claims(monkeypatch, L, S, bq, bk):
    calls = []
    real_step = online.tile_step

    def counting_step(*args):
        calls.append(args[1].shape[1])  # keys in the tile that really ran
        return real_step(*args)

    monkeypatch.setattr(online, "tile_step", counting_step)
    q, k, v = qkv(1, 2, 2, L, S)
    r = online_attention(q, k, v, causal=True, block_size=bk, query_block_size=bq)
    expected = brute_force_tiles(causal_mask(L, S), bq, bk)
    assert r.computed_tiles == expected
    assert len(calls) == r.tiles_computed == len(expected)
    assert r.tiles_computed + r.tiles_skipped == r.tiles_total == math.ceil(L / bq) * math.ceil(S / bk)
    assert (r.output - attention(q, k, v, causal_mask(L, S)).output).abs().max() <= TOL64


@pytest.mark.parametrize(("L", "S", "bq", "bk"), [(13, 29, 4, 5), (33, 97, 10, 7), (8, 8, 3, 3)])
@pytest.mark.parametrize("kind", ["causal_flag", "causal_mask", "random", "random_and_causal"])
def test_tile_plan_matches_a_brute_force_look_at_every_tile(L, S, bq, bk, kind):
    """plan_tiles (closed form for the causal flag, block reductions for a mask) against looking
    at every tile of the materialized mask."""
    causal = kind in ("causal_flag", "random_and_causal")
    allowed = {"causal_flag": None, "causal_mask": causal_mask(L, S)}.get(kind, random_mask(L, S))
    if kind == "random":
        allowed = allowed | causal_mask(L, S)  # keep every row non-empty
    plan = plan_tiles(L, S, (1,), bq, bk, allowed, causal)
    truth = causal_mask(L, S) if allowed is None else allowed & (causal_mask(L, S) if causal else True)
    runs = {(i, j) for i, r in enumerate(plan.runs) for j, ok in enumerate(r) if ok}
    dense = {(i, j) for i, r in enumerate(plan.dense) for j, ok in enumerate(r) if ok}
    assert runs == brute_force_tiles(truth, bq, bk)
    assert dense == brute_force_tiles(truth, bq, bk, every=True)
    assert plan.shape == (math.ceil(L / bq), math.ceil(S / bk))


def test_square_causal_skips_the_upper_triangle_of_tiles():
    """n × n tiles, causal: n(n+1)/2 computed, n(n-1)/2 skipped (T = 4,096, blocks of 128: 528/496)."""
    n, b = 32, 4
    q, k, v = qkv(1, 1, 1, n * b, n * b)
    r = online_attention(q, k, v, causal=True, block_size=b, query_block_size=b)
    assert (r.tiles_computed, r.tiles_skipped) == (n * (n + 1) // 2, n * (n - 1) // 2)
    assert (r.blocks_computed, r.blocks_skipped) == (n * (n + 1) // 2, n * (n - 1) // 2)  # the other name


def test_padding_skips_only_tiles_no_batch_row_needs():
    q, k, v = qkv(2, 1, 1, 8, 32)
    allowed = padding_mask([5, 12], 32)  # keys 12…31 are padding in both batch rows
    r = online_attention(q, k, v, allowed, block_size=4, query_block_size=4)
    assert r.computed_tiles == {(i, j) for i in range(2) for j in range(3)}
    assert (r.output - attention(q, k, v, allowed).output).abs().max() <= TOL64


def test_never_forms_the_score_matrix():
    L = S = 512
    q, k, v = qkv(1, 2, 2, L, S, d=16, dv=16)
    with LargestStorage(torch.Tensor.numel) as seen:
        online_attention(q, k, v, causal=True, block_size=64, query_block_size=64)
    # biggest allowed: Q, K or [V, 1] as (BH, S, 17) = 2·512·17 numbers, or a 64×64 tile per head
    assert seen.largest <= 2 * S * 17
    assert seen.largest < 2 * L * S // 10  # the 2·L·S score matrix never exists
    with LargestStorage(torch.Tensor.numel) as naive:
        attention(q, k, v, causal_mask(L, S))
    assert naive.largest >= 2 * L * S  # the probe does see an L×S matrix when there is one


def test_low_precision_inputs_keep_fp32_state():
    q, k, v = qkv(1, 2, 2, 32, 200, d=16, dv=16, dtype=torch.float32)
    r = online_attention(q.half(), k.half(), v.half(), causal=True, block_size=32)
    assert r.output.dtype == torch.float16 and r.lse.dtype == torch.float32
    reference = attention(*(x.half().double() for x in (q, k, v)), causal_mask(32, 200)).output
    # fp32 state then one rounding to fp16: error ≤ u_fp16·max|o| = 2^-11·max|o|, plus fp32 noise
    assert (r.output.double() - reference).abs().max() <= 2.0**-11 * reference.abs().max() + 1e-5


def test_fully_masked_row_and_bad_arguments_raise():
    q, k, v = qkv(1, 1, 1, 6, 4)
    with pytest.raises(ValueError, match="may attend to no key"):
        online_attention(q, k, v, causal=True)  # bottom-right, L > S: rows 0, 1 see nothing
    allowed = torch.ones(6, 4, dtype=torch.bool)
    allowed[3] = False
    with pytest.raises(ValueError, match=r"row\(s\) \[3\]"):
        online_attention(q, k, v, allowed)
    with pytest.raises(ValueError, match="does not broadcast"):
        online_attention(q, k, v, torch.ones(5, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="block sizes"):
        online_attention(q, k, v, block_size=0)
    with pytest.raises(ValueError, match="keys but"):
        online_attention(q, k, v[..., :3, :])


# ---------------------------------------------------------------------------------------------
# The one-row trace: bank's numbers (card 15), rounded by the spec to 3 decimals → tol 5e-4
# ---------------------------------------------------------------------------------------------


def bank_scores() -> tuple[torch.Tensor, torch.Tensor]:
    toy = bank_row()
    scores = (toy.q @ toy.k.T).squeeze(0) / math.sqrt(2)  # (3,) = 0, 1.414, 0.707
    return scores, toy.v


def test_bank_trace_numbers():
    scores, values = bank_scores()
    trace = online_softmax_trace(scores, values, block_size=1)
    assert [(s.start, s.stop) for s in trace.steps] == [(0, 1), (1, 2), (2, 3)]
    first, river, bank = trace.steps
    assert (first.m_after, first.l_after, first.u_after) == (0.0, 1.0, (0.0, 0.0))
    assert river.max_moved and not bank.max_moved and not first.max_moved
    assert river.rescale == pytest.approx(0.243, abs=5e-4)
    assert river.m_after == pytest.approx(1.414, abs=5e-4)
    assert [s.l_after for s in trace.steps] == pytest.approx([1.0, 1.243, 1.736], abs=5e-4)
    assert river.u_after == pytest.approx((1.0, 0.0), abs=5e-4)
    assert bank.u_after == pytest.approx((1.0, 0.493), abs=5e-4)
    assert trace.output.tolist() == pytest.approx([0.576, 0.284], abs=5e-4)
    # and exactly the direct answer: softmax with torch, not with attn_core
    direct = torch.softmax(scores, -1) @ values
    assert (trace.output - direct).abs().max() <= 1e-15
    assert trace.lse == pytest.approx(float(torch.logsumexp(scores, -1)), abs=1e-15)


def test_trace_skips_masked_keys_and_handles_blocks():
    scores, values = bank_scores()
    masked = torch.cat([scores, torch.tensor([-math.inf, -math.inf], dtype=F64)])
    vals = torch.cat([values, torch.ones(2, 2, dtype=F64)])
    for block in range(1, 6):
        trace = online_softmax_trace(masked, vals, block_size=block)
        assert trace.output.tolist() == pytest.approx([0.576, 0.284], abs=5e-4)
        assert len(trace.steps) == math.ceil(5 / block)
    with pytest.raises(ValueError, match="no allowed key"):
        online_softmax_trace(torch.full((3,), -math.inf, dtype=F64), values, 1)


@pytest.mark.parametrize(("dtype", "tol"), [(F64, 1e-14), (torch.float32, 1e-6)])
def test_4096_key_row_in_32_blocks(dtype, tol):
    """Card 15: 4,096 keys in 32 blocks of 128 match direct to 7.8e-16 (fp64), 1.7e-7 (fp32).
    Bounds: fp64 u = 1.1e-16, 32 rescales plus 128-term sums on |o| ≲ 1 stay far below 1e-14;
    fp32 u = 6e-8 and the fp32 run is compared with exact fp64, so a few u: 1e-6."""
    g = torch.Generator().manual_seed(15)
    scores64 = torch.randn(4096, generator=g, dtype=F64) * 2
    values64 = torch.randn(4096, 4, generator=g, dtype=F64)
    direct = torch.softmax(scores64, -1) @ values64
    trace = online_softmax_trace(scores64.to(dtype), values64.to(dtype), block_size=128)
    assert len(trace.steps) == 32
    assert (trace.output.double() - direct).abs().max() <= tol
    # the same row through the tiled kernel: d_k = 1, q = 1, k_j = s_j, so q·k_j · 1/√1 = s_j
    q = torch.ones(1, 1, dtype=dtype)
    r = online_attention(q, scores64.to(dtype)[:, None], values64.to(dtype), block_size=128)
    assert r.tiles_computed == 32
    assert (r.output[0].double() - direct).abs().max() <= tol
    for block in (1, 7, 4096):  # card 15: block sizes 1…4,096 all agree
        t = online_softmax_trace(scores64.to(dtype), values64.to(dtype), block_size=block)
        assert (t.output.double() - direct).abs().max() <= tol


# ---------------------------------------------------------------------------------------------
# Merge (Drill 11) and split-K
# ---------------------------------------------------------------------------------------------


def test_drill_11_merge():
    merged = merge_partials(PartialState(3.0, 1.1353, 2.1353), PartialState(5.0, 1.0498, 4.1494))
    # the spec gives 4 decimals from inputs rounded to 4 decimals: half a unit of the last digit
    assert float(merged.output) == pytest.approx(3.6881, abs=5e-5)
    assert float(merged.lse) == pytest.approx(5.1852, abs=5e-5)
    assert float(merged.state.m) == 5.0
    swapped = merge_partials(PartialState(5.0, 1.0498, 4.1494), PartialState(3.0, 1.1353, 2.1353))
    assert float(swapped.output) == float(merged.output)  # the merge is symmetric


def test_split_merge_equals_direct_at_every_split():
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(5, 40, generator=g, dtype=F64) * 3
    values = torch.randn(5, 40, 6, generator=g, dtype=F64)
    direct = torch.softmax(scores, -1).unsqueeze(-2) @ values
    for split in range(1, 40):
        result = split_merge(scores, values, split)
        # card 15: merging two halves agrees to ~1e-15; two sums and one rescale in fp64
        assert (result.merged.output - direct.squeeze(-2)).abs().max() <= 1e-14
        assert (result.merged.lse - torch.logsumexp(scores, -1)).abs().max() <= 1e-14
    with pytest.raises(ValueError, match="split"):
        split_merge(scores, values, 40)


def test_merge_with_an_empty_partial_is_a_no_op():
    g = torch.Generator().manual_seed(4)
    scores = torch.randn(10, generator=g, dtype=F64)
    values = torch.randn(10, 3, generator=g, dtype=F64)
    full = partial_state(scores, values)
    empty = partial_state(torch.full((4,), -math.inf, dtype=F64), torch.zeros(4, 3, dtype=F64))
    assert float(empty.l) == 0.0 and float(empty.m) == -math.inf
    merged = merge_partials(empty, full)
    assert torch.equal(merged.output, full.output)
    assert torch.isfinite(merged.output).all()


# ---------------------------------------------------------------------------------------------
# Every slip fails
# ---------------------------------------------------------------------------------------------


def rising_row(dtype=F64):
    """A row whose max rises at every block after nonzero values were accumulated."""
    scores = torch.tensor([0.0, 0.5, 1.0, 2.0, 2.5, 4.0], dtype=dtype)
    values = torch.tensor(
        [[1.0, 2.0], [0.5, -1.0], [2.0, 0.0], [-1.0, 1.0], [0.0, 3.0], [1.0, 1.0]], dtype=dtype
    )
    return scores, values


def test_slip_registry_runs_the_slip_functions():
    """The page dispatches on these ids; each entry's fn is the slip, and every slip walks the
    same blocks as the correct trace (same key ranges) while its output differs on a rising row."""
    assert set(SLIPS) == {"l_not_u", "wrong_sign", "no_max"}
    scores, values = rising_row(torch.float16)  # e^4 fits fp16: no_max stays finite here
    direct = torch.softmax(scores.double(), -1) @ values.double()
    for slip_id, slip in SLIPS.items():
        trace = slip.fn(scores, values, 2)
        assert trace.slip == slip_id and slip.label and slip.note
        assert [(s.start, s.stop) for s in trace.steps] == [(0, 2), (2, 4), (4, 6)]
        if slip_id != "no_max":  # no_max is exact on paper; it fails only past fp16's range
            assert (trace.output.double() - direct).abs().max() > 0.1


def test_slip_rescale_l_not_u_fails():
    scores, values = rising_row()
    direct = torch.softmax(scores, -1) @ values
    assert (online_softmax_trace(scores, values, 2).output - direct).abs().max() <= 1e-15
    wrong = slip_rescale_l_not_u(scores, values, 2).output
    assert (wrong - direct).abs().max() > 0.1
    # bank's row hides this slip: the only value seen before the max moves is v_the = (0, 0)
    bank_s, bank_v = bank_scores()
    assert slip_rescale_l_not_u(bank_s, bank_v, 1).output.tolist() == pytest.approx([0.576, 0.284], abs=5e-4)


def test_slip_wrong_sign_fails_on_bank():
    scores, values = bank_scores()
    trace = slip_wrong_sign_rescale(scores, values, 1)
    assert trace.steps[1].rescale == pytest.approx(math.exp(1.414), abs=1e-2)  # 4.11, not 0.243
    assert (trace.output - torch.tensor([0.576, 0.284], dtype=F64)).abs().max() > 0.1


def test_slip_no_max_subtraction_overflows_fp16():
    # fp16's largest number is 65,504 = e^11.09: a score of 12 overflows e^s without the shift
    scores = torch.tensor([1.0, 12.0, 11.5, 3.0], dtype=torch.float16)
    values = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.5]], dtype=torch.float16)
    direct = torch.softmax(scores.double(), -1) @ values.double()
    slip = slip_no_max_subtraction(scores, values, 2)
    assert not torch.isfinite(slip.output).all()
    assert math.isinf(slip.steps[0].l_after)
    good = online_softmax_trace(scores, values, 2)
    # correct fp16 recurrence: every exponent ≤ 0, a handful of fp16 roundings (u = 4.9e-4)
    assert (good.output.double() - direct).abs().max() <= 5e-3
    # on paper the slip is exact: in fp64 with small scores it matches direct
    s64, v64 = rising_row()
    assert (slip_no_max_subtraction(s64, v64, 2).output - torch.softmax(s64, -1) @ v64).abs().max() <= 1e-14


def test_block_size_sweep_errors_and_counts():
    q, k, v = qkv(1, 2, 1, 24, 24)
    rows = block_size_sweep(q, k, v, block_sizes=[1, 4, 8, 24], causal=True)
    assert [r.block_size for r in rows] == [1, 4, 8, 24]
    assert [(r.tiles_computed, r.tiles_skipped) for r in rows] == [(300, 276), (21, 15), (6, 3), (1, 0)]
    assert max(r.max_abs_error for r in rows) <= TOL64


# ---------------------------------------------------------------------------------------------
# The page's one-call views
# ---------------------------------------------------------------------------------------------


def test_walk_row_matches_torch_sdpa_for_every_row_and_head():
    q, k, v = qkv(1, 4, 2, 6, 9)
    allowed = causal_mask(6, 9)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=True)
    for head in range(4):
        for row in range(6):
            w = walk_row(head_row(q, k, v, allowed, head=head, row=row), block_size=2)
            assert (w.trace.output - expected[0, head, row]).abs().max() <= TOL64
            assert w.max_abs_diff <= w.tolerance
    w = walk_row(head_row(q, k, v, allowed, head=0, row=4), block_size=4)
    assert w.query_block == (4, 6)  # rows 4…5: the tile of row 4 at block size 4
    with pytest.raises(ValueError, match="outside"):
        head_row(q, k, v, head=4)
    with pytest.raises(ValueError, match="unknown slip"):
        walk_row(head_row(q, k, v), slip="typo")


def test_walk_row_slips_fail_their_badge():
    q, k, v = qkv(1, 1, 1, 1, 12, seed=2)
    w = walk_row(head_row(q, k, v), block_size=3, slip="l_not_u")
    assert w.max_abs_diff > w.tolerance
    bank = bank_row()
    b = head_row(bank.q[None, None], bank.k[None, None], bank.v[None, None])
    assert walk_row(b, slip="wrong_sign").max_abs_diff > 0.1
    overflow = walk_row(b, slip="no_max", dtype="float16", logit_scale=10.0)
    assert overflow.max_abs_diff == math.inf  # NaN output: the oracle diff reports inf
    fine = walk_row(b, dtype="float16", logit_scale=10.0)
    assert fine.max_abs_diff <= fine.tolerance


def test_tile_view_counts_and_cap():
    q, k, v = qkv(1, 2, 2, 20, 20)
    view = online_tiles.tile_view(q, k, v, causal_mask(20, 20), block_size=5)
    assert (view.tiles_computed, view.tiles_skipped, view.tiles_total) == (10, 6, 16)
    assert view.computed.tolist() == [[j <= i for j in range(4)] for i in range(4)]
    assert view.max_abs_diff <= TOL64 and view.lse_max_abs_diff <= TOL64
    assert [r.block_size for r in view.sweep] == [1, 2, 4, 5, 8, 16, 20]
    assert online_tiles.smallest_block(200, 200) == 7  # ⌈200/7⌉² = 841 ≤ 1,024 < ⌈200/6⌉² = 1,156
    with pytest.raises(ValueError, match="at least 7"):
        online_tiles.tile_view(*qkv(1, 1, 1, 200, 200, d=2, dv=2), block_size=6)


def test_row_split_merge_matches_sdpa():
    q, k, v = qkv(1, 2, 1, 5, 10)
    expected = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    for split in (1, 5, 9):
        res = row_split_merge(head_row(q, k, v, head=1, row=2), split)
        assert (res.merged.output - expected[0, 1, 2]).abs().max() <= 1e-14
