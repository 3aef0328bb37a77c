"""What is built: the request (T, B, M, dtype, device, memory cap) and the plan that cuts the model
to the first layers (and, when one layer is over the cap, fewer routed experts) that fit. A hybrid
is cut to first layers that hold an attention layer or, when none fit, to the first layer of its
linear-attention mixer and the first attention layer (the cost model sizes no model without
attention)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from attn_core.anatomy.build import BuildRefused
from attn_core.cost.config_reader import ModelShape
from attn_core.cost.dtypes import DTYPE_BYTES
from attn_core.cost.layers import LayerKinds, LayerSet
from attn_core.cost.mixers import STATE_KIND_NAMES
from attn_core.cost.params import expert_params, model_params
from attn_core.cost.serving import kv_cache_bytes, state_bytes
from attn_core.kernels.records import DTYPES
from attn_core.verify.peak import (
    MAX_EXPERTS,
    MAX_TOKEN_WIDTH,
    MIN_SCAN_CHUNK,
    Peak,
    activation_bytes,
    hf_bytes,
    module_bytes,
    probe_bytes,
    widest,
)

DEFAULT_SEQ_LEN = 256
DEFAULT_DECODE_STEPS = 8
DEFAULT_MEMORY_GIB = 2.0  # the planned peak of a check (`peak`; the dev machine: 23 GiB, shared)
MAX_LAYERS = 64  # a config may declare millions of layers; we never build more than this
# The linear-attention / state-space kinds `layers.MIXERS` builds (a test checks they agree).
BUILT_STATE_KINDS = ("gdn", "mamba2")
# transformers' torch fallbacks keep a linear layer's recurrent state in fp32 whatever the model
# dtype (its conv state at the model dtype): the cache bytes below and `deltanet.DeltaState` alike.
RECURRENT_DTYPE = "fp32"


class VerifyError(ValueError):
    """What cannot be built or run as asked: one line for the CLI (exit 2) and the page."""


# -- The request and what is built -------------------------------------------------------------
@dataclass(frozen=True)
class VerifyRequest:
    """A run: B sequences of T prompt tokens, then M decode steps, on ``device`` in ``dtype``.
    ``layers`` None builds as many as fit ``memory_bytes`` (the planned peak, `peak.Peak`)."""

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
    """What is built: ``shape`` is the model cut to ``layers_built`` layers (the model's layers
    ``layer_indices``, numbered from 0) and ``experts_built`` routed experts (same k, same expert
    width), the input the cost model counts."""

    shape: ModelShape
    layers_built: int
    experts_built: int | None  # None: a dense model
    model_layers: int
    model_experts: int | None
    weight_bytes: int  # every built weight, all experts
    cache_bytes: int  # the KV cache for T + M tokens and the linear layers' state
    notes: tuple[str, ...] = ()
    layer_indices: tuple[int, ...] = ()  # which of the model's layers were built
    peak: Peak | None = None  # the planned peak (weights, cache, activations, modules, probe)
    built_by: str = "lab"  # "transformers": its own modules (`hf`); "lab": `layers`, from ``shape``
    hf_config: Any = None  # transformers' config of what is built (built_by "transformers")
    params_built: int = 0  # every parameter built (transformers: embeddings and head included)

    @property
    def peak_bytes(self) -> int:
        """The planned peak memory of the check, bytes: what the cap bounds."""
        return self.peak.total if self.peak is not None else self.weight_bytes + self.cache_bytes

    @property
    def kinds_built(self) -> str:
        """The built layers by kind, e.g. '1 Gated DeltaNet, 1 full attention'."""
        return ", ".join(f"{n} {kind_name(k)}" for k, n in self.shape.kind_counts.items())


FFN_BLOCK_NAMES = {"mlp": "MLP", "moe": "MoE"}  # Nemotron-H's feed-forward-only blocks


def kind_name(kind: str) -> str:
    """'Gated DeltaNet', 'full attention', 'MLP', … : a layer kind as the page and the CLI say it."""
    return STATE_KIND_NAMES.get(kind) or FFN_BLOCK_NAMES.get(kind) or f"{kind} attention"


def refuse_unbuilt(shape: ModelShape) -> None:
    """VerifyError naming what this module does not build (rather than time something else)."""
    unbuilt = [k for k in shape.kind_counts if k in STATE_KIND_NAMES and k not in BUILT_STATE_KINDS]
    if unbuilt:
        mixer = STATE_KIND_NAMES[unbuilt[0]]
        built = " and ".join(STATE_KIND_NAMES[k] for k in BUILT_STATE_KINDS)
        raise VerifyError(
            f"linear-attention / state-space layers ({mixer}) are not built by verify yet (it builds "
            f"{built}); `python -m attn_core cost` sizes them"
        )
    if shape.mla is not None:
        raise VerifyError("multi-head latent attention (config key 'kv_lora_rank') is not built by verify")
    if shape.attention_sinks:
        raise VerifyError("attention sinks (gpt-oss) are not built by verify: SDPA has no sink logit")
    if shape.learned_positions:
        raise VerifyError("learned position tables (GPT-2 style) are not built by verify; rotary models are")
    mixer = shape.state_mixer
    if mixer is not None and mixer.kind == "mamba2" and mixer.chunk < MIN_SCAN_CHUNK:
        raise VerifyError(
            f"Mamba-2 chunk_size {mixer.chunk} is below the {MIN_SCAN_CHUNK} verify builds: the scan's "
            "chunk states grow as T / chunk_size"
        )
    rotary = shape.rotary_dim or shape.head_dim
    if rotary % 2:
        raise VerifyError(f"rotary embedding needs an even width, got {rotary}")


def cut_shape(shape: ModelShape, layers: int | Sequence[int], n_experts: int | None) -> ModelShape:
    """The model's layers ``layers`` (the first n, or the listed indices, in order), their kinds
    and MoE placement kept, with ``n_experts`` routed experts per MoE layer."""
    picked = tuple(range(layers)) if isinstance(layers, int) else tuple(layers)
    listed = tuple(shape.layer_kinds[i] for i in picked)
    moe = shape.moe
    if moe is not None:
        moe_layers = LayerSet.listed(j for j, i in enumerate(picked) if shape.is_moe_layer(i))
        moe = dataclasses.replace(moe, n_experts=n_experts or moe.n_experts, moe_layers=moe_layers)
    n = len(picked)
    # KV sharing (Gemma 4): the picked layers among the model's last kv_shared_layers still reuse
    # an earlier layer's K and V; they come last in ``picked``, as in the model
    shared_from = shape.n_layers - shape.kv_shared_layers
    kv_shared = sum(1 for i in picked if i >= shared_from) if shape.kv_shared_layers else 0
    return dataclasses.replace(
        shape,
        n_layers=n,
        layer_types=LayerKinds(n, listed=listed),
        moe=moe,
        nextn_layers_left_out=0,
        kv_shared_layers=kv_shared,
    )


def layer_params(shape: ModelShape) -> int:
    """Every weight of the layers (all routed experts), without embeddings, head and final norm."""
    p = model_params(shape)
    final_norm = p.norms // (shape.norms_per_layer * shape.n_layers + 1)
    return p.attention + p.state_mixers + p.mlp + p.experts + p.norms - final_norm


def active_layer_params(shape: ModelShape) -> int:
    """The weights one token runs through in the layers: top-k routed experts per MoE layer."""
    p = model_params(shape)
    return layer_params(shape) - p.experts + p.experts_active


def cache_bytes(shape: ModelShape, tokens: int, batch: int, b: int) -> int:
    """The KV cache of ``tokens`` tokens and the linear layers' state (conv at b bytes, recurrent
    at RECURRENT_DTYPE's), for B sequences: what the built layers hold."""
    state = state_bytes(shape, batch, b, DTYPE_BYTES[RECURRENT_DTYPE])
    return int(kv_cache_bytes(shape, tokens, batch, b)) + state


