"""Online softmax: exact attention one key block at a time, never forming the L×S matrix (card 15).

Per query row the state is a running max m, a normalizer ℓ and an unnormalized output u
(d_v + 2 numbers, independent of S). A new block B_n with scores s_j updates it as

    m_n = max(m_{n-1}, max_{j∈B_n} s_j)
    α   = e^{m_{n-1} - m_n}                       # moves the old sums onto the new base
    ℓ_n = α ℓ_{n-1} + Σ_{j∈B_n} e^{s_j - m_n}
    u_n = α u_{n-1} + Σ_{j∈B_n} e^{s_j - m_n} v_j
    o   = u_N / ℓ_N,   lse = m_N + log ℓ_N        # lse: the one number kept for backward (card 12)

Start from m_0 = -inf, ℓ_0 = 0, u_0 = 0. Two partial states over disjoint key sets merge with the
same rescale (split-K decoding, two devices). Mask convention: boolean, True = may attend.

Memory traffic of the tiled kernel (per query tile of B_q rows, key tile of B_k keys): reads
B_q·d + B_k·(d + d_v) numbers, keeps a B_q × B_k score tile and B_q·(d_v + 2) of state; the
L × S matrix never exists. FLOPs are those of plain attention (4·L·S·d per head), not fewer.

Read in order: the one-row reference (``online_update``, ``walk_blocks``), the merge of partial
states, then the tiled kernel as two steps: ``attn_core.tile_plan`` decides which (query tile,
key tile) pairs run and which a mask removes, and ``tile_step`` is the recurrence on one tile.
The slips are ``attn_core.slips.online``; the page's views ``attn_core.views.online_softmax``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from attn_core.attention import check_shapes, default_scale, expand_kv
from attn_core.tile_plan import TilePlan, plan_tiles

# ----------------------------------------------------------------------------------------------
# The reference: one query row, one key block at a time
# ----------------------------------------------------------------------------------------------


def safe_base(m: torch.Tensor) -> torch.Tensor:
    """The max to subtract. A row that has seen no allowed key yet has m = -inf; subtracting 0
    instead keeps e^{-inf - base} = 0 and avoids -inf - (-inf) = NaN."""
    return torch.where(torch.isinf(m) & (m < 0), torch.zeros_like(m), m)


def rescale_factor(m_old: torch.Tensor, m_new: torch.Tensor) -> torch.Tensor:
    """α = e^{m_old - m_new} ≤ 1, which moves the old sums onto the new base; 0 from the empty
    state (m_old = -inf: nothing to rescale)."""
    if not torch.isfinite(m_old):
        return torch.zeros_like(m_old)
    return (m_old - safe_base(m_new)).exp()


# One block of the recurrence: (m, ℓ, u, s, V_block) → (m_new, α, ℓ_new, u_new). Scalars m, ℓ;
# u (d_v,); s (B_k,) the block's scores; V_block (B_k, d_v). The slips swap in their own.
BlockUpdate = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
]


def online_update(
    m: torch.Tensor, l: torch.Tensor, u: torch.Tensor, s: torch.Tensor, V_block: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The correct block update (see the module docstring): returns m_n, α, ℓ_n, u_n."""
    m_new = torch.maximum(m, s.max())
    alpha = rescale_factor(m, m_new)
    p = (s - safe_base(m_new)).exp()  # (B_k,) e^{s_j - m_n}, each ≤ 1
    return m_new, alpha, alpha * l + p.sum(), alpha * u + p @ V_block


@dataclass(frozen=True)
class OnlineStep:
    """The state of one query row after key block ``index`` (keys ``start``…``stop - 1``)."""

    index: int
    start: int
    stop: int
    block_max: float  # max score inside the block (-inf when the mask removes it all)
    m_before: float
    m_after: float
    rescale: float  # factor applied to the old ℓ and u: e^{m_before - m_after} when correct
    l_before: float
    l_after: float
    u_before: tuple[float, ...]
    u_after: tuple[float, ...]

    @property
    def max_moved(self) -> bool:
        """The running max rose, so the past had to be rescaled (first block excluded)."""
        return math.isfinite(self.m_before) and self.m_after > self.m_before


@dataclass(frozen=True)
class OnlineTrace:
    """A full pass over one query row: every step, the final u/ℓ and the row's logsumexp."""

    steps: tuple[OnlineStep, ...]
    output: torch.Tensor  # (d_v,) u_N / ℓ_N
    lse: float  # m_N + log ℓ_N
    slip: str | None = None  # which slip produced it; None = the correct recurrence


