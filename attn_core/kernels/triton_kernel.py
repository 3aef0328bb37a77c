"""Our forward-only online-softmax attention kernel in Triton (FlashAttention-2's loop order).

One program owns BLOCK_M query rows of one (batch, head) and walks the keys BLOCK_N at a time,
keeping the paper's state per row: running max ``m_i``, normalizer ``l_i`` and unnormalized output
``acc``; ``alpha = exp(m_old - m_new)`` moves the old sums onto the new base. Memory traffic per
program: reads BLOCK_M·D of Q once and (S·2D) of K and V, writes BLOCK_M·D of O; the L×S matrix
never exists. Supports causal masks with L ≠ S (bottom-right: query i sees keys j ≤ i + S − L),
GQA (query head h reads KV head h // (Hq/Hkv)), ragged lengths and fp32/fp16/bf16.

Written with plain pointer arithmetic (``tl.make_block_ptr`` is gone in Triton 3.9) so that it runs
on Triton 3.6 and 3.9 alike. Without a GPU it runs under Triton's interpreter (TRITON_INTERPRET=1),
for correctness only: the interpreter's bf16 ``tl.dot`` is broken (triton#11584), so there the
operands are upcast to fp32 before each dot. Triton is optional: ``AVAILABLE`` says whether it
imported, ``UNAVAILABLE_REASON`` why not.
"""

from __future__ import annotations

import functools
import math
import os
import sys

import torch

# Triton reads TRITON_INTERPRET when its own language functions are decorated, i.e. when triton is
# first imported: without a GPU it must be set before that import, for the whole process.
INTERPRETED = not torch.cuda.is_available()
_imported_before = "triton" in sys.modules
if INTERPRETED:
    os.environ.setdefault("TRITON_INTERPRET", "1")

try:
    import triton
    import triton.language as tl

    AVAILABLE, UNAVAILABLE_REASON = True, ""
except ImportError as exc:  # CI installs it from requirements-dev.txt; a bare runtime may not
    triton = tl = None
    AVAILABLE, UNAVAILABLE_REASON = False, f"triton is not installed ({exc})"
_NOT_INTERPRETED = "no GPU, and triton was imported before TRITON_INTERPRET=1 could be set"
if AVAILABLE and INTERPRETED and os.environ["TRITON_INTERPRET"] != "1":
    AVAILABLE, UNAVAILABLE_REASON = False, _NOT_INTERPRETED

MAX_HEAD_DIM = 256  # one program keeps a BLOCK_M × D accumulator in registers


def _jit(fn):
    """triton.jit where Triton imported: a function the kernel calls must be a JIT function itself
    (the kernel is jitted on first use, `_kernel`, in the same TRITON_INTERPRET mode)."""
    return triton.jit(fn) if AVAILABLE else fn


