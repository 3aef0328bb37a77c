"""The kernel bench's test shapes, seeded inputs and the error each contestant may make against
float64 (argued in tests/kernels/test_contestants.py)."""

from __future__ import annotations

import torch


def reference64(q, k, v, causal):
    """float64 softmax(QKᵀ/√D) V; query i sees key j iff j ≤ i + S − L when causal."""
    q, k, v = (t.double() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = torch.einsum("bhld,bhsd->bhls", q, k) / q.shape[-1] ** 0.5
    L, S = s.shape[-2:]
    if causal:
        i, j = torch.arange(L)[:, None], torch.arange(S)[None, :]
        s = s.masked_fill(j > i + (S - L), float("-inf"))
    return torch.einsum("bhls,bhsd->bhld", s.softmax(-1), v)


U = {torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}


def plain(q, k, v, causal):
    """Plain PyTorch in the inputs' dtype: the baseline of the error rule."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
    L, S = s.shape[-2:]
    if causal:
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).tril(S - L).logical_not(), float("-inf"))
    return s.softmax(-1) @ v


SHAPES = [  # (L, S, Hq, Hkv, D, causal)
    (37, 53, 4, 2, 24, True),  # L ≠ S, bottom-right, GQA, odd
    (64, 64, 2, 2, 32, False),
    (1, 17, 2, 1, 16, True),  # one query row at the end of a cached prefix (decoding)
    (97, 97, 3, 1, 8, True),  # MQA, odd
    (33, 130, 2, 2, 64, False),
]


def inputs(shape, dtype, seed=0):
    L, S, hq, hkv, D, _ = shape
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2, h, n, D, generator=g).to(dtype) for h, n in ((hq, L), (hkv, S), (hkv, S))]


def allowed_error(q, k, v, causal):
    ref = reference64(q, k, v, causal)
    plain_err = (plain(q, k, v, causal).double() - ref).abs().max().item()
    return ref, 2 * plain_err + 2 * U[q.dtype] * v.abs().max().item()
