"""Everything the Gradients page shows for one input, computed in one call (cards 4 and 5).

The Jacobian of one chosen row at a chosen temperature, its saturation sweep, the backward pass
checked three ways (the five matrix lines, torch autograd through SDPA, central finite
differences at three ε), card 5's per-key reading of one row, and what a gradient-descent step
does to that row's query. Inputs are a `QKV` (float64, leading batch axis 1); masks are boolean,
True = may attend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import torch

from attn_core.attention import check_shapes, expand_kv, stable_softmax
from attn_core.backward import BackwardResult, attention_backward
from attn_core.finite_diff import (
    FiniteDifferences,
    check_finite_difference_size,
    finite_differences,
)
from attn_core.jacobian import (
    JacobianSpectrum,
    SaturationSweep,
    gershgorin_bound,
    jacobian_frobenius,
    jacobian_spectrum,
    largest_eigenvalue,
    saturation_sweep,
)
from attn_core.limits import LIMITS
from attn_core.oracle import Check, sdpa_autograd
from attn_core.slips.backward import SLIPS as BACKWARD_SLIPS
from attn_core.views.gradient_checks import dscore_rows_check, gradient_tolerance, jacobian_checks, max_diffs
from attn_core.views.inputs import QKV, InputKind, parse_matrix

F64 = torch.float64
# The full T × T Jacobian (heatmap, every eigenvalue) is formed for rows of up to 64 allowed keys:
# a dense eigendecomposition costs O(T³) (~100 ms at T = 512 here) and a 512 × 512 heatmap is ~1 MB.
# λ_max, ‖J‖_F and the Gershgorin bound are O(T) and shown for every row.
JACOBIAN_MAX_KEYS = LIMITS.jacobian_keys
FD_CAPS = (LIMITS.fd_coordinates, LIMITS.fd_work)  # coordinates of Q, K, V; coordinates × score entries
CODE = attention_backward  # what the page's "show the code" shows
SLIPS = BACKWARD_SLIPS  # the backward slips the page offers (id → Slip)


def toy_lesson(qkv: QKV, upstream: str) -> bool:
    """The toy with its own upstream gradient: the page then narrates the numbers of card 5."""
    return qkv.kind is InputKind.TOY and upstream == Upstream.TOY


class Section(StrEnum):
    """The page's sections; the value is the label shown, a link keeps the member's name, lower-cased."""

    JACOBIAN = "Softmax Jacobian"
    BACKWARD = "Backward pass"
    ONE_ROW = "One row, one key"
    SLIPS = "Slips"


class Upstream(StrEnum):
    """The upstream gradient G = ∂L/∂O; the value is the label shown, a link keeps the member's name, lower-cased."""

    TOY = "toy: g = (−1, 0, …) on every row"
    RANDOM = "random (seeded)"
    TYPED = "typed"


UPSTREAM_KINDS = tuple(u.value for u in Upstream)


def build_upstream(
    kind: Upstream | str, output_shape: tuple[int, ...], *, seed: int = 0, text: str = ""
) -> torch.Tensor:
    """G = ∂L/∂O with O's shape (1, Hq, L, d_v); the loss is L = ⟨O, G⟩.

    toy: −1 on the first value coordinate of every row (the chapter's g = (−1, 0): the loss falls as
    the output reads more of value axis 0, geography in the toy); random: seeded N(0, 1); typed: an
    L × d_v matrix (one row per query), used for every head. ValueError on a bad shape or kind."""
    kind = Upstream(kind)
    if kind is Upstream.TOY:
        G = torch.zeros(output_shape, dtype=F64)
        G[..., 0] = -1.0
        return G
    if kind is Upstream.RANDOM:
        return torch.randn(output_shape, generator=torch.Generator().manual_seed(int(seed)), dtype=F64)
    G = parse_matrix(text, "G")  # Upstream.TYPED
    L, d_v = output_shape[-2:]
    if tuple(G.shape) != (L, d_v):
        raise ValueError(
            f"G must be L × d_v = {L} × {d_v} (one row per query), got {G.shape[0]} × {G.shape[1]}"
        )
    return torch.broadcast_to(G, output_shape).clone()