def _layer_sets(shape: ModelShape, wanted: int) -> list[tuple[int, ...]]:
    """The layer sets to try, largest first: the first n layers (n = wanted … 1) that hold an
    attention layer and, in a hybrid, a layer of each other kind (linear, Nemotron-H's MLP blocks),
    then the first layer of each of those kinds."""
    kinds = [shape.layer_kinds[i] for i in range(min(shape.n_layers, MAX_LAYERS))]
    attention = next((i for i, k in enumerate(kinds) if shape.is_attention(k)), None)
    if attention is None:
        raise VerifyError(f"no attention layer among the first {len(kinds)} layers: verify builds none")
    others = {k: kinds.index(k) for k in kinds if not shape.is_attention(k)}  # each kind's first layer
    minimal = tuple(sorted({attention, *others.values()}))
    sets = [tuple(range(n)) for n in range(wanted, minimal[-1], -1)]
    return sets if sets and sets[-1] == minimal else [*sets, minimal]


def _largest_fitting(
    sets: list[tuple[int, ...]], fits: Callable[[tuple[int, ...]], bool]
) -> tuple[int, ...] | None:
    """The first (largest) of ``sets`` that ``fits``, None when none does. The sets are the first n
    layers for n falling, then the first of each kind, so the peak falls along the list: a
    bisection asks ``fits`` (a meta build each, ~0.3 s for a 7B layer) about log2(n) times, not n."""
    if not fits(sets[-1]):
        return None
    lo, hi = 0, len(sets) - 1  # sets[hi] fits; the answer is the first index that does
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(sets[mid]) else (mid + 1, hi)
    return sets[lo]