def _check_row(scores: torch.Tensor, values: torch.Tensor, block_size: int) -> None:
    if scores.ndim != 1 or values.ndim != 2 or values.shape[0] != scores.shape[0]:
        raise ValueError(
            f"one row: scores (S,) and values (S, d_v), got {tuple(scores.shape)} and {tuple(values.shape)}"
        )
    if block_size < 1:
        raise ValueError(f"block size must be at least 1, got {block_size}")
    if scores.shape[0] == 0 or not bool((scores > -math.inf).any()):
        raise ValueError("the row has no allowed key: a fully masked row has no softmax")


def walk_blocks(
    scores: torch.Tensor,
    values: torch.Tensor,
    block_size: int = 1,
    update: BlockUpdate = online_update,
    slip: str | None = None,
) -> OnlineTrace:
    """Run ``update`` over one row's key blocks from m_0 = -inf, ℓ_0 = 0, u_0 = 0, recording
    every step. scores (S,), -inf where masked; values (S, d_v); computes in scores' dtype.
    ``slip`` only labels the trace (the slips in ``attn_core.slips.online`` pass their id)."""
    _check_row(scores, values, block_size)
    dtype = scores.dtype
    V = values.to(dtype)
    m = torch.tensor(-math.inf, dtype=dtype)
    l = torch.tensor(0.0, dtype=dtype)
    u = torch.zeros(values.shape[1], dtype=dtype)
    steps = []
    for n, c0 in enumerate(range(0, scores.shape[0], block_size)):
        c1 = min(c0 + block_size, scores.shape[0])
        s = scores[c0:c1]  # (B_k,)
        m_new, alpha, l_new, u_new = update(m, l, u, s, V[c0:c1])
        steps.append(
            OnlineStep(
                index=n,
                start=c0,
                stop=c1,
                block_max=float(s.max()),
                m_before=float(m),
                m_after=float(m_new),
                rescale=float(alpha),
                l_before=float(l),
                l_after=float(l_new),
                u_before=tuple(float(x) for x in u),
                u_after=tuple(float(x) for x in u_new),
            )
        )
        m, l, u = m_new, l_new, u_new
    return OnlineTrace(steps=tuple(steps), output=u / l, lse=float(m + l.log()), slip=slip)


def online_softmax_trace(scores: torch.Tensor, values: torch.Tensor, block_size: int = 1) -> OnlineTrace:
    """The (m, ℓ, u) recurrence over one query row, one step per key block (card 15).

    scores: (S,) scaled scores of the row, -inf where masked; values: (S, d_v). Computes in the
    dtype of ``scores``. Each step records the block's key range, m before/after, the rescale
    factor e^{m_before - m_after}, ℓ and u. Bank's row with block_size=1 gives rescale 0.243 at
    "river", ℓ = 1 → 1.243 → 1.736, output (0.576, 0.284). The slips: ``attn_core.slips.online``.
    """
    return walk_blocks(scores, values, block_size)


# ----------------------------------------------------------------------------------------------
# Partial states and the merge (split-K, two devices)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartialState:
    """(m, ℓ, u) over a subset of keys: m (...,), ℓ (...,), u (..., d_v)."""

    m: torch.Tensor
    l: torch.Tensor
    u: torch.Tensor

    @property
    def output(self) -> torch.Tensor:
        """u / ℓ: the attention output over this subset alone (..., d_v); u may drop the d_v
        axis when each value is a single number (Drill 11)."""
        return self.u / (self.l.unsqueeze(-1) if self.u.ndim > self.l.ndim else self.l)

    @property
    def lse(self) -> torch.Tensor:
        """m + log ℓ = log Σ_j e^{s_j} over this subset (...,)."""
        return self.m + self.l.log()


@dataclass(frozen=True)
class MergeResult:
    state: PartialState  # merged (m, ℓ, u)
    output: torch.Tensor  # (..., d_v) u / ℓ
    lse: torch.Tensor  # (...,) m + log ℓ


def partial_state(scores: torch.Tensor, values: torch.Tensor) -> PartialState:
    """(m, ℓ, u) over one set of keys: m = max_j s_j, ℓ = Σ e^{s_j - m}, u = Σ e^{s_j - m} v_j.

    scores: (..., S) with -inf where masked; values: (..., S, d_v). An all-masked set gives the
    empty state (m = -inf, ℓ = 0, u = 0), which merges as a no-op.
    """
    m = scores.amax(-1)  # (...,)
    p = (scores - safe_base(m).unsqueeze(-1)).exp()  # (..., S)
    return PartialState(m=m, l=p.sum(-1), u=(p.unsqueeze(-2) @ values).squeeze(-2))