@dataclass(frozen=True)
class Agreement:
    """One line of the three-way table: max |manual − oracle| for each gradient."""

    oracle: str
    dq: float
    dk: float
    dv: float
    tolerance: float

    @property
    def worst(self) -> float:
        return max(self.dq, self.dk, self.dv)

    @property
    def passed(self) -> bool:
        return self.worst <= self.tolerance


@dataclass(frozen=True)
class RowReading:
    """Card 5, one row: ∂L/∂s_j = p_j (gᵀv_j − gᵀo) over the row's allowed keys j."""

    keys: tuple[int, ...]  # indices into S of the allowed keys
    p: torch.Tensor  # (T,) weights
    g_dot_v: torch.Tensor  # (T,) gᵀv_j: how much value j helps (−) or hurts (+) the loss
    g_dot_o: float  # gᵀo: the same for the row's current average output
    dscore: torch.Tensor  # (T,) p_j (gᵀv_j − gᵀo); sums to 0
    dscore_gap: float  # max |this − dS row from the matrix lines|


@dataclass(frozen=True)
class QueryStep:
    """One gradient-descent step on the chosen row's query, q ← q − η ∂L/∂q, keys held fixed."""

    lr: float
    q_before: torch.Tensor  # (d_k,)
    q_after: torch.Tensor  # (d_k,)
    scores_before: torch.Tensor  # (T,) scaled scores on the allowed keys
    scores_after: torch.Tensor  # (T,)
    weights_after: torch.Tensor  # (T,)
    loss_before: float  # this row's gᵀo
    loss_after: float

    @property
    def score_change(self) -> torch.Tensor:
        return self.scores_after - self.scores_before  # (T,)


@dataclass(frozen=True)
class GradientsView:
    qkv: QKV
    allowed: torch.Tensor | None  # broadcast to (1, Hq, L, S); True = may attend
    grad_output: torch.Tensor  # G (1, Hq, L, d_v)
    backward: BackwardResult
    autograd: tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # dQ, dK, dV by SDPA autograd
    finite: FiniteDifferences | None
    finite_note: str  # why finite differences were skipped ("" when they ran)
    agreement: list[Agreement]
    checks: list[Check]  # properties of the right dS (D two ways, rows sum to 0, blocked pairs)
    autograd_checks: list[Check]  # dQ, dK, dV each against autograd
    jacobian_checks: list[Check]  # card 4's statements on the chosen row
    loss: float  # L = ⟨O, G⟩
    coordinates: int  # numel(Q) + numel(K) + numel(V)
    head: int
    row: int
    temperature: float
    row_weights: torch.Tensor  # (T,) p = softmax(s / τ) over the row's allowed keys
    lambda_max: float  # λ_max(J) in O(T), accurate for saturated rows too
    gershgorin: float  # 2 max p(1 − p)
    frobenius: float  # ‖J‖_F
    spectrum: JacobianSpectrum | None  # the full J and its eigenvalues, for T ≤ JACOBIAN_MAX_KEYS
    sweep: SaturationSweep
    reading: RowReading
    step: QueryStep
    tolerance: float
    toy_lesson: bool = False  # the toy with its own upstream gradient: the page narrates card 5

    @property
    def row_key_names(self) -> list[str]:
        return [self.qkv.key_tokens[j] for j in self.reading.keys]

    @property
    def reading_check(self) -> Check:
        """The per-key formula against the dS row from the matrix lines."""
        gap = self.reading.dscore_gap
        return Check("equals row of dS from the matrix lines", gap <= self.tolerance, f"max |Δ| = {gap:.1e}")

    def agreement_table(self) -> dict[str, list]:
        return {
            "oracle": [a.oracle for a in self.agreement],
            "max |Δ| dQ": [a.dq for a in self.agreement],
            "max |Δ| dK": [a.dk for a in self.agreement],
            "max |Δ| dV": [a.dv for a in self.agreement],
            "tolerance": [a.tolerance for a in self.agreement],
            "agrees": ["✓" if a.passed else "✗" for a in self.agreement],
        }

    def reading_table(self) -> dict[str, list]:
        r = self.reading
        return {
            "key": self.row_key_names,
            "p_j": r.p.tolist(),
            "gᵀv_j": r.g_dot_v.tolist(),
            "gᵀo": [r.g_dot_o] * len(r.keys),
            "∂L/∂s_j": r.dscore.tolist(),
        }

    def step_table(self) -> dict[str, list]:
        s = self.step
        return {
            "key": self.row_key_names,
            "∂L/∂s_j": self.reading.dscore.tolist(),
            "score before": s.scores_before.tolist(),
            "score after": s.scores_after.tolist(),
            "Δ score": s.score_change.tolist(),
            "weight after": s.weights_after.tolist(),
        }


