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

The page's one-call views over this module (walk a row, tile map, block-size sweep, split-K
for one row) live in ``attn_core.online_views``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.attention import check_shapes, default_scale, expand_kv

# ----------------------------------------------------------------------------------------------
# The reference: one query row, one key block at a time
# ----------------------------------------------------------------------------------------------


def _safe_base(m: torch.Tensor) -> torch.Tensor:
    """The max to subtract. A row that has seen no allowed key yet has m = -inf; subtracting 0
    instead keeps e^{-inf - base} = 0 and avoids -inf - (-inf) = NaN."""
    return torch.where(torch.isinf(m) & (m < 0), torch.zeros_like(m), m)


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


def _trace(scores: torch.Tensor, values: torch.Tensor, block_size: int, slip: str | None) -> OnlineTrace:
    if scores.ndim != 1 or values.ndim != 2 or values.shape[0] != scores.shape[0]:
        raise ValueError(
            f"one row: scores (S,) and values (S, d_v), got {tuple(scores.shape)} and {tuple(values.shape)}"
        )
    if block_size < 1:
        raise ValueError(f"block size must be at least 1, got {block_size}")
    if scores.shape[0] == 0 or not bool((scores > -math.inf).any()):
        raise ValueError("the row has no allowed key: a fully masked row has no softmax")
    dtype = scores.dtype
    V = values.to(dtype)
    m = torch.tensor(-math.inf, dtype=dtype)
    l = torch.tensor(0.0, dtype=dtype)
    u = torch.zeros(values.shape[1], dtype=dtype)
    steps = []
    for n, c0 in enumerate(range(0, scores.shape[0], block_size)):
        c1 = min(c0 + block_size, scores.shape[0])
        s = scores[c0:c1]  # (B_k,)
        block_max = s.max()
        if slip == "no_max":
            m_new = torch.tensor(0.0, dtype=dtype)  # the slip: base 0 always, so e^{s_j} can overflow
            factor = torch.tensor(1.0, dtype=dtype)
        else:
            m_new = torch.maximum(m, block_max)
            base = _safe_base(m_new)
            if not torch.isfinite(m):  # empty state: nothing to rescale, whatever the sign
                factor = torch.tensor(0.0, dtype=dtype)
            elif slip == "wrong_sign":
                factor = (base - m).exp()
            else:
                factor = (m - base).exp()
        base = _safe_base(m_new)
        p = (s - base).exp()  # (B_k,)
        l_new = factor * l + p.sum()
        u_new = (u if slip == "l_not_u" else factor * u) + p @ V[c0:c1]
        steps.append(
            OnlineStep(
                index=n,
                start=c0,
                stop=c1,
                block_max=float(block_max),
                m_before=float(m),
                m_after=float(m_new),
                rescale=float(factor),
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
    "river", ℓ = 1 → 1.243 → 1.736, output (0.576, 0.284).
    """
    return _trace(scores, values, block_size, None)


# ----------------------------------------------------------------------------------------------
# Slips: the recurrence written wrong
# ----------------------------------------------------------------------------------------------


SLIPS = {
    "l_not_u": "rescales ℓ but not u",
    "wrong_sign": "uses e^{m_new - m_old} (wrong sign)",
    "no_max": "no max subtraction: e^{s_j} directly",
}
SLIP_EXPLANATIONS = {
    "l_not_u": "When the max rises, ℓ moves to the new base but u keeps the old one, so every value "
    "seen before is over-weighted by e^{m_new − m_old}. Bank's row hides it: the only value seen "
    "before river raises the max is v_the = (0, 0).",
    "wrong_sign": "The past is multiplied by e^{m_new − m_old} ≥ 1 instead of e^{m_old − m_new} ≤ 1: "
    "the old keys gain weight exactly when a larger score should have shrunk them.",
    "no_max": "e^{s_j} without subtracting the running max. Exact on paper, but fp16 stops at 65,504 = "
    "e^{11.09}: a score above 11.09 makes ℓ and u infinite and the output NaN.",
}


def slip_rescale_l_not_u(scores: torch.Tensor, values: torch.Tensor, block_size: int = 1) -> OnlineTrace:
    """Slip: when the max moves, ℓ is rescaled but u keeps its old base, so the past values are
    over-weighted by e^{m_new - m_old}. Invisible when the earlier values are zero."""
    return _trace(scores, values, block_size, "l_not_u")


def slip_wrong_sign_rescale(scores: torch.Tensor, values: torch.Tensor, block_size: int = 1) -> OnlineTrace:
    """Slip: rescales the past by e^{m_new - m_old} ≥ 1 instead of e^{m_old - m_new} ≤ 1."""
    return _trace(scores, values, block_size, "wrong_sign")


def slip_no_max_subtraction(scores: torch.Tensor, values: torch.Tensor, block_size: int = 1) -> OnlineTrace:
    """Slip: accumulates e^{s_j} with no running max. Exact on paper, but e^{s} overflows fp16
    once s > 11.09 (65,504 is fp16's largest number, card 2): ℓ and u become inf, o = NaN."""
    return _trace(scores, values, block_size, "no_max")


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


@dataclass(frozen=True)
class SplitMerge:
    """Keys split at ``split``: partial a = keys [0, split), b = [split, S), merged vs direct."""

    split: int
    a: PartialState
    b: PartialState
    merged: MergeResult
    direct: torch.Tensor  # (..., d_v) softmax(s) @ V over all keys at once
    max_abs_error: float


def partial_state(scores: torch.Tensor, values: torch.Tensor) -> PartialState:
    """(m, ℓ, u) over one set of keys: m = max_j s_j, ℓ = Σ e^{s_j - m}, u = Σ e^{s_j - m} v_j.

    scores: (..., S) with -inf where masked; values: (..., S, d_v). An all-masked set gives the
    empty state (m = -inf, ℓ = 0, u = 0), which merges as a no-op.
    """
    m = scores.amax(-1)  # (...,)
    p = (scores - _safe_base(m).unsqueeze(-1)).exp()  # (..., S)
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
    base = _safe_base(m)
    alpha_a, alpha_b = (m_a - base).exp(), (m_b - base).exp()  # each ≤ 1; the larger max gets 1
    l = alpha_a * l_a + alpha_b * l_b
    if u_a.ndim > m_a.ndim:  # u carries a d_v axis
        alpha_a, alpha_b = alpha_a.unsqueeze(-1), alpha_b.unsqueeze(-1)
    state = PartialState(m=m, l=l, u=alpha_a * u_a + alpha_b * u_b)
    return MergeResult(state=state, output=state.output, lse=state.lse)


def _tensor(x: torch.Tensor | float) -> torch.Tensor:
    return x if torch.is_tensor(x) else torch.as_tensor(x, dtype=torch.float64)


def split_merge(scores: torch.Tensor, values: torch.Tensor, split: int) -> SplitMerge:
    """Split the keys at ``split`` (0 < split < S), compute each half's partial state, merge,
    and compare with softmax over all keys. scores (..., S), values (..., S, d_v)."""
    S = scores.shape[-1]
    if not 0 < split < S:
        raise ValueError(f"split must lie strictly between 0 and S = {S}, got {split}")
    a = partial_state(scores[..., :split], values[..., :split, :])
    b = partial_state(scores[..., split:], values[..., split:, :])
    merged = merge_partials(a, b)
    direct = (torch.softmax(scores, -1).unsqueeze(-2) @ values).squeeze(-2)  # (..., d_v)
    err = float((merged.output - direct).abs().max())
    return SplitMerge(split=split, a=a, b=b, merged=merged, direct=direct, max_abs_error=err)


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

    # The issue speaks of "blocks"; a block here is a tile.
    blocks_computed = tiles_computed
    blocks_skipped = tiles_skipped


# Default query tile: 4 key blocks tall (512 × 128 at the default). Eager PyTorch pays a fixed
# cost per op, and on a busy machine a thread-pool barrier per op: taller tiles mean fewer ops
# for the same FLOPs (measured in benchmarks/online_kernel.py), still an O(B_q·B_k) tile.
QUERY_BLOCKS_PER_KEY_BLOCK = 4


def _default_accum(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _tile_step(
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
    base = m_new if blocked is None else _safe_base(m_new)  # unmasked tiles: m_new is finite
    alpha = (m - base).exp_()  # e^{m_old - m_new}: 0 on the first tile, ≤ 1 always
    P = S.sub_(base).exp_()  # (BH, B_q, B_k) unnormalized weights, every entry ≤ 1
    acc.mul_(alpha).baddbmm_(P, v_tile)  # [u, ℓ] ← α [u, ℓ] + P [V, 1]
    return m_new


def _block_reduce(mask2d: torch.Tensor, bq: int, bk: int, op: str, pad: bool) -> torch.Tensor:
    """(L, S) bool → (n_q, n_k): any/all of each tile; the ragged edge is padded with ``pad``."""
    L, S = mask2d.shape
    n_q, n_k = -(-L // bq), -(-S // bk)
    padded = torch.full((n_q * bq, n_k * bk), pad, dtype=torch.bool)
    padded[:L, :S] = mask2d
    tiles = padded.reshape(n_q, bq, n_k, bk)
    return tiles.any(3).any(1) if op == "any" else tiles.all(3).all(1)


def _causal(L: int, S: int, r0: int, r1: int, c0: int, c1: int, device: torch.device) -> torch.Tensor:
    """Rows r0…r1-1, keys c0…c1-1 of causal_mask(L, S, 'bottom_right'), built for one tile."""
    i = torch.arange(r0, r1, device=device).unsqueeze(-1) + (S - L)  # (B_q, 1)
    j = torch.arange(c0, c1, device=device).unsqueeze(0)  # (1, B_k)
    return j <= i


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
) -> OnlineResult:
    """softmax(Q Kᵀ · scale, masked) V by the online-softmax recurrence over tiles (card 15).

    q: (..., Hq, L, d_k); k: (..., Hkv, S, d_k); v: (..., Hkv, S, d_v), exactly as ``attention``
    (leading axes broadcast; GQA when Hq is a multiple of Hkv). ``allowed``: bool broadcastable
    to (..., Hq, L, S), True = may attend. ``causal=True`` adds the bottom-right causal mask of
    ``causal_mask(L, S)`` without materializing it. Queries go in blocks of ``query_block_size``
    (default 4·``block_size``), keys in blocks of ``block_size``; a tile that no (batch, head,
    query, key) pair of the mask allows is skipped and counted. State and arithmetic use
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

    # Mask bookkeeping: which tiles run (any allowed) and which need no fill (all allowed).
    if allowed is not None:
        allowed = torch.as_tensor(allowed, dtype=torch.bool, device=q.device)
        if allowed.ndim < 2:  # (S,) or a scalar: one row for every query
            allowed = allowed.reshape(1, -1)
        if causal:
            allowed = allowed & _causal(L, S, 0, L, 0, S, q.device)
            causal = False
        try:
            full = torch.broadcast_to(allowed, (*lead, L, S))
        except RuntimeError as exc:
            raise ValueError(
                f"mask of shape {tuple(allowed.shape)} does not broadcast to scores {(*lead, L, S)}"
            ) from exc
        row_any = full.any(-1)
        flat = full.reshape(-1, L, S) if full.ndim > 2 else full.unsqueeze(0)
        tile_any = _block_reduce(flat.any(0), bq, bk, "any", False)
        tile_all = _block_reduce(flat.all(0), bq, bk, "all", True)
    else:
        shifted = torch.arange(L) + (S - L)  # last key each query may see under causal
        row_any = shifted >= 0 if causal else torch.ones(L, dtype=torch.bool)
        if causal:
            r0 = torch.arange(0, L, bq)
            r1 = torch.clamp(r0 + bq, max=L)
            c0 = torch.arange(0, S, bk)
            c1 = torch.clamp(c0 + bk, max=S)
            # tile (i, j) has an allowed pair iff its first key ≤ the last row's horizon, and is
            # entirely allowed iff its last key ≤ the first row's horizon
            tile_any = c0[None, :] <= (r1[:, None] - 1 + S - L)
            tile_all = (c1[None, :] - 1) <= (r0[:, None] + S - L)
        else:
            tile_any = torch.ones(-(-L // bq), -(-S // bk), dtype=torch.bool)
            tile_all = tile_any
    empty = ~row_any
    if empty.any():
        rows = sorted({int(i) for i in empty.nonzero()[:, -1].tolist()})
        raise ValueError(f"query row(s) {rows[:8]} may attend to no key: a fully masked row has no softmax")

    # Flatten the leading axes so every tile is one batched GEMM: (BH, length, width).
    Q = (q.to(acc_dtype) * scale).expand(*lead, L, -1).reshape(-1, L, q.shape[-1])  # (BH, L, d_k)
    K = k.to(acc_dtype).expand(*lead, S, -1).reshape(-1, S, k.shape[-1])  # (BH, S, d_k)
    V1 = torch.cat(  # (BH, S, d_v + 1): values plus a column of ones that accumulates ℓ
        [v.to(acc_dtype).expand(*lead, S, -1).reshape(-1, S, d_v), Q.new_ones(Q.shape[0], S, 1)], -1
    )
    BH = Q.shape[0]
    out = torch.empty((BH, L, d_v), dtype=acc_dtype, device=q.device)
    lse = torch.empty((BH, L), dtype=acc_dtype, device=q.device)
    s_bufs: dict[tuple[int, int], torch.Tensor] = {}  # score tiles, reused across the loop
    computed: set[tuple[int, int]] = set()
    any_rows, all_rows = tile_any.tolist(), tile_all.tolist()

    for i, r0 in enumerate(range(0, L, bq)):
        r1 = min(r0 + bq, L)
        m = torch.full((BH, r1 - r0, 1), -math.inf, dtype=acc_dtype, device=q.device)
        acc = torch.zeros((BH, r1 - r0, d_v + 1), dtype=acc_dtype, device=q.device)  # [u, ℓ]
        q_tile = Q[:, r0:r1]
        for j, c0 in enumerate(range(0, S, bk)):
            if not any_rows[i][j]:
                continue  # the mask removes this tile entirely
            c1 = min(c0 + bk, S)
            blocked = None
            if not all_rows[i][j]:
                if allowed is None:
                    tile = _causal(L, S, r0, r1, c0, c1, q.device)
                else:  # a mask axis of size 1 broadcasts: slice only the axes it really has
                    rows = slice(r0, r1) if allowed.shape[-2] != 1 else slice(None)
                    cols = slice(c0, c1) if allowed.shape[-1] != 1 else slice(None)
                    tile = allowed[..., rows, cols]
                blocked = (~tile).expand(*lead, r1 - r0, c1 - c0).reshape(BH, r1 - r0, c1 - c0)
            shape = (r1 - r0, c1 - c0)
            if shape not in s_bufs:
                s_bufs[shape] = torch.empty((BH, *shape), dtype=acc_dtype, device=q.device)
            m = _tile_step(q_tile, K[:, c0:c1], V1[:, c0:c1], blocked, m, acc, s_bufs[shape])
            computed.add((i, j))
        l = acc[..., d_v:]  # (BH, B_q, 1)
        out[:, r0:r1] = acc[..., :d_v] / l
        lse[:, r0:r1] = (m + l.log()).squeeze(-1)

    return OnlineResult(
        output=out.reshape(*lead, L, d_v).to(q.dtype),
        lse=lse.reshape(*lead, L),
        scale=scale,
        block_size=bk,
        query_block_size=bq,
        computed_tiles=frozenset(computed),
        tiles_total=int(tile_any.numel()),
    )