def merge_partials(a: PartialState, b: PartialState) -> MergeResult:
    """Merge two partial states over disjoint keys (card 15):
    m = max(m_a, m_b), ℓ = e^{m_a - m} ℓ_a + e^{m_b - m} ℓ_b, u likewise, o = u / ℓ.

    Accepts tensors or numbers: m, ℓ (...,), u (..., d_v). Drill 11: (3, 1.1353, 2.1353) and
    (5, 1.0498, 4.1494) merge to o = 3.6881, lse = 5.1852.
    """
    m_a, l_a, u_a = (_tensor(x) for x in (a.m, a.l, a.u))
    m_b, l_b, u_b = (_tensor(x) for x in (b.m, b.l, b.u))
    m = torch.maximum(m_a, m_b)
    base = safe_base(m)
    alpha_a, alpha_b = (m_a - base).exp(), (m_b - base).exp()  # each ≤ 1; the larger max gets 1
    l = alpha_a * l_a + alpha_b * l_b
    if u_a.ndim > m_a.ndim:  # u carries a d_v axis
        alpha_a, alpha_b = alpha_a.unsqueeze(-1), alpha_b.unsqueeze(-1)
    state = PartialState(m=m, l=l, u=alpha_a * u_a + alpha_b * u_b)
    return MergeResult(state=state, output=state.output, lse=state.lse)


def _tensor(x: torch.Tensor | float) -> torch.Tensor:
    return x if torch.is_tensor(x) else torch.as_tensor(x, dtype=torch.float64)


# ----------------------------------------------------------------------------------------------
# The tiled kernel
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OnlineResult:
    """What ``online_attention`` returns. A tile is one (query block, key block) pair."""

    output: torch.Tensor  # (..., Hq, L, d_v) in the input dtype
    lse: torch.Tensor  # (..., Hq, L) logsumexp of each row's scaled, masked scores (accum dtype)
    scale: float
    block_size: int  # keys per tile (B_k)
    query_block_size: int  # queries per tile (B_q)
    computed_tiles: frozenset[tuple[int, int]]  # (query block, key block) indices that ran
    tiles_total: int

    @property
    def tiles_computed(self) -> int:
        return len(self.computed_tiles)

    @property
    def tiles_skipped(self) -> int:
        """Tiles the mask removes entirely: never multiplied, never exponentiated."""
        return self.tiles_total - len(self.computed_tiles)

    # FlashAttention's papers say "blocks"; a block here is a tile, under either name.
    blocks_computed = tiles_computed
    blocks_skipped = tiles_skipped


# Default query tile: 4 key blocks tall (512 × 128 at the default). Eager PyTorch pays a fixed
# cost per op, and on a busy machine a thread-pool barrier per op: taller tiles mean fewer ops
# for the same FLOPs (measured in benchmarks/online_kernel.py), still an O(B_q·B_k) tile.
QUERY_BLOCKS_PER_KEY_BLOCK = 4