def _row_keys(allowed: torch.Tensor | None, head: int, row: int, S: int) -> torch.Tensor:
    if allowed is None:
        return torch.arange(S)
    return allowed[0, head, row].nonzero().flatten()


def _row_reading(
    back: BackwardResult, v: torch.Tensor, G: torch.Tensor, keys, head: int, row: int
) -> RowReading:
    p = back.forward.weights[0, head, row, keys]  # (T,)
    g = G[0, head, row]  # (d_v,)
    g_dot_v = v[0, head, keys] @ g  # (T,)
    g_dot_o = float(back.forward.output[0, head, row] @ g)
    dscore = p * (g_dot_v - g_dot_o)
    gap = float((dscore - back.dscores[0, head, row, keys]).abs().max())
    return RowReading(tuple(int(j) for j in keys), p, g_dot_v, g_dot_o, dscore, gap)


def _query_step(back: BackwardResult, q, K, V, G, keys, head: int, row: int, lr: float) -> QueryStep:
    scale = back.forward.scale
    g = G[0, head, row]  # (d_v,)
    K, V = K[0, head, keys], V[0, head, keys]  # (T, d_k), (T, d_v)
    q_before = q[0, head, row]  # (d_k,)
    q_after = q_before - lr * back.dq[0, head, row]
    s_before, s_after = (K @ q_before) * scale, (K @ q_after) * scale  # (T,)
    p_after = stable_softmax(s_after)
    return QueryStep(
        lr=lr,
        q_before=q_before,
        q_after=q_after,
        scores_before=s_before,
        scores_after=s_after,
        weights_after=p_after,
        loss_before=float(back.forward.output[0, head, row] @ g),
        loss_after=float((p_after @ V) @ g),
    )


def _check_row_inputs(qkv: QKV, *, head: int, row: int, temperature: float, lr: float) -> None:
    """The row picker's inputs, each refused with a message naming it."""
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a positive number, got {temperature}")
    if not math.isfinite(lr):
        raise ValueError(f"the step size must be a finite number, got {lr}")
    if not 0 <= head < qkv.heads:
        raise ValueError(f"head {head} does not exist: there are {qkv.heads}")
    if not 0 <= row < qkv.L:
        raise ValueError(f"query row {row} does not exist: there are {qkv.L}")


def _finite_agreement(qkv: QKV, G: torch.Tensor, allowed, scale: float, back):
    """Central finite differences of the loss ⟨O, G⟩, or (None, why not) when the input is too large."""
    try:
        check_finite_difference_size(qkv.q, qkv.k, qkv.v)
    except ValueError as exc:
        return None, f"Finite differences skipped: {exc}."
    return finite_differences(qkv.q, qkv.k, qkv.v, G, allowed, scale=scale), ""


def _identity_checks(back, G: torch.Tensor, full: torch.Tensor | None, tol: float) -> list[Check]:
    """The backward pass's own identities: the rowsum trick, each dS row summing to 0, dS = 0 where blocked."""
    D_scale = float((back.forward.output * G).abs().sum(-1).max()) + 1.0
    return [
        Check(
            "rowsum(P ⊙ dP) = rowsum(dO ⊙ O)",
            back.rowsum_gap <= 1e-12 * D_scale,
            f"max |Δ| = {back.rowsum_gap:.1e}",
        ),
        dscore_rows_check(back.dscores, tol),
        Check(
            "dS = 0 on blocked pairs",
            full is None or bool((back.dscores[~full] == 0).all()),
            "no mask" if full is None else f"{int((~full).sum()):,} blocked pairs",
        ),
    ]


