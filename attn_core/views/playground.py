"""Everything the Playground shows for one input, computed in one call (cards 1, 2 and 7)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from attn_core.attention import AttentionResult, attention, check_shapes, expand_kv, stable_softmax
from attn_core.masks import allowed_fraction
from attn_core.oracle import SDPA_TOL, Check, compared_max_abs_diff, sdpa_reference, weight_checks
from attn_core.slips.forward import SLIPS
from attn_core.stats import TemperatureSweep, effective_keys, row_entropy, temperature_sweep
from attn_core.views.inputs import QKV

__all__ = [  # what the page reads (the page import rule: tests/pages/test_page_shape.py)
    "CODE",
    "SLIPS",
    "SWEEP_KEYS",
    "PlaygroundView",
    "slip_outcome",
    "view",
]

SWEEP_KEYS = 12  # keys drawn in the temperature sweep: more lines than this are unreadable
CODE = attention  # what the page's "show the code" shows


@dataclass(frozen=True)
class PlaygroundView:
    qkv: QKV
    allowed: torch.Tensor | None  # broadcast to (1, Hq, L, S), True = may attend
    result: AttentionResult
    row_sums: torch.Tensor  # (1, Hq, L)
    entropy: torch.Tensor  # (1, Hq, L) nats
    effective_keys: torch.Tensor  # (1, Hq, L) e^H
    sdpa_max_abs_diff: float  # |ours - torch SDPA| on the outputs
    sdpa_tol: float  # the badge's tolerance (see attn_core.oracle)
    checks: list[Check]  # the properties a correct result has (all pass here)
    shapes: dict[str, tuple[int, ...]]  # every intermediate, by its math name
    head: int = 0  # the head the page draws (`at_head`)

    def at_head(self, head: int) -> PlaygroundView:
        """The same view, drawing head ``head`` (a copy: the shared view is never written)."""
        if not 0 <= head < self.qkv.heads:
            raise ValueError(f"head {head} is outside 0 … {self.qkv.heads - 1}")
        return replace(self, head=head)

    def allowed_share(self, head: int) -> float:
        """Share of (query, key) pairs head ``head`` may attend (1 without a mask)."""
        return 1.0 if self.allowed is None else allowed_fraction(self.allowed[0, head])

    def row_table(self, head: int) -> dict[str, list]:
        """Per query row of one head: row sum, entropy, e^H, the largest weight and its key."""
        P = self.result.weights[0, head]  # (L, S)
        return {
            "query": list(self.qkv.query_tokens),
            "row sum": self.row_sums[0, head].tolist(),
            "entropy (nats)": self.entropy[0, head].tolist(),
            "effective keys e^H": self.effective_keys[0, head].tolist(),
            "max weight": P.amax(-1).tolist(),
            "top key": [self.qkv.key_tokens[j] for j in P.argmax(-1).tolist()],
        }

    def sweep(self, head: int, row: int) -> TemperatureSweep:
        """softmax(s/τ) of one query row over a range of temperatures (τ = 1: the current scale)."""
        return temperature_sweep(self.result.scores[0, head, row])


def _shapes(qkv: QKV, result: AttentionResult, group: int) -> dict[str, tuple[int, ...]]:
    repeated = (*qkv.k.shape[:-3], qkv.q.shape[-3], *qkv.k.shape[-2:])
    return {
        "Q": tuple(qkv.q.shape),
        "K": tuple(qkv.k.shape),
        "V": tuple(qkv.v.shape),
        "K, V after GQA repeat" if group > 1 else "K, V (no GQA)": repeated,
        "S = Q Kᵀ · scale + M": tuple(result.scores.shape),
        "P = softmax(S)": tuple(result.weights.shape),
        "O = P V": tuple(result.output.shape),
    }


def view(qkv: QKV, allowed: torch.Tensor | None, scale: float) -> PlaygroundView:
    """Attention on qkv with the given mask and scale, plus statistics and the SDPA check."""
    result = attention(qkv.q, qkv.k, qkv.v, allowed, scale=scale)
    reference = sdpa_reference(qkv.q, qkv.k, qkv.v, allowed, scale=scale)
    group = check_shapes(qkv.q, qkv.k, qkv.v)
    full_mask = None if allowed is None else torch.broadcast_to(allowed, result.scores.shape)
    checks = weight_checks(result.weights, result.output, expand_kv(qkv.v, group), full_mask, reference)
    return PlaygroundView(
        qkv=qkv,
        allowed=full_mask,
        result=result,
        row_sums=result.weights.sum(-1),
        entropy=row_entropy(result.weights),
        effective_keys=effective_keys(result.weights),
        sdpa_max_abs_diff=compared_max_abs_diff(result.output, reference),
        sdpa_tol=SDPA_TOL,
        checks=checks,
        shapes=_shapes(qkv, result, group),
    )


@dataclass(frozen=True)
class SlipOutcome:
    slip_id: str
    weights: torch.Tensor | None  # (L, S) of the viewed head, or (d_k, d_k) for Qᵀ K
    checks: list[Check]
    note: str


def slip_outcome(ex: PlaygroundView, slip_id: str, head: int = 0) -> SlipOutcome:
    """Run one forward slip (`attn_core.slips.forward.SLIPS`) on the explored input and check it
    like the right answer."""
    if slip_id not in SLIPS:
        raise ValueError(f"unknown slip {slip_id!r}; choose one of {', '.join(SLIPS)}")
    qkv, scale = ex.qkv, ex.result.scale
    group = check_shapes(qkv.q, qkv.k, qkv.v)
    k, v = expand_kv(qkv.k, group), expand_kv(qkv.v, group)
    if slip_id == "qt_k":
        return _transpose_outcome(ex, k, head)
    if slip_id == "multiply_mask" and ex.allowed is None:
        return SlipOutcome(slip_id, None, [], "Pick a mask in the sidebar to see this slip.")
    out = SLIPS[slip_id].fn(qkv.q, k, v, ex.allowed, scale=scale)
    reference = sdpa_reference(qkv.q, k, v, ex.allowed, scale=scale)
    return SlipOutcome(
        slip_id, out.weights[0, head], weight_checks(out.weights, out.output, v, ex.allowed, reference), ""
    )


def _transpose_outcome(ex: PlaygroundView, k: torch.Tensor, head: int) -> SlipOutcome:
    """Qᵀ K: a shape error unless L = S, and then a d_k × d_k matrix in place of the L × S scores."""
    L, S, d_k = ex.qkv.L, ex.qkv.S, ex.qkv.q.shape[-1]
    if L != S:
        note = f"With L = {L} ≠ S = {S}, Qᵀ K raises a shape error: this slip only survives square inputs."
        return SlipOutcome("qt_k", None, [Check("score matrix is L × S", False, "Qᵀ K fails")], note)
    wrong = SLIPS["qt_k"].fn(ex.qkv.q, k)[0, head] * ex.result.scale  # (d_k, d_k)
    check = Check("score matrix is L × S", tuple(wrong.shape) == (L, S), f"got {d_k} × {d_k}, want {L} × {S}")
    return SlipOutcome("qt_k", stable_softmax(wrong), [check], "The heatmap shows softmax(Qᵀ K · scale).")
