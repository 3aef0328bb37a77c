"""The contestants: every way this lab can compute one attention forward, behind one signature.

Each takes ``(q, k, v, causal)`` with q (B, Hq, L, D), k and v (B, Hkv, S, D), Hq a multiple of
Hkv (GQA), and returns O (B, Hq, L, D). ``causal`` means bottom-right alignment everywhere (query i
may attend key j iff j ≤ i + S − L; True = may attend), the lab's convention and what a KV-cached
prefix needs; SDPA's own ``is_causal`` is top-left, so for L ≠ S the SDPA contestants pass the
bottom-right mask explicitly. A contestant that cannot run a case raises; the runner reports it
as "unsupported" with PyTorch's reason.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attn_core.attention import attention
from attn_core.kernels import triton_kernel
from attn_core.masks import causal_mask
from attn_core.online import online_attention

Fn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], torch.Tensor]


@dataclass(frozen=True)
class Contestant:
    id: str  # the CLI's --impl name
    label: str
    fn: Fn
    materializes_scores: bool  # forms the L × S matrix (for the roofline's bytes)
    note: str = ""  # what the chart legend and the error table add


def naive(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """softmax(QKᵀ/√D) V with the full L × S score and weight matrices (attn_core.attention)."""
    allowed = causal_mask(q.shape[-2], k.shape[-2]).to(q.device) if causal else None
    return attention(q, k, v, allowed).output


def online(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Our tiled online softmax in eager PyTorch (attn_core.online_attention, default tiles)."""
    return online_attention(q, k, v, causal=causal).output


def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """torch's scaled_dot_product_attention, letting it choose the backend."""
    L, S = q.shape[-2], k.shape[-2]
    mask = causal_mask(L, S).to(q.device) if causal and L != S else None
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, is_causal=causal and L == S, enable_gqa=q.shape[1] != k.shape[1]
    )


def forced(backend: torch.nn.attention.SDPBackend) -> Fn:
    """SDPA with only ``backend`` allowed (torch.nn.attention.sdpa_kernel)."""

    def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
        with torch.nn.attention.sdpa_kernel([backend]):
            return sdpa(q, k, v, causal)

    return run


@functools.cache
def _block_mask(L: int, S: int, device: str):
    from torch.nn.attention.flex_attention import create_block_mask

    def bottom_right(b, h, q_idx, kv_idx):
        return q_idx + (S - L) >= kv_idx

    return create_block_mask(bottom_right, None, None, L, S, device=device)


FLEX_RECOMPILE_LIMIT = 512  # one compile per (shape, dtype, mask) of a sweep: a GPU sweep has ~100


@functools.cache
def _compiled_flex():
    """flex_attention compiled for static shapes. Dynamo stops recompiling a function after 8
    shapes by default and silently runs it eager from then on, which a sweep would report as
    'compiled': the limit is raised for this process."""
    from torch.nn.attention.flex_attention import flex_attention

    config = torch._dynamo.config
    for name in (
        "recompile_limit",
        "cache_size_limit",
        "accumulated_recompile_limit",
        "accumulated_cache_size_limit",
    ):
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), FLEX_RECOMPILE_LIMIT))
    return torch.compile(flex_attention, dynamic=False)


def _flex(q, k, v, causal: bool, compiled: bool) -> torch.Tensor:
    from torch.nn.attention.flex_attention import flex_attention

    mask = _block_mask(q.shape[-2], k.shape[-2], str(q.device)) if causal else None
    if compiled:
        return _compiled_flex()(q, k, v, block_mask=mask, enable_gqa=q.shape[1] != k.shape[1])
    with warnings.catch_warnings():  # eager is unfused by design: that is what this contestant shows
        warnings.simplefilter("ignore", UserWarning)
        return flex_attention(q, k, v, block_mask=mask, enable_gqa=q.shape[1] != k.shape[1])


def flex(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """FlexAttention, torch.compile'd, with a block mask for the bottom-right causal case."""
    return _flex(q, k, v, causal, compiled=True)


def flex_eager(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """FlexAttention without compiling: torch's unfused reference path (forms L × S)."""
    return _flex(q, k, v, causal, compiled=False)


def triton(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """Our Triton kernel (attn_core.kernels.triton_kernel); interpreted when there is no GPU."""
    return triton_kernel.triton_attention(q, k, v, causal)


_B = torch.nn.attention.SDPBackend
CONTESTANTS: dict[str, Contestant] = {
    c.id: c
    for c in [
        Contestant("naive", "naive (L×S matrix)", naive, True),
        Contestant("sdpa", "SDPA (auto)", sdpa, False),
        Contestant("sdpa-math", "SDPA math", forced(_B.MATH), True),
        Contestant("sdpa-flash", "SDPA flash", forced(_B.FLASH_ATTENTION), False),
        Contestant("sdpa-efficient", "SDPA mem-efficient", forced(_B.EFFICIENT_ATTENTION), False),
        Contestant("sdpa-cudnn", "SDPA cuDNN", forced(_B.CUDNN_ATTENTION), False),
        Contestant("flex", "FlexAttention (compiled)", flex, False),
        Contestant("flex-eager", "FlexAttention (eager)", flex_eager, True, "unfused"),
        Contestant("online", "online (ours, torch)", online, False),
        Contestant("triton", "Triton (ours)", triton, False),
    ]
}

# The profiler's op name of each SDPA kernel -> the short name records carry as ``backend``.
SDPA_OPS: dict[str, str] = {
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash (CPU)",
    "aten::_scaled_dot_product_flash_attention": "flash",
    "aten::_scaled_dot_product_efficient_attention": "efficient",
    "aten::_scaled_dot_product_cudnn_attention": "cudnn",
    "aten::_scaled_dot_product_attention_math": "math",
}


def fixed_backend(impl: str, interpreted: bool) -> str | None:
    """The kernel a non-SDPA contestant always runs (SDPA's is read from the profiler)."""
    if impl == "triton":
        return "triton (interpreter)" if interpreted else "triton"
    if impl.startswith("flex"):
        return "flex" if impl == "flex" else "flex (eager)"
    return None if impl.startswith("sdpa") else impl
