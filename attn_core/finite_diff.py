"""Central finite differences of L = ⟨O, G⟩ with respect to every coordinate of Q, K and V.

∂L/∂θ ≈ (L(θ + ε e_i) − L(θ − ε e_i)) / 2ε for every input coordinate i and several ε, in float64.
It uses nothing but forward passes, so it is an oracle independent of any backward formula
(the lesson's reference script does the same with ε = 1e-4, 1e-5, 1e-6).

Error model (why three ε): Taylor gives a truncation error ε²/6 · |∂³L/∂θ³|, which shrinks with ε;
each loss carries a rounding error δ ≈ c · u · Σ|O ⊙ G| (u = 2⁻⁵³, c the length of the longest
chain of float operations), and dividing the difference by 2ε turns it into ~δ/ε, which grows as
ε shrinks. `FiniteDifferences.bound` adds both, with |∂³L| estimated from the two largest ε.

Cost: 2 forward passes per coordinate per ε, so sizes are capped (`LIMITS.fd_*`). The perturbed
copies run as one batched forward, in chunks that keep memory bounded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.attention import attention, check_shapes
from attn_core.dtypes import UNIT_ROUNDOFF
from attn_core.limits import LIMITS

DEFAULT_EPS = (1e-4, 1e-5, 1e-6)


@dataclass(frozen=True)
class FiniteDifferences:
    """∂⟨O, G⟩/∂(Q, K, V) by central differences, one estimate per step size."""

    eps: tuple[float, ...]
    dq: tuple[torch.Tensor, ...]  # one (q.shape) estimate per ε
    dk: tuple[torch.Tensor, ...]
    dv: tuple[torch.Tensor, ...]
    loss: float  # ⟨O, G⟩ at the unperturbed point
    forward_passes: int  # 2 · coordinates · len(eps)
    third_derivative: float  # estimated max |∂³L/∂θ_i³| over coordinates (0 with a single ε)
    rounding: float  # δ: estimated rounding error of one loss evaluation
    bound: tuple[float, ...]  # predicted max |FD − exact| per ε: 10 · ε²/6 · |∂³L| + 2δ/ε


# |∂³L| is estimated from two finite differences and varies over [θ − ε, θ + ε]: a factor 10 on the
# truncation term keeps honest agreement inside the bound (the rounding term is already worst-case),
# while a wrong gradient (off by O(|∂L|), typically ≥ 1e-3 here) stays far outside.
SAFETY = 10.0


def finite_difference_cost(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[int, int]:
    """(coordinates, work): the number of inputs and coordinates × score entries per copy."""
    coordinates = q.numel() + k.numel() + v.numel()
    heads = q.shape[-3] if q.ndim >= 3 else 1
    batch = q[..., 0, 0, 0].numel() if q.ndim >= 3 else 1
    entries = batch * heads * q.shape[-2] * k.shape[-2]
    return coordinates, coordinates * entries


def check_finite_difference_size(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Raise ValueError (with the caps in the message) when finite differences would be too costly."""
    coordinates, work = finite_difference_cost(q, k, v)
    if coordinates > LIMITS.fd_coordinates:
        raise ValueError(
            f"finite differences need 2 forward passes per input coordinate and ε; Q, K, V have "
            f"{coordinates:,} coordinates, above the cap of {LIMITS.fd_coordinates:,}"
        )
    if work > LIMITS.fd_work:
        raise ValueError(
            f"finite differences here would compute {work:,} score entries per ε and side, above the "
            f"cap of {LIMITS.fd_work:,}: use fewer tokens or heads"
        )


def _losses(
    theta: torch.Tensor,
    shapes: tuple[torch.Size, torch.Size, torch.Size],
    G: torch.Tensor,
    allowed: torch.Tensor | None,
    scale: float | None,
) -> torch.Tensor:
    """⟨O, G⟩ for each row of theta (B, N): the rows are flattened (Q, K, V) triples. -> (B,)"""
    B = theta.shape[0]
    sizes = [s.numel() for s in shapes]
    q, k, v = (t.reshape(B, *s) for t, s in zip(theta.split(sizes, dim=1), shapes, strict=True))
    O = attention(q, k, v, allowed, scale=scale).output  # (B, ..., Hq, L, d_v)
    return (O * G).reshape(B, -1).sum(1)


