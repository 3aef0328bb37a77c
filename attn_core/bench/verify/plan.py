"""What is built: the request (T, B, M, dtype, device, memory cap) and the plan that cuts the model
to the first layers (and, when one layer is over the cap, fewer routed experts) that fit."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from attn_core.bench.records import DTYPES
from attn_core.cost.dtypes import DTYPE_BYTES
from attn_core.cost.layers import LayerKinds, LayerSet
from attn_core.cost.params import expert_params, model_params
from attn_core.cost.serving import kv_cache_bytes
from attn_core.cost.shapes import ModelShape

DEFAULT_SEQ_LEN = 256
DEFAULT_DECODE_STEPS = 8
DEFAULT_MEMORY_GIB = 2.0  # weights + KV cache of what is built (the dev machine: 23 GiB, shared)
MAX_LAYERS = 64  # a config may declare millions of layers; we never build more than this


class VerifyError(ValueError):
    """What cannot be built or run as asked: one line for the CLI (exit 2) and the page."""


# -- The request and what is built -------------------------------------------------------------
@dataclass(frozen=True)
class VerifyRequest:
    """A run: B sequences of T prompt tokens, then M decode steps, on ``device`` in ``dtype``.
    ``layers`` None builds as many as fit ``memory_bytes`` (weights + KV cache)."""

    seq_len: int = DEFAULT_SEQ_LEN
    batch: int = 1
    decode_steps: int = DEFAULT_DECODE_STEPS
    layers: int | None = None
    memory_bytes: int = int(DEFAULT_MEMORY_GIB * 2**30)
    dtype: str = "fp32"
    device: str = "auto"
    threads: int | None = 1  # CPU: torch threads for the check (1: timed on its own CPU time); None: as set


def select_device(requested: str = "auto") -> str:
    """'cuda' when asked for (VerifyError if absent) or when 'auto' finds one; else 'cpu'."""
    if requested not in ("auto", "cpu", "cuda"):
        raise VerifyError(f"--device must be auto, cpu or cuda, got {requested!r}")
    if requested == "cuda" and not torch.cuda.is_available():
        raise VerifyError("--device cuda: no CUDA device on this machine")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


@dataclass(frozen=True)
class Plan:
    """What is built: ``shape`` is the model cut to ``layers_built`` layers and ``experts_built``
    routed experts (same k, same expert width), the input the cost model counts."""

    shape: ModelShape
    layers_built: int
    experts_built: int | None  # None: a dense model
    model_layers: int
    model_experts: int | None
    weight_bytes: int  # every built weight, all experts
    cache_bytes: int  # the KV cache for T + M tokens
    notes: tuple[str, ...] = ()


def refuse_unbuilt(shape: ModelShape) -> None:
    """VerifyError naming what this module does not build (rather than time something else)."""
    if shape.is_hybrid or shape.state_mixer is not None:
        mixer = type(shape.state_mixer).__name__ if shape.state_mixer is not None else "one-block-per-layer"
        raise VerifyError(
            f"linear-attention / state-space layers ({mixer}) are not built by verify yet; "
            "`python -m attn_core cost` sizes them"
        )
    if shape.mla is not None:
        raise VerifyError("multi-head latent attention (config key 'kv_lora_rank') is not built by verify")
    if shape.attention_sinks:
        raise VerifyError("attention sinks (gpt-oss) are not built by verify: SDPA has no sink logit")
    if shape.learned_positions:
        raise VerifyError("learned position tables (GPT-2 style) are not built by verify; rotary models are")
    if shape.head_dim % 2:
        raise VerifyError(f"rotary embedding needs an even head width, got {shape.head_dim}")


def cut_shape(shape: ModelShape, n_layers: int, n_experts: int | None) -> ModelShape:
    """The first ``n_layers`` layers of ``shape`` (their kinds and MoE placement kept), with
    ``n_experts`` routed experts per MoE layer."""
    kinds = shape.layer_kinds
    listed = tuple(kinds[i] for i in range(n_layers))
    moe = shape.moe
    if moe is not None:
        moe_layers = LayerSet.listed(i for i in range(n_layers) if shape.is_moe_layer(i))
        moe = dataclasses.replace(moe, n_experts=n_experts or moe.n_experts, moe_layers=moe_layers)
    return dataclasses.replace(
        shape, n_layers=n_layers, layer_types=LayerKinds(n_layers, listed=listed), moe=moe,
        nextn_layers_left_out=0,
    )  # fmt: skip


def layer_params(shape: ModelShape) -> int:
    """Every weight of the layers (all routed experts), without embeddings, head and final norm."""
    p = model_params(shape)
    final_norm = p.norms // (shape.norms_per_layer * shape.n_layers + 1)
    return p.attention + p.mlp + p.experts + p.norms - final_norm


def active_layer_params(shape: ModelShape) -> int:
    """The weights one token runs through in the layers: top-k routed experts per MoE layer."""
    p = model_params(shape)
    return layer_params(shape) - p.experts + p.experts_active


def plan_build(shape: ModelShape, request: VerifyRequest) -> Plan:
    """As many of the first layers as fit the cap (at most ``request.layers``); when one layer does
    not fit and it has routed experts, as many experts as fit (never fewer than k)."""
    refuse_unbuilt(shape)
    if request.dtype not in DTYPES:
        raise VerifyError(f"dtype must be one of {', '.join(DTYPES)}, got {request.dtype!r}")
    b = DTYPE_BYTES[request.dtype]
    tokens = request.seq_len + request.decode_steps
    cap = f"{request.memory_bytes / 2**30:.2f} GiB cap"

    def need(s: ModelShape) -> tuple[int, int]:
        return layer_params(s) * b, int(kv_cache_bytes(s, tokens, request.batch, b))

    wanted = min(request.layers or shape.n_layers, shape.n_layers, MAX_LAYERS)
    notes = []
    if request.layers and request.layers > min(shape.n_layers, MAX_LAYERS):
        notes.append(
            f"asked for {request.layers:,} layers; the model has {shape.n_layers:,}, at most {MAX_LAYERS} are built"
        )
    experts = shape.moe.n_experts if shape.moe is not None else None
    for n in range(wanted, 0, -1):
        cut = cut_shape(shape, n, experts)
        if sum(need(cut)) <= request.memory_bytes:
            break
    else:
        cut = cut_shape(shape, 1, experts)
        if cut.moe is None or cut.n_moe_layers == 0:
            raise VerifyError(
                f"one layer with its KV cache needs {sum(need(cut)) / 2**30:.2f} GiB, over the "
                f"{cap}: raise the memory cap or shorten T"
            )
        per_expert = expert_params(cut, cut.moe.expert_d_ff, cut.moe.expert_bias) * b
        rest = sum(need(cut)) - cut.moe.n_experts * per_expert
        experts = min(cut.moe.n_experts, (request.memory_bytes - rest) // per_expert)
        if experts < cut.moe.top_k:
            raise VerifyError(
                f"the {cap} holds {max(experts, 0)} routed experts of "
                f"{per_expert / 2**20:,.0f} MiB, fewer than the k = {cut.moe.top_k} each token runs: raise the cap"
            )
        cut = cut_shape(shape, 1, experts)
        notes.append(
            f"one layer does not fit the cap: built with {experts} of its {shape.moe.n_experts} routed experts "
            f"(same k = {shape.moe.top_k}, same expert shape)"
        )
    if cut.n_layers < wanted:
        notes.append(f"{cut.n_layers} of {wanted} layers fit the {cap}")
    weights, cache = need(cut)
    return Plan(
        shape=cut, layers_built=cut.n_layers, experts_built=cut.moe.n_experts if cut.moe else None,
        model_layers=shape.n_layers, model_experts=shape.moe.n_experts if shape.moe else None,
        weight_bytes=weights, cache_bytes=cache, notes=tuple(notes),
    )  # fmt: skip