def _firsts_note(shape: ModelShape, picked: tuple[int, ...], wanted: int) -> str:
    """Why the built layers are not the first ones, and which they are."""
    named = [f"{i} ({kind_name(shape.layer_kinds[i])})" for i in picked]
    which = ", ".join(named[:-1]) + f" and {named[-1]}"
    n = picked[-1] + 1
    fewer = "the first layer holds" if wanted == 1 else f"the first {wanted} hold"
    why = f"the first {n} or more do not fit the cap" if wanted >= n else f"{fewer} no attention layer"
    return f"built layers {which} of {shape.n_layers} (numbered from 0), the first of each kind: {why}"


def planned_peak(shape: ModelShape, request: VerifyRequest, device: str, hf_config: Any = None) -> Peak:
    """The peak of a check of ``shape`` (already cut to what is built) as ``request`` asks; with
    ``hf_config`` (transformers' config of the same layers), of transformers' build of it: its
    weights and buffers from the meta build, and its own temporaries (`peak.hf_bytes`) on top."""
    b = DTYPE_BYTES[request.dtype]
    B, T, M = request.batch, request.seq_len, request.decode_steps
    weights, activations = layer_params(shape) * b, activation_bytes(shape, B, T, M, b)
    build = 0
    if hf_config is not None:
        from attn_core.verify.hf import built_numel, eager, largest_numel

        weights = built_numel(hf_config) * b
        build = largest_numel(hf_config) * max(b, 4)  # a second copy of it (at fp32, if it is made so)
        # + one layer's cache twice over: the dynamic cache concatenates a step onto a copy
        activations += (
            hf_bytes(shape, hf_config, eager(hf_config), B, T, b)
            + 2 * cache_bytes(shape, T + M, B, b) // shape.n_layers
        )
    return Peak(
        weights=weights,
        cache=cache_bytes(shape, T + M, B, b),
        activations=activations,
        modules=module_bytes(shape),
        probe=probe_bytes(shape, B, T, b, device),
        build=build,
    )


@dataclass(frozen=True)
class _Planner:
    """One plan's inputs: the model's shape, the request, the device and transformers' config of
    the model (None: the lab's layers are built)."""

    shape: ModelShape
    request: VerifyRequest
    device: str
    hf: Any

    def hf_of(self, picked: tuple[int, ...], n_experts: int | None):
        """transformers' config of the layers ``picked`` with ``n_experts`` routed experts."""
        if self.hf is None:
            return None
        from attn_core.verify.hf import cut_config

        moe = self.shape.moe
        try:
            return cut_config(self.hf, picked, (moe.n_experts, n_experts) if moe is not None else None)
        except BuildRefused as exc:
            raise VerifyError(str(exc)) from None

    def need(self, picked: tuple[int, ...], n_experts: int | None) -> int:
        """The planned peak of those layers and experts, bytes."""
        cut = cut_shape(self.shape, picked, n_experts)
        return planned_peak(cut, self.request, self.device, self.hf_of(picked, n_experts)).total


def _most_experts(p: _Planner, picked: tuple[int, ...], experts: int, cap: str) -> int:
    """The most routed experts (from k up to ``experts``) with which the layers ``picked`` fit the
    cap, by bisection (the peak grows with the experts built); VerifyError where none do."""
    cut = cut_shape(p.shape, picked, experts)
    limit = p.request.memory_bytes
    if cut.moe is None or cut.n_moe_layers == 0:
        raise VerifyError(
            f"{'one layer' if len(picked) == 1 else f'{len(picked)} layers'} need "
            f"{p.need(picked, experts) / 2**30:.2f} GiB at the peak (weights, cache, activations, probe), "
            f"over the {cap}: raise the memory cap or shorten T"
        )
    k = cut.moe.top_k
    if p.need(picked, k) > limit:
        one = expert_params(cut, cut.moe.expert_d_ff, cut.moe.expert_bias) * DTYPE_BYTES[p.request.dtype]
        layers = "" if cut.n_moe_layers == 1 else f" in each of {cut.n_moe_layers} layers"
        raise VerifyError(
            f"the {cap} does not hold the k = {k} routed experts of {one / 2**20:,.0f} MiB{layers} "
            "each token runs, with the rest of the peak: raise the cap"
        )
    lo, hi = k, experts
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if p.need(picked, mid) <= limit else (lo, mid - 1)
    return lo