def _default_accum(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def tile_step(
    q_tile: torch.Tensor,
    k_tile: torch.Tensor,
    v_tile: torch.Tensor,
    blocked: torch.Tensor | None,
    m: torch.Tensor,
    acc: torch.Tensor,
    s_buf: torch.Tensor,
) -> torch.Tensor:
    """One tile of the recurrence. q_tile (BH, B_q, d) already scaled; k_tile (BH, B_k, d);
    v_tile (BH, B_k, d_v + 1) whose last column is 1, so acc (BH, B_q, d_v + 1) holds [u, ℓ]
    (ℓ is u for a value of 1) and one rescale + one GEMM update both; blocked: True = masked
    out, (BH, B_q, B_k) or None; m (BH, B_q, 1). Updates acc in place, returns the new m."""
    S = torch.bmm(q_tile, k_tile.transpose(1, 2), out=s_buf)  # (BH, B_q, B_k)
    if blocked is not None:
        S.masked_fill_(blocked, -math.inf)
    m_new = torch.maximum(m, S.amax(-1, keepdim=True))  # (BH, B_q, 1)
    base = m_new if blocked is None else safe_base(m_new)  # unmasked tiles: m_new is finite
    alpha = (m - base).exp_()  # e^{m_old - m_new}: 0 on the first tile, ≤ 1 always
    P = S.sub_(base).exp_()  # (BH, B_q, B_k) unnormalized weights, every entry ≤ 1
    acc.mul_(alpha).baddbmm_(P, v_tile)  # [u, ℓ] ← α [u, ℓ] + P [V, 1]
    return m_new


# -- The recurrence over the plan ---------------------------------------------------------------


def _flatten(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, lead: torch.Size, scale: float, acc_dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Leading axes flattened so every tile is one batched GEMM: Q·scale (BH, L, d_k),
    K (BH, S, d_k), and V1 (BH, S, d_v + 1): the values plus a column of ones that accumulates ℓ."""
    L, S = q.shape[-2], k.shape[-2]
    Q = (q.to(acc_dtype) * scale).expand(*lead, L, -1).reshape(-1, L, q.shape[-1])
    K = k.to(acc_dtype).expand(*lead, S, -1).reshape(-1, S, k.shape[-1])
    V = v.to(acc_dtype).expand(*lead, S, -1).reshape(-1, S, v.shape[-1])
    return Q, K, torch.cat([V, Q.new_ones(Q.shape[0], S, 1)], -1)


def _query_tile(
    plan: TilePlan, i: int, Q: torch.Tensor, K: torch.Tensor, V1: torch.Tensor, s_bufs: dict, computed: set
) -> tuple[torch.Tensor, torch.Tensor]:
    """Query tile i over every key tile the plan runs: returns m (BH, B_q, 1), [u, ℓ] (BH, B_q, d_v + 1)."""
    r0, r1 = plan.rows(i)
    BH = Q.shape[0]
    m = torch.full((BH, r1 - r0, 1), -math.inf, dtype=Q.dtype, device=Q.device)
    acc = torch.zeros((BH, r1 - r0, V1.shape[-1]), dtype=Q.dtype, device=Q.device)  # [u, ℓ]
    for j in range(plan.shape[1]):
        if not plan.runs[i][j]:
            continue  # the mask removes this tile entirely
        c0, c1 = plan.keys(j)
        shape = (r1 - r0, c1 - c0)
        if shape not in s_bufs:  # score tiles, reused across the loop
            s_bufs[shape] = torch.empty((BH, *shape), dtype=Q.dtype, device=Q.device)
        blocked = plan.blocked(i, j, Q.device)
        m = tile_step(Q[:, r0:r1], K[:, c0:c1], V1[:, c0:c1], blocked, m, acc, s_bufs[shape])
        computed.add((i, j))
    return m, acc


def online_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    scale: float | None = None,
    block_size: int = 128,
    query_block_size: int | None = None,
    causal: bool = False,
    accum_dtype: torch.dtype | None = None,
    window: int | None = None,
) -> OnlineResult:
    """softmax(Q Kᵀ · scale, masked) V by the online-softmax recurrence over tiles (card 15).

    q: (..., Hq, L, d_k); k: (..., Hkv, S, d_k); v: (..., Hkv, S, d_v), exactly as ``attention``
    (leading axes broadcast; GQA when Hq is a multiple of Hkv). ``allowed``: bool broadcastable
    to (..., Hq, L, S), True = may attend. ``causal=True`` adds the bottom-right causal mask of
    ``causal_mask(L, S)`` without materializing it; ``window`` (without ``allowed``), the causal
    sliding window of ``sliding_window_mask(L, S, window)``, likewise. Queries go in blocks of
    ``query_block_size`` (default 4·``block_size``), keys in blocks of ``block_size``; a tile that
    no (batch, head, query, key) pair of the mask allows is skipped and counted. State and arithmetic use
    ``accum_dtype`` (default: float32 for fp16/bf16 inputs, else the input dtype); the output is
    cast back to the input dtype. Extra memory: one B_q × B_k score tile per head plus
    O(L·(d_v + 2)) state — never L × S. Raises ValueError like ``attention``.
    """
    group = check_shapes(q, k, v)
    if block_size < 1 or (query_block_size is not None and query_block_size < 1):
        raise ValueError(f"block sizes must be at least 1, got {block_size}, {query_block_size}")
    bk = int(block_size)
    bq = int(query_block_size or QUERY_BLOCKS_PER_KEY_BLOCK * block_size)
    scale = default_scale(q.shape[-1]) if scale is None else float(scale)
    acc_dtype = accum_dtype or _default_accum(q.dtype)
    L, S, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    k, v = expand_kv(k, group), expand_kv(v, group)  # (..., Hq, S, d)
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])

    plan = plan_tiles(L, S, lead, bq, bk, allowed, causal, q.device, window)
    Q, K, V1 = _flatten(q, k, v, lead, scale, acc_dtype)
    out = torch.empty((Q.shape[0], L, d_v), dtype=acc_dtype, device=q.device)  # (BH, L, d_v)
    lse = torch.empty((Q.shape[0], L), dtype=acc_dtype, device=q.device)  # (BH, L)
    s_bufs: dict[tuple[int, int], torch.Tensor] = {}
    computed: set[tuple[int, int]] = set()
    for i in range(plan.shape[0]):
        m, acc = _query_tile(plan, i, Q, K, V1, s_bufs, computed)
        r0, r1 = plan.rows(i)
        l = acc[..., d_v:]  # (BH, B_q, 1)
        out[:, r0:r1] = acc[..., :d_v] / l  # o = u / ℓ
        lse[:, r0:r1] = (m + l.log()).squeeze(-1)  # m + log ℓ

    return OnlineResult(
        output=out.reshape(*lead, L, d_v).to(q.dtype),
        lse=lse.reshape(*lead, L),
        scale=scale,
        block_size=bk,
        query_block_size=bq,
        computed_tiles=frozenset(computed),
        tiles_total=plan.shape[0] * plan.shape[1],
    )
