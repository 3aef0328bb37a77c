"""The shared head metrics (attn_core.heads) on hand-built attention patterns with known scores.

Oracles: patterns written entry by entry in plain Python lists (no torch indexing shared with the
code), whose scores follow from how they were built — a head that always reads t − 1, one that
reads the token after the earlier occurrence, one parked on token 0, the uniform causal head with
its closed forms Σ 1/(t+1) and Σ ln(t+1) — and residual streams with a known rank-1 distance.
Equalities are exact where every term is 0 or 1; else 1e-12 (float64 sums of ≤ 32 terms)."""

import math

import pytest
import torch

from attn_core import heads

TOL = 1e-12  # float64 means of ≤ 32 terms of O(1): rounding ≲ 32 · 2⁻⁵³ ≈ 4e-15


def pattern(T: int, reads) -> torch.Tensor:
    """[T, T] one-hot rows: query t puts all its weight on key reads(t) (a list of lists)."""
    rows = [[1.0 if j == reads(t) else 0.0 for j in range(T)] for t in range(T)]
    return torch.tensor(rows, dtype=torch.float64)


def uniform_causal(T: int) -> torch.Tensor:
    rows = [[1.0 / (t + 1) if j <= t else 0.0 for j in range(T)] for t in range(T)]
    return torch.tensor(rows, dtype=torch.float64)


@pytest.mark.parametrize("T", [3, 8, 17])
def test_previous_token_head(T):
    P = pattern(T, lambda t: max(t - 1, 0))
    assert float(heads.previous_token_score(P)) == 1
    assert float(heads.sink_share(P)) == pytest.approx(1 / (T - 1), abs=TOL)  # only row 1 reads token 0
    assert float(heads.mean_entropy(P)) == 0


@pytest.mark.parametrize("period", [3, 5, 8])
def test_induction_head(period):
    # ^ x₁…x_n x₁…x_n: query t ≥ n + 1 reads t − n + 1; earlier rows read token 0
    T = 2 * period
    P = pattern(T, lambda t: t - period + 1 if t >= period + 1 else 0)
    assert float(heads.induction_score(P, period)) == 1
    assert float(heads.previous_token_score(P)) == pytest.approx(1 / (T - 1), abs=TOL)  # row 1 only
    # a previous-token head is no induction head (for period ≥ 3 its t − 1 ≠ t − n + 1)
    assert float(heads.induction_score(pattern(T, lambda t: max(t - 1, 0)), period)) == 0


def test_sink_head():
    P = pattern(10, lambda t: 0)
    assert float(heads.sink_share(P)) == 1 and float(heads.mean_entropy(P)) == 0
    assert float(heads.previous_token_score(P)) == pytest.approx(1 / 9, abs=TOL)


@pytest.mark.parametrize("T", [2, 5, 16])
def test_uniform_causal_head_closed_forms(T):
    P = uniform_causal(T)
    rows = range(1, T)
    assert float(heads.previous_token_score(P)) == pytest.approx(
        sum(1 / (t + 1) for t in rows) / (T - 1), abs=TOL
    )
    assert float(heads.sink_share(P)) == pytest.approx(sum(1 / (t + 1) for t in rows) / (T - 1), abs=TOL)
    entropy = sum(math.log(t + 1) for t in rows) / (T - 1)
    assert float(heads.mean_entropy(P)) == pytest.approx(entropy, abs=TOL)
    assert heads.uniform_entropy(T) == pytest.approx(entropy, abs=TOL)


def test_batched_capture_keeps_the_leading_axes():
    # [batch 2, head 3, query_pos, key_pos]: each head a different known pattern
    T = 6
    per_head = [pattern(T, lambda t: max(t - 1, 0)), pattern(T, lambda t: 0), uniform_causal(T)]
    P = torch.stack([torch.stack(per_head)] * 2)
    assert P.shape == (2, 3, T, T)
    assert heads.previous_token_score(P).shape == (2, 3)
    expected_sink = [1 / (T - 1), 1.0, sum(1 / (t + 1) for t in range(1, T)) / (T - 1)]
    for b in range(2):
        assert heads.sink_share(P)[b].tolist() == pytest.approx(expected_sink, abs=TOL)
        assert heads.mean_entropy(P)[b].tolist() == pytest.approx([0, 0, heads.uniform_entropy(T)], abs=TOL)


def test_a_single_position_reads_row_zero():
    P = torch.ones(2, 1, 1, dtype=torch.float64)  # [head, 1, 1]: the causal mask's only choice
    assert heads.sink_share(P).tolist() == [1.0, 1.0]
    assert heads.mean_entropy(P).tolist() == [0.0, 0.0]
    assert heads.uniform_entropy(1) == 0


def test_induction_needs_a_repeated_query():
    with pytest.raises(ValueError, match="no repeated query"):
        heads.induction_score(uniform_causal(5), 4)


def test_rank_one_distance():
    identical = torch.tensor([[1.0, 2.0, 3.0]] * 4, dtype=torch.float64)
    assert float(heads.rank_one_distance(identical)) == 0
    # two tokens ±e: mean 0, so the distance is ‖X‖/‖X‖ = 1
    opposite = torch.tensor([[1.0, 0.0], [-1.0, 0.0]], dtype=torch.float64)
    assert float(heads.rank_one_distance(opposite)) == pytest.approx(1, abs=TOL)
    # [a, a + e]: mean a + e/2, residual rows ∓e/2, so ‖R‖ = ‖e‖/√2 over ‖X‖
    a, e = [3.0, 4.0], [0.0, 1.0]
    X = torch.tensor([a, [a[0] + e[0], a[1] + e[1]]], dtype=torch.float64)
    expected = (1 / math.sqrt(2)) / math.sqrt(3**2 + 4**2 + 3**2 + 5**2)
    assert float(heads.rank_one_distance(X)) == pytest.approx(expected, abs=TOL)
    assert heads.rank_one_distance(torch.stack([identical, identical])).shape == (2,)


def test_head_metrics_bundles_the_known_scores():
    period = 4
    T = 2 * period
    reads = [lambda t: max(t - 1, 0), lambda t: t - period + 1 if t >= period + 1 else 0, lambda t: 0]
    P = torch.stack([pattern(T, r) for r in reads])  # [head 3, query_pos, key_pos]
    m = heads.head_metrics(P, period)
    assert m.previous_token.tolist() == pytest.approx([1, 1 / (T - 1), 1 / (T - 1)], abs=TOL)
    assert m.induction.tolist() == [0, 1, 0]
    assert m.sink.tolist() == pytest.approx([1 / (T - 1), period / (T - 1), 1], abs=TOL)
    assert m.entropy.tolist() == [0, 0, 0]
    assert heads.head_metrics(P).induction is None
