"""Change the future, change the past: the test that catches every causal-mask bug (card 6).

With M_ij = -inf for j > i, e^{-inf} = 0 leaves blocked keys out of the numerator *and* the
normalizer, so o_i = f(x_1, …, x_i). This measures that claim for the right mask and for each
shape-compatible slip (`attn_core.slips.forward`). Mask convention: bool, True = may attend.
Shapes (..., T, d) with self-attention L = S = T; the leading axes (batch, heads) ride along.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attn_core.attention import attention
from attn_core.masks import causal_mask
from attn_core.oracle import ROUNDING_TOL
from attn_core.slips import forward as slips

CORRECT = "mask scores before softmax (−∞)"
METHODS = (
    CORRECT,
    "zero weights after softmax",
    "zero after softmax, then renormalize",
    "multiply scores by the 0/1 mask",
    "no mask",
)


def _forward(method: str, q, k, v, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(weights (..., T, T), output (..., T, d_v)) of one masking method."""
    if method == CORRECT:
        r = attention(q, k, v, allowed)
        return r.weights, r.output
    if method == "zero weights after softmax":
        r = slips.zero_after_softmax(q, k, v, allowed)
    elif method == "zero after softmax, then renormalize":
        r = slips.zero_after_softmax(q, k, v, allowed, renormalize=True)
    elif method == "multiply scores by the 0/1 mask":
        r = slips.multiply_by_mask(q, k, v, allowed)
    elif method == "no mask":
        r = attention(q, k, v)
    else:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    return r.weights, r.output


@dataclass(frozen=True)
class MethodLeak:
    """How one masking method's outputs moved when some positions were changed."""

    method: str
    row_change: torch.Tensor  # (T,) ‖o_i' − o_i‖∞, max over leading axes too
    row_sums: torch.Tensor  # (T,) Σ_j p_ij before the change, max |·| deviation over leading axes
    must_not_move: tuple[int, ...]  # rows that cannot see any changed position under a causal mask
    max_leak: float  # largest change among those rows: exactly 0 for a correct mask
    leaking_rows: tuple[int, ...]  # rows in must_not_move whose output moved at all
    min_visible_change: float  # smallest change among rows that can see a changed token (> 0: the test sees)

    @property
    def worst_row_sum(self) -> float:
        """The row sum Σ_j p_ij furthest from 1 (1 for a correct softmax, < 1 after zeroing)."""
        return float(self.row_sums[(self.row_sums - 1).abs().argmax()])

    @property
    def verdict(self) -> str:
        """'no leak' (exactly 0), 'rounding only' (≤ ROUNDING_TOL) or 'leaks'."""
        if self.max_leak == 0:
            return "no leak: exactly 0"
        if self.max_leak <= ROUNDING_TOL:
            return "rounding only"
        return "leaks"


@dataclass(frozen=True)
class PerturbationReport:
    kind: str  # "future" or "past"
    t: int  # future: positions > t changed; past: positions ≤ t changed (0-based)
    changed: tuple[int, ...]  # the positions whose q, k and v were redrawn
    methods: tuple[MethodLeak, ...]

    def method(self, name: str) -> MethodLeak:
        return next(m for m in self.methods if m.method == name)


def perturb_positions(
    x: torch.Tensor, positions: Sequence[int], *, magnitude: float = 1.0, seed: int = 0
) -> torch.Tensor:
    """Copy of x (..., T, d) with rows ``positions`` moved by magnitude · N(0, 1) (seeded)."""
    g = torch.Generator().manual_seed(int(seed))
    x2 = x.clone()
    idx = torch.as_tensor(list(positions), dtype=torch.long)
    noise = torch.randn((*x.shape[:-2], len(idx), x.shape[-1]), generator=g, dtype=x.dtype)
    x2[..., idx, :] += magnitude * noise
    return x2


def perturbed_inputs(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, changed: Sequence[int], *, magnitude: float, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The experiment's changed tokens: rows ``changed`` of q, k and v each moved by independent noise."""
    q2, k2, v2 = (
        perturb_positions(x, changed, magnitude=magnitude, seed=seed + n) for n, x in enumerate((q, k, v))
    )
    return q2, k2, v2


def perturbation_experiment(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    t: int,
    *,
    kind: str = "future",
    magnitude: float = 3.0,
    seed: int = 1,
    methods: Sequence[str] = METHODS,
) -> PerturbationReport:
    """Change the tokens after t (``kind="future"``) or up to t (``"past"``, the control that shows
    the test can see a change) and report, per method and query row, ‖o_i' − o_i‖∞.

    q, k (..., T, d_k), v (..., T, d_v); a token is its (q, k, v) row, so changing token j redraws
    all three rows. A causal mask (True = may attend, j ≤ i) allows row i to depend on token j only
    when j ≤ i, so rows before the first changed position must not move — exactly, not to a
    tolerance: their arithmetic never touches a changed number (card 6, step 3)."""
    T = q.shape[-2]
    if k.shape[-2] != T or v.shape[-2] != T:
        raise ValueError("the change-the-future experiment is self-attention: q, k, v need the same length")
    if kind == "future":
        if not 0 <= t < T - 1:
            raise ValueError(f"t must lie in 0…{T - 2} so that some future position exists (T = {T})")
        changed = tuple(range(t + 1, T))
    elif kind == "past":
        if not 0 <= t < T:
            raise ValueError(f"t must lie in 0…{T - 1} (T = {T})")
        changed = tuple(range(t + 1))
    else:
        raise ValueError(f"kind must be 'future' or 'past', not {kind!r}")
    if not (math.isfinite(magnitude) and magnitude > 0):
        raise ValueError(f"the perturbation size must be a positive number, got {magnitude}")
    allowed = causal_mask(T, T)  # (T, T), True = j ≤ i
    q2, k2, v2 = perturbed_inputs(q, k, v, changed, magnitude=magnitude, seed=seed)
    must_not_move = tuple(range(changed[0]))
    reports = []
    for method in methods:
        weights, out = _forward(method, q, k, v, allowed)
        _, out2 = _forward(method, q2, k2, v2, allowed)
        change = (out2 - out).abs().amax(-1).reshape(-1, T).amax(0)  # (T,)
        sums = weights.sum(-1).reshape(-1, T)  # (leading, T)
        worst = sums.gather(0, (sums - 1).abs().argmax(0, keepdim=True))[0]  # (T,) furthest from 1
        guarded = change[list(must_not_move)] if must_not_move else change[:0]
        visible = change[changed[0] :]  # rows allowed to see the first changed position
        leaking = tuple(i for i in must_not_move if float(change[i]) != 0.0)
        reports.append(
            MethodLeak(
                method=method,
                row_change=change,
                row_sums=worst,
                must_not_move=must_not_move,
                max_leak=float(guarded.max()) if guarded.numel() else 0.0,
                leaking_rows=leaking,
                min_visible_change=float(visible.min()),
            )
        )
    return PerturbationReport(kind=kind, t=t, changed=changed, methods=tuple(reports))