def finite_differences(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    grad_output: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    scale: float | None = None,
    eps: tuple[float, ...] = DEFAULT_EPS,
) -> FiniteDifferences:
    """Central differences of L = ⟨attention(q, k, v).output, G⟩ for every coordinate, per ε.

    Shapes, mask (True = may attend) and GQA as `attention`; grad_output G has O's shape. Runs in
    float64 whatever the input dtype. Raises ValueError above the size caps (`LIMITS.fd_*`)."""
    check_shapes(q, k, v)
    check_finite_difference_size(q, k, v)
    if not eps or any(not e > 0 for e in eps):
        raise ValueError(f"step sizes must be positive, got {eps}")
    f64 = torch.float64
    q, k, v = (t.detach().to(f64) for t in (q, k, v))
    G = torch.as_tensor(grad_output).detach().to(f64)
    base = attention(q, k, v, allowed, scale=scale)
    if G.shape != base.output.shape:
        raise ValueError(f"G has shape {tuple(G.shape)} but O has {tuple(base.output.shape)}")
    shapes = (q.shape, k.shape, v.shape)
    theta = torch.cat([q.reshape(-1), k.reshape(-1), v.reshape(-1)])  # (N,)
    per_copy = max(1, finite_difference_cost(q, k, v)[1] // theta.numel())
    chunk = max(1, LIMITS.fd_chunk_entries // per_copy)
    estimates = [_central_differences(theta, e, chunk, shapes, G, allowed, scale) for e in eps]
    third = _third_derivative(eps, estimates)
    delta = _loss_rounding(q, k, v, base.output, G)
    # Two losses enter each difference: rounding contributes ≤ 2δ / 2ε = δ/ε, doubled for the step.
    bound = tuple(SAFETY * e**2 / 6 * third + 2 * delta / e for e in eps)
    N = theta.numel()

    nq, nk = q.numel(), k.numel()
    return FiniteDifferences(
        eps=tuple(eps),
        dq=tuple(g[:nq].reshape(q.shape) for g in estimates),
        dk=tuple(g[nq : nq + nk].reshape(k.shape) for g in estimates),
        dv=tuple(g[nq + nk :].reshape(v.shape) for g in estimates),
        loss=float((base.output * G).sum()),
        forward_passes=2 * N * len(eps),
        third_derivative=third,
        rounding=delta,
        bound=bound,
    )


def _central_differences(theta, e: float, chunk: int, shapes, G, allowed, scale) -> torch.Tensor:
    """(L(θ + ε·e_i) − L(θ − ε·e_i)) / h for every coordinate i, `chunk` perturbed copies per batch."""
    N = theta.numel()
    grad = torch.empty(N, dtype=theta.dtype)
    for start in range(0, N, chunk):
        idx = torch.arange(start, min(start + chunk, N))
        plus = theta.repeat(len(idx), 1)  # (c, N)
        minus = plus.clone()
        rows = torch.arange(len(idx))
        plus[rows, idx] += e
        minus[rows, idx] -= e
        h = plus[rows, idx] - minus[rows, idx]  # the step actually taken (≈ 2ε, exact in binary)
        both = _losses(torch.cat([plus, minus]), shapes, G, allowed, scale)  # (2c,)
        grad[idx] = (both[: len(idx)] - both[len(idx) :]) / h
    return grad


def _third_derivative(eps: tuple[float, ...], estimates: list[torch.Tensor]) -> float:
    """|∂³L| from the two largest ε: FD(ε) ≈ ∂L + ε²/6 · ∂³L, so their gap is (ε₁² − ε₂²)/6 · ∂³L."""
    order = sorted(range(len(eps)), key=lambda i: -eps[i])
    if len(eps) < 2 or eps[order[0]] == eps[order[1]]:
        return 0.0
    e1, e2 = eps[order[0]], eps[order[1]]
    gap = float((estimates[order[0]] - estimates[order[1]]).abs().max())
    return 6 * gap / (e1**2 - e2**2)


def _loss_rounding(q, k, v, O: torch.Tensor, G: torch.Tensor) -> float:
    """δ, the rounding in one float64 loss L = Σ O ⊙ G.

    Each o is a length-S average of length-d_k dot products (d_k + 2S + d_v roundings deep), then
    numel(O) products o·g are summed pairwise (log₂ numel(O) levels). Each rounding is at most u
    relative, so δ ≲ chain · u · Σ|O ⊙ G| (first-order worst case)."""
    chain = q.shape[-1] + 2 * k.shape[-2] + v.shape[-1] + math.ceil(math.log2(O.numel() + 1))
    return chain * UNIT_ROUNDOFF["float64"] * float((O * G).abs().sum())
