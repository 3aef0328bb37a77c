"""Two masking slips side by side (card 6, steps 5 and 6): the off-by-one triu mask and the −1e9 fill
that hides it, and zeroing the weights after the softmax instead of masking the scores."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.attention import attention
from attn_core.experiments.perturbation import MethodLeak, perturbation_experiment
from attn_core.masks import causal_mask
from attn_core.oracle import max_abs_diff
from attn_core.slips import forward as slips


@dataclass(frozen=True)
class TriuSlipReport:
    """Card 6, step 5: triu(ones, 0) also blocks the diagonal, so query 0 sees nothing."""

    wrong_allowed: torch.Tensor  # (T, T) ~triu(ones, 0): j < i
    right_allowed: torch.Tensor  # (T, T) ~triu(ones, 1): j ≤ i
    fully_masked_rows: tuple[int, ...]
    row0_inf_fill: tuple[float, ...]  # hand softmax with -inf: 0/0 = NaN
    row0_finite_fill: tuple[float, ...]  # with -1e9: uniform 1/T — the bug hidden
    row0_right: tuple[float, ...]  # the right mask: (1, 0, …, 0)
    output_gap_finite_fill: float  # max |O(triu 0, -1e9) − O(right)| over all rows


def triu_slip(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> TriuSlipReport:
    """q, k (..., T, d_k), v (..., T, d_v); row 0 of the first leading index is reported."""
    T = q.shape[-2]
    wrong = slips.triu_diagonal_mask(T)
    right = causal_mask(T, T)
    inf_fill = slips.finite_fill(q, k, v, wrong, fill=-math.inf)
    finite = slips.finite_fill(q, k, v, wrong, fill=-1e9)
    good = attention(q, k, v, right)

    def row0(w: torch.Tensor) -> tuple[float, ...]:
        return tuple(float(x) for x in w.reshape(-1, T, T)[0, 0])

    return TriuSlipReport(
        wrong_allowed=wrong,
        right_allowed=right,
        fully_masked_rows=tuple(int(i) for i in (~wrong.any(-1)).nonzero().flatten()),
        row0_inf_fill=row0(inf_fill.weights),
        row0_finite_fill=row0(finite.weights),
        row0_right=row0(good.weights),
        output_gap_finite_fill=max_abs_diff(finite.output, good.output),
    )


@dataclass(frozen=True)
class ZeroingSlipReport:
    """Card 6, step 6: the right weights, the zeroed-after-softmax weights, and the leak."""

    right_weights: torch.Tensor  # (T, T) softmax of the masked scores; rows sum to 1
    zeroed_weights: torch.Tensor  # (T, T) softmax over all keys, future entries set to 0
    zeroed_row_sums: torch.Tensor  # (T,) < 1 except the last row
    leak: MethodLeak  # change-the-future result for the zeroed version at t


def zeroing_slip(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, t: int) -> ZeroingSlipReport:
    """q, k (..., T, d_k), v (..., T, d_v); weights of the first leading index are returned."""
    T = q.shape[-2]
    allowed = causal_mask(T, T)
    right = attention(q, k, v, allowed).weights.reshape(-1, T, T)[0]
    zeroed = slips.zero_after_softmax(q, k, v, allowed).weights.reshape(-1, T, T)[0]
    leak = perturbation_experiment(q, k, v, t, methods=("zero weights after softmax",)).methods[0]
    return ZeroingSlipReport(right, zeroed, zeroed.sum(-1), leak)