@_jit
def _online_step(acc, l_i, m_i, qk, v, UPCAST: tl.constexpr, PRECISION: tl.constexpr):
    """One key tile folded into a row block's state (FlashAttention-2): the new running max, the
    old sums moved onto it by ``alpha``, then this tile's p = exp2(qk − m) added to l_i and p·V to
    acc. qk: (BLOCK_M, BLOCK_N) scores in log2 units, masked to −inf; v: (BLOCK_N, BLOCK_D)."""
    m_new = tl.maximum(m_i, tl.max(qk, 1))
    base = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row with nothing allowed yet
    alpha = tl.math.exp2(m_i - base)
    p = tl.math.exp2(qk - base[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    if UPCAST:
        acc = acc * alpha[:, None] + tl.dot(p, v.to(tl.float32), input_precision=PRECISION)
    else:
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
    return acc, l_i, m_new


def _attn_fwd(
    Q, K, V, O,  # (B, Hq, L, D), (B, Hkv, S, D), (B, Hkv, S, D), (B, Hq, L, D)
    sqb, sqh, sql, skb, skh, sks, svb, svh, svs, sob, soh, sol,  # strides; the last axis is unit
    L, S, HQ, GROUP, sm_scale,
    D: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr, UPCAST: tl.constexpr, PRECISION: tl.constexpr,
):  # fmt: skip
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // HQ
    h = bh % HQ
    kv_h = h // GROUP  # GQA: a group of query heads shares one KV head
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < D
    q_ptrs = Q + b * sqb + h * sqh + offs_m[:, None] * sql + offs_d[None, :]
    q = tl.load(q_ptrs, mask=(offs_m[:, None] < L) & d_ok[None, :], other=0.0)
    k_base = K + b * skb + kv_h * skh
    v_base = V + b * svb + kv_h * svh

    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634  # exp(x) = exp2(x · log2 e)
    if UPCAST:
        q = q.to(tl.float32)

    hi = S
    if CAUSAL:  # keys past the last row's horizon are never seen by this block
        hi = tl.minimum(S, start_m * BLOCK_M + BLOCK_M + S - L)
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        kv_ok = cols < S
        k = tl.load(
            k_base + cols[None, :] * sks + offs_d[:, None], mask=kv_ok[None, :] & d_ok[:, None], other=0.0
        )
        v = tl.load(
            v_base + cols[:, None] * svs + offs_d[None, :], mask=kv_ok[:, None] & d_ok[None, :], other=0.0
        )
        if UPCAST:
            k = k.to(tl.float32)
        qk = tl.dot(q, k, input_precision=PRECISION) * qk_scale  # (BLOCK_M, BLOCK_N), log2 units
        allowed = kv_ok[None, :]
        if CAUSAL:
            allowed = allowed & (cols[None, :] <= offs_m[:, None] + (S - L))
        qk = tl.where(allowed, qk, float("-inf"))
        acc, l_i, m_i = _online_step(acc, l_i, m_i, qk, v, UPCAST, PRECISION)

    out = acc / l_i[:, None]
    o_ptrs = O + b * sob + h * soh + offs_m[:, None] * sol + offs_d[None, :]
    tl.store(o_ptrs, out.to(O.dtype.element_ty), mask=(offs_m[:, None] < L) & d_ok[None, :])


@functools.cache
def _kernel():
    return triton.jit(_attn_fwd)


def _config(head_dim: int, itemsize: int, interpret: bool) -> tuple[int, int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps, num_stages). GPU: FA2's 128 × 64 tiles for 2-byte types (8
    warps at d > 64); shared memory holds Q's tile plus K and V per stage, 128·d·2 + stages·2·64·d·2
    bytes = 128 KiB at d = 128, 3 stages (Hopper has 227 KiB). fp32 halves the tiles and stages to
    stay inside it. Interpreted: small tiles (each program is plain numpy there)."""
    if interpret:
        return 16, 16, 1, 1
    if itemsize == 4:
        return 64, 32, 4, 2
    if head_dim <= 64:
        return 128, 64, 4, 3
    return 128, 64, 8, 3


def _interpreter_works() -> bool:
    """Whether an earlier import of triton happened under TRITON_INTERPRET=1 (then the interpreter
    runs our kernel): a 1 × 1 × 1 × 16 call settles it in a few milliseconds."""
    x = torch.ones(1, 1, 1, 16)
    try:
        return bool(torch.allclose(triton_attention(x, x, x), x))
    except Exception:  # the interpreter refuses kernels decorated outside it (Triton's own error types)
        return False


def triton_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """softmax(Q Kᵀ / √D, causal bottom-right) V by our Triton kernel; forward only.

    q: (B, Hq, L, D); k, v: (B, Hkv, S, D), Hq a multiple of Hkv; fp32, fp16 or bf16; D ≤ 256.
    ``causal``: query i may attend key j iff j ≤ i + S − L (True = may attend), which needs L ≤ S
    so that every row sees a key. CUDA tensors run compiled; CPU tensors run interpreted
    (correct, slow). Raises ValueError for shapes or dtypes it does not take.
    """
    if not AVAILABLE:
        raise ValueError(UNAVAILABLE_REASON)
    if (
        q.ndim != 4
        or k.ndim != 4
        or v.shape != k.shape
        or q.shape[0] != k.shape[0]
        or q.shape[3] != k.shape[3]
    ):
        raise ValueError(
            f"need q (B, Hq, L, D), k = v (B, Hkv, S, D); got {tuple(q.shape)}, {tuple(k.shape)}"
        )
    B, HQ, L, D = q.shape
    HKV, S = k.shape[1], k.shape[2]
    if HQ % HKV or D > MAX_HEAD_DIM or q.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"triton kernel: Hq % Hkv = 0, D ≤ {MAX_HEAD_DIM}, fp32/fp16/bf16 (got {q.dtype})")
    if causal and L > S:
        raise ValueError(f"causal bottom-right with L = {L} > S = {S} leaves rows with no key")
    interpret = not q.is_cuda
    if interpret != INTERPRETED:
        raise ValueError(f"triton runs {'CPU' if INTERPRETED else 'CUDA'} tensors in this process")
    q, k, v = (t.contiguous() if t.stride(-1) != 1 else t for t in (q, k, v))
    o = torch.empty_like(q)
    block_m, block_n, warps, stages = _config(D, q.element_size(), interpret)
    grid = (triton.cdiv(L, block_m), B * HQ)
    # The arguments in _attn_fwd's groups: tensors, strides, sizes, then the compile-time constants.
    _kernel()[grid](
        q, k, v, o,
        *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],
        L, S, HQ, HQ // HKV, 1.0 / math.sqrt(D),
        D=D, BLOCK_D=max(16, triton.next_power_of_2(D)), BLOCK_M=block_m, BLOCK_N=block_n,
        CAUSAL=causal, UPCAST=interpret, PRECISION="ieee" if q.dtype == torch.float32 else None,
        num_warps=warps, num_stages=stages,
    )  # fmt: skip
    return o


if AVAILABLE and INTERPRETED and _imported_before and not _interpreter_works():
    AVAILABLE, UNAVAILABLE_REASON = False, _NOT_INTERPRETED