def _start(shape: ModelShape, request: VerifyRequest, config: Mapping[str, Any] | None):
    """(the planner, notes so far): the request checked, transformers' config if it builds it."""
    from attn_core.verify.hf import hf_source

    refuse_unbuilt(shape)
    if request.dtype not in DTYPES:
        raise VerifyError(f"dtype must be one of {', '.join(DTYPES)}, got {request.dtype!r}")
    device = select_device(request.device)
    hf, hf_reason = hf_source(config, shape.n_layers) if config is not None else (None, None)
    notes = [hf_reason] if hf_reason else []
    if request.layers and request.layers > min(shape.n_layers, MAX_LAYERS):
        notes.append(
            f"asked for {request.layers:,} layers; the model has {shape.n_layers:,}, at most {MAX_LAYERS} are built"
        )
    return _Planner(shape, request, device, hf), notes


def _check_width(shape: ModelShape, request: VerifyRequest, least: tuple[int, ...], experts: int | None):
    """VerifyError where B·T tokens × the widest activation of the least build is over the cap."""
    tokens = request.batch * request.seq_len
    width = widest(cut_shape(shape, least, experts))
    if tokens * width > MAX_TOKEN_WIDTH:
        raise VerifyError(
            f"B × T = {tokens:,} tokens × {width:,} wide activations is over the {MAX_TOKEN_WIDTH:,} elements "
            "one check holds: shorten T or B"
        )


def _plan(p: _Planner, picked: tuple[int, ...], experts: int | None, notes: list[str]) -> Plan:
    """The plan of the layers ``picked`` with ``experts`` routed experts."""
    shape, cut = p.shape, cut_shape(p.shape, picked, experts)
    hf_cut = p.hf_of(picked, experts)
    peak = planned_peak(cut, p.request, p.device, hf_cut)
    if hf_cut is None:
        built_by, built = "lab", layer_params(cut)
    else:
        from attn_core.verify.hf import built_params

        built_by, built = "transformers", built_params(hf_cut)
    return Plan(
        shape=cut,
        layers_built=cut.n_layers,
        experts_built=cut.moe.n_experts if cut.moe else None,
        model_layers=shape.n_layers,
        model_experts=shape.moe.n_experts if shape.moe else None,
        weight_bytes=peak.weights,
        cache_bytes=peak.cache,
        notes=tuple(notes),
        layer_indices=picked,
        peak=peak,
        built_by=built_by,
        hf_config=hf_cut,
        params_built=built,
    )


def plan_build(shape: ModelShape, request: VerifyRequest, config: Mapping[str, Any] | None = None) -> Plan:
    """As many of the first layers as fit the cap on the planned peak (at most ``request.layers``;
    a hybrid's first linear and first attention layer when no such run fits); at most MAX_EXPERTS
    routed experts, and when the smallest set does not fit, as many as fit (never fewer than k).
    With the model's ``config`` (a config.json dict) that transformers builds, what is planned is
    transformers' build of those layers (`hf`), its weights read from its meta build; otherwise
    the lab's (`layers`), and a note says why."""
    from attn_core.verify.hf import keeps_kinds

    p, notes = _start(shape, request, config)
    cap = f"{request.memory_bytes / 2**30:.2f} GiB cap"
    wanted = min(request.layers or shape.n_layers, shape.n_layers, MAX_LAYERS)
    sets = _layer_sets(shape, wanted)
    experts = min(shape.moe.n_experts, MAX_EXPERTS) if shape.moe is not None else None
    if shape.moe is not None and experts < shape.moe.n_experts:
        notes.append(
            f"built with {experts} of its {shape.moe.n_experts:,} routed experts, the most one check builds "
            f"(same k = {shape.moe.top_k}, same expert shape)"
        )
    _check_width(shape, request, sets[-1], experts)
    if p.hf is not None:  # the layer sets transformers builds as they are in the model
        sets = [s for s in sets if keeps_kinds(p.hf, s)] or sets[-1:]
    picked = _largest_fitting(sets, lambda s: p.need(s, experts) <= request.memory_bytes)
    if picked is None:
        picked = sets[-1]
        experts = _most_experts(p, picked, experts, cap)
        which = "one layer does not" if len(picked) == 1 else f"{len(picked)} layers do not"
        notes.append(
            f"{which} fit the cap: built with {experts} of its {shape.moe.n_experts} routed experts "
            f"(same k = {shape.moe.top_k}, same expert shape)"
        )
    if picked != tuple(range(len(picked))):
        notes.insert(0, _firsts_note(shape, picked, wanted))
    elif len(picked) < wanted:
        notes.append(f"{len(picked)} of {wanted} layers fit the {cap}")
    return _plan(p, picked, experts, notes)