def _row_fields(
    back, qkv: QKV, G, full, group: int, *, head: int, row: int, temperature: float, lr: float
) -> dict:
    """Card 4 on one query row: its softmax at temperature τ, the Jacobian's spectrum and bounds, the
    saturation sweep, the per-key reading of dS and one gradient step on the query."""
    K, V = expand_kv(qkv.k, group), expand_kv(qkv.v, group)  # (1, Hq, S, d)
    keys = _row_keys(full, head, row, qkv.S)
    scores = back.forward.scores[0, head, row, keys]  # (T,) finite
    p_row = stable_softmax(scores / temperature)  # (T,)
    spectrum = jacobian_spectrum(p_row) if len(keys) <= JACOBIAN_MAX_KEYS else None
    lam, bound = float(largest_eigenvalue(p_row)), float(gershgorin_bound(p_row))
    return {
        "head": head,
        "row": row,
        "temperature": float(temperature),
        "row_weights": p_row,
        "lambda_max": lam,
        "gershgorin": bound,
        "frobenius": float(jacobian_frobenius(p_row)),
        "spectrum": spectrum,
        "jacobian_checks": jacobian_checks(spectrum, lam, bound),
        "sweep": saturation_sweep(scores),
        "reading": _row_reading(back, V, G, keys, head, row),
        "step": _query_step(back, qkv.q, K, V, G, keys, head, row, lr),
    }


def gradients_view(
    qkv: QKV,
    allowed: torch.Tensor | None,
    scale: float,
    grad_output: torch.Tensor,
    *,
    head: int = 0,
    row: int = 0,
    temperature: float = 1.0,
    lr: float = 1.0,
    run_finite_differences: bool = True,
    upstream: str | None = None,
) -> GradientsView:
    """The backward pass of attention on qkv with upstream G, checked three ways, plus card 4 on
    row ``row`` of head ``head`` at temperature τ (p = softmax(s / τ) over its allowed keys).

    Finite differences run only under `LIMITS.fd_*`; otherwise ``finite_note`` says why not.
    ``upstream`` names how G was chosen (an `Upstream`), for ``toy_lesson``."""
    _check_row_inputs(qkv, head=head, row=row, temperature=temperature, lr=lr)
    group = check_shapes(qkv.q, qkv.k, qkv.v)
    q, k, v, G = qkv.q, qkv.k, qkv.v, grad_output
    back = attention_backward(q, k, v, G, allowed, scale=scale)
    full = None if allowed is None else torch.broadcast_to(allowed, back.forward.scores.shape)
    tol = gradient_tolerance(qkv, G, back.forward.scale)

    auto = sdpa_autograd(q, k, v, G, allowed, scale=scale)
    agreement = [Agreement("torch autograd (SDPA)", *max_diffs(back, auto), tol)]
    finite, note = _finite_agreement(qkv, G, allowed, scale, back) if run_finite_differences else (None, "")
    if not run_finite_differences:
        note = "Finite differences are off."
    elif finite is not None:
        agreement += [
            Agreement(f"finite differences, ε = {e:.0e}", *max_diffs(back, est), finite.bound[i])
            for i, (e, est) in enumerate(
                zip(finite.eps, zip(finite.dq, finite.dk, finite.dv, strict=True), strict=True)
            )
        ]
    checks = _identity_checks(back, G, full, tol)

    return GradientsView(
        qkv=qkv,
        allowed=full,
        grad_output=G,
        backward=back,
        autograd=auto,
        finite=finite,
        finite_note=note,
        agreement=agreement,
        checks=checks,
        autograd_checks=[
            Check(f"{name} matches autograd", d <= tol, f"max |Δ| = {d:.1e}")
            for name, d in zip(("dQ", "dK", "dV"), max_diffs(back, auto), strict=True)
        ],
        loss=float((back.forward.output * G).sum()),
        coordinates=q.numel() + k.numel() + v.numel(),
        tolerance=tol,
        toy_lesson=toy_lesson(qkv, upstream),
        **_row_fields(back, qkv, G, full, group, head=head, row=row, temperature=temperature, lr=lr),
    )


# --- slips ----------------------------------------------------------------------------------------
