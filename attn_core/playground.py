"""Everything the Playground shows for one input, computed in one call (cards 1, 2 and 7)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_core.attention import AttentionResult, attention, check_shapes, expand_kv, stable_softmax
from attn_core.explore.inputs import QKV
from attn_core.oracle import Check, max_abs_diff, sdpa_reference, weight_checks
from attn_core.slips import forward as slips
from attn_core.stats import effective_keys, row_entropy


@dataclass(frozen=True)
class Exploration:
    qkv: QKV
    allowed: torch.Tensor | None  # broadcast to (1, Hq, L, S), True = may attend
    result: AttentionResult
    row_sums: torch.Tensor  # (1, Hq, L)
    entropy: torch.Tensor  # (1, Hq, L) nats
    effective_keys: torch.Tensor  # (1, Hq, L) e^H
    sdpa_max_abs_diff: float  # |ours - torch SDPA| on the outputs
    checks: list[Check]  # the properties a correct result has (all pass here)
    shapes: dict[str, tuple[int, ...]]  # every intermediate, by its math name


def explore(qkv: QKV, allowed: torch.Tensor | None, scale: float) -> Exploration:
    """Attention on qkv with the given mask and scale, plus statistics and the SDPA check."""
    result = attention(qkv.q, qkv.k, qkv.v, allowed, scale=scale)
    reference = sdpa_reference(qkv.q, qkv.k, qkv.v, allowed, scale=scale)
    group = check_shapes(qkv.q, qkv.k, qkv.v)
    full_mask = None if allowed is None else torch.broadcast_to(allowed, result.scores.shape)
    checks = weight_checks(result.weights, result.output, expand_kv(qkv.v, group), full_mask, reference)
    shapes = {
        "Q": tuple(qkv.q.shape),
        "K": tuple(qkv.k.shape),
        "V": tuple(qkv.v.shape),
        "K, V after GQA repeat" if group > 1 else "K, V (no GQA)": (
            *qkv.k.shape[:-3],
            qkv.q.shape[-3],
            *qkv.k.shape[-2:],
        ),
        "S = Q Kᵀ · scale + M": tuple(result.scores.shape),
        "P = softmax(S)": tuple(result.weights.shape),
        "O = P V": tuple(result.output.shape),
    }
    return Exploration(
        qkv=qkv,
        allowed=full_mask,
        result=result,
        row_sums=result.weights.sum(-1),
        entropy=row_entropy(result.weights),
        effective_keys=effective_keys(result.weights),
        sdpa_max_abs_diff=max_abs_diff(result.output, reference),
        checks=checks,
        shapes=shapes,
    )


SLIPS = {
    "softmax over the wrong axis": "softmax(dim=0): each key's column sums to 1 over the queries, so a "
    "query's weights no longer sum to 1 and its output is no longer an average of values.",
    "multiply scores by the 0/1 mask": "S ⊙ M instead of S + (−∞)·(1 − M): a blocked score becomes 0, "
    "and e⁰ = 1 still hands it weight.",
    "Qᵀ K instead of Q Kᵀ": "Qᵀ K is d_k × d_k (feature against feature), not L × S (query against key); "
    "it only multiplies at all when L = S, which is why square tests miss it.",
}


@dataclass(frozen=True)
class SlipOutcome:
    name: str
    weights: torch.Tensor | None  # (L, S) of the viewed head, or (d_k, d_k) for Qᵀ K
    checks: list[Check]
    note: str


def slip_outcome(ex: Exploration, name: str, head: int = 0) -> SlipOutcome:
    """Run one forward slip on the explored input and check it like the right answer."""
    qkv, scale = ex.qkv, ex.result.scale
    group = check_shapes(qkv.q, qkv.k, qkv.v)
    k, v = expand_kv(qkv.k, group), expand_kv(qkv.v, group)
    if name == "softmax over the wrong axis":
        out = slips.softmax_wrong_axis(qkv.q, k, v, ex.allowed, scale=scale)
    elif name == "multiply scores by the 0/1 mask":
        if ex.allowed is None:
            return SlipOutcome(name, None, [], "Pick a mask in the sidebar to see this slip.")
        out = slips.multiply_by_mask(qkv.q, k, v, ex.allowed, scale=scale)
    elif name == "Qᵀ K instead of Q Kᵀ":
        L, S, d_k = qkv.L, qkv.S, qkv.q.shape[-1]
        if L != S:
            note = (
                f"With L = {L} ≠ S = {S}, Qᵀ K raises a shape error: this slip only survives square inputs."
            )
            return SlipOutcome(name, None, [Check("score matrix is L × S", False, "Qᵀ K fails")], note)
        wrong = slips.q_transpose_k(qkv.q, k)[0, head] * scale
        shape_ok = tuple(wrong.shape) == (L, S)
        check = Check("score matrix is L × S", shape_ok, f"got {d_k} × {d_k}, want {L} × {S}")
        return SlipOutcome(name, stable_softmax(wrong), [check], "The heatmap shows softmax(Qᵀ K · scale).")
    else:
        raise ValueError(f"unknown slip {name!r}; choose one of {list(SLIPS)}")
    checks = weight_checks(
        out.weights, out.output, v, ex.allowed, sdpa_reference(qkv.q, k, v, ex.allowed, scale=scale)
    )
    return SlipOutcome(name, out.weights[0, head], checks, "")
