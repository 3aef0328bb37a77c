"""Card 6 measured: change the future, fully masked rows, cached decoding, the triu/-1e9 slip.

Oracles: torch's F.scaled_dot_product_attention (is_causal, causal_lower_right, explicit masks),
torch.softmax, IEEE arithmetic (e^{-inf} = 0, 0/0 = NaN) and the spec's check numbers
(0.2 = 1/5 for the -1e9 row, (T+1)/2T = 0.6 and 0.500122).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from attn_core.dtypes import DTYPES
from attn_core.experiments import decoding, fully_masked, mask_slips, perturbation
from attn_core.masks import allowed_fraction, causal_mask
from attn_core.oracle import ROUNDING_TOL
from attn_core.slips import forward as slips

F64 = torch.float64
# float64 SDPA vs our reference: summation order only, ~T · 2^-53 ≈ 1e-14 for T ≤ 40; a wrong mask
# moves outputs by O(0.1). 1e-12 separates the two by ten orders of magnitude.
TOL = 1e-12


def qkv(T: int, heads: int = 1, d_k: int = 4, d_v: int = 3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, heads, T, d, generator=g, dtype=F64) for d in (d_k, d_k, d_v))


def sdpa_causal(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=0.0)


# ---------------------------------------------------------------------------- change the future


@pytest.mark.parametrize(("T", "t", "heads"), [(2, 0, 1), (5, 3, 1), (7, 2, 3), (33, 16, 2)])
def test_correct_mask_future_change_moves_no_earlier_output_exactly(T, t, heads):
    q, k, v = qkv(T, heads)
    report = perturbation.perturbation_experiment(q, k, v, t)
    correct = report.method(perturbation.CORRECT)
    assert report.changed == tuple(range(t + 1, T))
    assert correct.max_leak == 0.0  # exactly: the guarded rows never touch a changed number
    assert correct.leaking_rows == ()
    # Independent oracle: torch SDPA (is_causal) on the same before/after inputs.
    q2, k2, v2 = perturbation.perturbed_inputs(q, k, v, report.changed, magnitude=3.0, seed=1)  # the defaults
    sdpa_change = (sdpa_causal(q2, k2, v2) - sdpa_causal(q, k, v)).abs().amax(-1).reshape(-1, T).amax(0)
    assert torch.equal(sdpa_change[: t + 1], torch.zeros(t + 1, dtype=F64))
    assert torch.allclose(correct.row_change, sdpa_change, atol=TOL, rtol=0)
    assert correct.min_visible_change > 0  # the rows that may see the change did move


@pytest.mark.parametrize(("T", "t"), [(5, 2), (9, 0), (16, 11)])
def test_zeroing_after_softmax_breaks_row_sums_and_leaks(T, t):
    q, k, v = qkv(T, seed=3)
    report = perturbation.perturbation_experiment(q, k, v, t)
    zeroed = report.method("zero weights after softmax")
    # Oracle for the row sums: the full softmax (torch.softmax) summed over the visible keys j ≤ i.
    S = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    P_full = torch.softmax(S, -1)[0, 0]
    expected_sums = (P_full * causal_mask(T, T)).sum(-1)
    assert torch.allclose(zeroed.row_sums, expected_sums, atol=TOL, rtol=0)
    assert float(zeroed.row_sums[: T - 1].max()) < 1 - 1e-6  # every row but the last loses mass
    assert zeroed.max_leak > 1e-6 and zeroed.verdict == "leaks"
    assert zeroed.leaking_rows == tuple(range(t + 1))  # every guarded row leaks
    assert report.method("no mask").verdict == "leaks"
    assert report.method("multiply scores by the 0/1 mask").verdict == "leaks"


@pytest.mark.parametrize(("T", "t", "heads"), [(4, 1, 1), (12, 5, 2)])
def test_renormalizing_after_zeroing_equals_masking_for_finite_rows(T, t, heads):
    q, k, v = qkv(T, heads, seed=5)
    renorm = slips.zero_after_softmax(q, k, v, causal_mask(T, T), renormalize=True)
    assert torch.allclose(renorm.output, sdpa_causal(q, k, v), atol=TOL, rtol=0)
    # In the experiment the discarded normalizer only shows up as rounding (≤ ROUNDING_TOL).
    leak = perturbation.perturbation_experiment(q, k, v, t).method("zero after softmax, then renormalize")
    assert leak.max_leak <= ROUNDING_TOL


def test_change_the_past_control_moves_every_row_for_every_method():
    q, k, v = qkv(8, 2, seed=7)
    report = perturbation.perturbation_experiment(q, k, v, 2, kind="past")
    assert report.changed == (0, 1, 2)
    for m in report.methods:
        assert m.must_not_move == ()
        assert m.min_visible_change > 1e-6, m.method  # the test can see a change when one is allowed


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"t": 4}, "t must lie"),
        ({"t": -1}, "t must lie"),
        ({"t": 1, "kind": "sideways"}, "kind"),
        ({"t": 1, "magnitude": 0.0}, "positive"),
    ],
)
def test_perturbation_rejects_bad_input(kwargs, message):
    q, k, v = qkv(5)
    with pytest.raises(ValueError, match=message):
        perturbation.perturbation_experiment(q, k, v, **kwargs)


# ---------------------------------------------------------------------------- fully masked rows


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("how", fully_masked.HOW)
def test_inf_fill_on_a_fully_masked_row_is_nan(dtype, how):
    scores, allowed = fully_masked.example_scores()
    case = fully_masked.fully_masked_case(dtype, "-inf", how, scores, allowed)
    # Oracle: torch.softmax of an all -inf row (0/0 in IEEE) is NaN.
    assert torch.isnan(torch.softmax(torch.full((5,), -math.inf, dtype=DTYPES[dtype]), -1)).all()
    assert case.empty_row == "NaN"
    assert all(math.isnan(p) for p in case.empty_row_weights)
    assert case.partial_blocked_weight == 0.0  # e^{-inf} = 0 exactly


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_most_negative_finite_fill_gives_uniform_row_and_exact_zero_elsewhere(dtype):
    scores, allowed = fully_masked.example_scores(S=5)
    case = fully_masked.fully_masked_case(dtype, "finfo(dtype).min", "masked_fill", scores, allowed)
    eps = torch.finfo(DTYPES[dtype]).eps
    assert case.empty_row == "uniform"
    # Each weight is 1/5 rounded to the dtype: within one ulp of 0.2 (eps · 0.2 < eps).
    assert all(abs(p - 0.2) <= eps for p in case.empty_row_weights)
    assert case.partial_blocked_weight == 0.0
    # Sum of 5 rounded terms: within a few eps of 1.
    assert abs(case.partial_row_sum - 1) <= 5 * eps


def test_minus_1e9_in_float16_cannot_be_stored():
    scores, allowed = fully_masked.example_scores()
    # Oracle: float16's largest finite value is 65504, so -1e9 rounds to -inf when cast.
    assert torch.tensor(-1e9, dtype=torch.float64).to(torch.float16).item() == -math.inf
    with pytest.raises(RuntimeError):
        torch.zeros(2, dtype=torch.float16).masked_fill(torch.tensor([True, True]), -1e9)
    refused = fully_masked.fully_masked_case("float16", "-1e9", "masked_fill", scores, allowed)
    assert refused.empty_row.startswith("error")
    cast = fully_masked.fully_masked_case("float16", "-1e9", "additive mask", scores, allowed)
    assert cast.fill_in_dtype == "-inf" and cast.empty_row == "NaN"


def test_additive_minus_1e9_in_float64_keeps_the_score_differences():
    scores, allowed = fully_masked.example_scores()
    case = fully_masked.fully_masked_case("float64", "-1e9", "additive mask", scores, allowed)
    assert case.empty_row == "≈ unmasked softmax"
    # Oracle: torch.softmax of the raw scores; adding -1e9 rounds each score by ≤ ulp(1e9)/2 ≈ 6e-8.
    oracle = torch.softmax(scores[0], -1)
    assert (torch.tensor(case.empty_row_weights, dtype=F64) - oracle).abs().max() < 1e-6


def test_float16_most_negative_additive_overflows_for_negative_scores():
    scores = torch.tensor([[-20.0, 1.0, -30.0, 2.0], [0.0, 0.0, 0.0, 0.0]], dtype=F64)
    allowed = torch.tensor([[False] * 4, [True, True, False, False]])
    # Oracle: -65504 - 20 is past float16's range and rounds to -inf (IEEE round-to-nearest).
    assert (torch.tensor(-20.0, dtype=torch.float16) + torch.finfo(torch.float16).min).item() == -math.inf
    case = fully_masked.fully_masked_case("float16", "finfo(dtype).min", "additive mask", scores, allowed)
    assert case.empty_row == "uniform over the keys that did not overflow to −inf"
    assert case.empty_row_weights == (0.0, 0.5, 0.0, 0.5)


def test_table_covers_every_dtype_fill_and_application():
    table = fully_masked.fully_masked_table()
    combos = {(c.dtype, c.fill, c.how) for c in table}
    assert len(table) == len(combos) == len(DTYPES) * len(fully_masked.FILLS) * len(fully_masked.HOW)


def test_api_measurements_match_a_direct_call():
    measured = fully_masked.measure_fully_masked_apis(dtypes=("float32", "float64"))
    assert {m.dtype for m in measured} == {"float32", "float64"}
    assert all(m.torch_version == torch.__version__ for m in measured)
    # Independent direct calls, written here without attn_core, for the default-dispatch SDPA and MHA.
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, n, 8, generator=g).to(F64) for n in (2, 5, 5))
    allowed = torch.ones(2, 5, dtype=torch.bool)
    allowed[0] = False
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=0.0)[0, 0, 0]
    sdpa = next(
        m
        for m in measured
        if m.dtype == "float64" and m.backend == "default dispatch" and m.api.endswith("bool mask")
    )
    assert (sdpa.result == "NaN") == bool(torch.isnan(o).any())
    assert (sdpa.result == "zeros") == bool((o == 0).all())
    mha = torch.nn.MultiheadAttention(8, 1, batch_first=True, dtype=F64).eval()
    with torch.no_grad():
        o_w, _ = mha(q[0], k[0], v[0], attn_mask=~allowed, need_weights=True)
    mha_meas = next(m for m in measured if m.dtype == "float64" and m.api.endswith("need_weights=True"))
    assert (mha_meas.result == "NaN") == bool(torch.isnan(o_w[0, 0]).any())


def test_safe_recipe_zeroes_empty_rows_and_matches_sdpa_elsewhere():
    q, k, v = qkv(6, 2, seed=11)
    allowed = causal_mask(6, 6).clone()
    allowed[2] = False  # one fully masked row
    P, O = fully_masked.safe_masked_attention(q, k, v, allowed)
    assert torch.equal(O[..., 2, :], torch.zeros_like(O[..., 2, :]))
    assert torch.equal(P[..., 2, :], torch.zeros_like(P[..., 2, :]))
    keep = [0, 1, 3, 4, 5]
    ref = F.scaled_dot_product_attention(q[..., keep, :], k, v, attn_mask=allowed[keep], dropout_p=0.0)
    assert torch.allclose(O[..., keep, :], ref, atol=TOL, rtol=0)


# ---------------------------------------------------------------------------- cached decoding


@pytest.mark.parametrize(("T", "P", "heads"), [(5, 3, 1), (8, 1, 2), (13, 9, 3), (6, 5, 1)])
def test_cached_block_alignments(T, P, heads):
    q, k, v = qkv(T, heads, seed=T + P)
    r = decoding.cached_block(q, k, v, P)
    L = T - P
    assert r.discarded_pairs == P * L  # each new query loses exactly the P cached keys' worth
    full = sdpa_causal(q, k, v)[..., P:, :]  # independent oracle: SDPA on the full T×T pass
    assert torch.allclose(r.full_pass_rows, full, atol=TOL, rtol=0)
    assert r.diff_bottom_right <= TOL
    assert r.diff_sdpa_lower_right <= TOL
    assert r.diff_top_left > 1e-3  # the top-left mask throws away valid cached keys
    # torch documents is_causal as top-left aligned for L ≠ S; measure that it still is.
    assert r.diff_sdpa_is_causal_vs_top_left <= TOL
    assert r.diff_sdpa_is_causal_vs_full > 1e-3
    lower_right = F.scaled_dot_product_attention(
        q[..., P:, :], k, v, attn_mask=causal_lower_right(L, T), dropout_p=0.0
    )
    assert torch.allclose(lower_right, full, atol=TOL, rtol=0)


def test_cached_block_without_prefix_is_the_full_pass():
    q, k, v = qkv(4)
    r = decoding.cached_block(q, k, v, 0)
    assert r.discarded_pairs == 0 and r.diff_top_left <= TOL


@pytest.mark.parametrize(("T", "prefill", "heads"), [(1, 1, 1), (6, 1, 1), (11, 4, 2), (9, 9, 1)])
def test_kv_cache_decode_equals_full_causal_pass(T, prefill, heads):
    q, k, v = qkv(T, heads, seed=2 * T)
    r = decoding.decode_with_kv_cache(q, k, v, prefill)
    assert r.cache_lengths == tuple(range(prefill + 1, T + 1))
    assert torch.allclose(r.outputs, sdpa_causal(q, k, v), atol=TOL, rtol=0)
    assert r.max_abs_diff <= TOL


def test_cached_decoding_rejects_bad_prefix():
    q, k, v = qkv(4)
    with pytest.raises(ValueError, match="prefix"):
        decoding.cached_block(q, k, v, 4)
    with pytest.raises(ValueError, match="prefill"):
        decoding.decode_with_kv_cache(q, k, v, 0)


# ---------------------------------------------------------------------------- counting and triu


def test_allowed_pair_fraction_matches_the_spec():
    # Spec check numbers (card 6, step 7): 15/25 = 0.6 at T = 5, 0.500122 at T = 4096.
    assert decoding.causal_pair_count(5).fraction == 0.6
    assert decoding.causal_pair_count(5).allowed_pairs == 15
    assert round(decoding.causal_pair_count(4096).fraction, 6) == 0.500122
    for T in (1, 2, 5, 97):  # against a mask actually counted
        brute = sum(1 for i in range(T) for j in range(T) if j <= i)
        assert decoding.causal_pair_count(T).allowed_pairs == brute
        assert allowed_fraction(causal_mask(T, T)) == pytest.approx(
            decoding.causal_pair_count(T).fraction, abs=1e-15
        )


def test_triu_zero_slip_nan_with_inf_and_uniform_with_minus_1e9():
    q, k, v = qkv(5, seed=13)
    r = mask_slips.triu_slip(q, k, v)
    assert r.fully_masked_rows == (0,)
    assert all(math.isnan(p) for p in r.row0_inf_fill)
    assert r.row0_finite_fill == pytest.approx((0.2,) * 5, abs=1e-15)  # spec: e^{-1e9}/(5 e^{-1e9}) = 0.2
    assert r.row0_right == (1.0, 0.0, 0.0, 0.0, 0.0)  # lesson: under a causal mask row 0 is (1, 0, 0)
    assert r.output_gap_finite_fill > 1e-3
    assert torch.equal(r.right_allowed, ~torch.triu(torch.ones(5, 5, dtype=torch.bool), 1))
