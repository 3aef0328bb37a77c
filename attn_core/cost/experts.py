"""Mixture of experts read from a Hugging Face config: the expert layout (count, top-k, widths,
shared experts) and which layers hold experts, as a rule plus listed layers (never a per-layer loop).
An expert count (a fact of the config) in a model_type whose family record has no expert layout
is refused, naming the key; where transformers builds it, the build answers instead."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attn_core.cost.config_keys import ConfigError, first, read_int, read_int_list, whole
from attn_core.cost.families import ExpertLayout, family
from attn_core.cost.layers import ALL, Every, LayerKinds, LayerSet
from attn_core.cost.type_facts import recorded_facts

EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
TOP_K_KEYS = ("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "moe_top_k")
# Expert layouts by family (which key gives an expert's width, which rule picks the MoE layers, how
# shared experts count): attn_core/cost/families.py. Whether a type has experts, and an expert's
# matrices (gated: 3; plain: 2), are read from its build (attn_core/cost/type_facts.py).


@dataclass(frozen=True)
class MoE:
    """A mixture-of-experts feed-forward layer: every expert is a gated (SwiGLU) MLP, or a plain
    one of two matrices where ``expert_matrices`` = 2.

    Memory holds all ``n_experts`` routed experts; each token runs ``top_k`` of them plus the
    ``n_shared`` shared ones, after a router of d × n_experts weights."""

    n_experts: int  # E routed experts per MoE layer
    top_k: int  # k routed experts per token
    expert_d_ff: int  # width of one routed expert
    n_shared: int = 0  # shared experts, run for every token (DeepSeek, Qwen2-MoE)
    shared_d_ff: int = 0  # width of one shared expert
    moe_layers: LayerSet = ALL  # the layers with experts; the others have a dense MLP of width d_ff
    router_bias: bool = False  # gpt-oss: a router bias; DeepSeek-V3: its score-correction bias
    expert_bias: bool = False  # gpt-oss: biases in every expert
    shared_gate: bool = False  # Qwen2-MoE, Qwen3-Next: a d → 1 gate on the shared expert
    expert_matrices: int = 3  # 3: gated (SwiGLU); 2: up and down only (Nemotron-H's ReLU²)

    def __post_init__(self) -> None:
        if not 1 <= self.top_k <= self.n_experts:
            raise ConfigError(f"top-k = {self.top_k} experts per token, but only {self.n_experts} experts")


def _first_k_dense(config: Mapping[str, Any]) -> LayerSet:
    """DeepSeek: MoE iff i ≥ first_k_dense_replace and i mod moe_layer_freq = 0."""
    k = read_int(config, ("first_k_dense_replace",), "dense layers", default=0, minimum=0)
    freq = read_int(config, ("moe_layer_freq",), "MoE frequency", default=1)
    return LayerSet(Every(freq, 0, start=k))


def _sparse_step(config: Mapping[str, Any]) -> LayerSet:
    """Qwen-MoE: MoE iff not in mlp_only_layers and (i + 1) mod decoder_sparse_step = 0."""
    step = read_int(config, ("decoder_sparse_step",), "sparse step", default=1)
    return LayerSet(Every(step, step - 1), removed=frozenset(read_int_list(config, "mlp_only_layers")))


def _listed_moe_layers(config: Mapping[str, Any]) -> LayerSet:
    """Llama 4: MoE iff listed in moe_layers, else every interleave_moe_layer_step-th layer."""
    if config.get("moe_layers") is not None:
        return LayerSet.listed(read_int_list(config, "moe_layers"))
    step = read_int(config, ("interleave_moe_layer_step",), "MoE interleave step", default=1)
    return LayerSet(Every(step, step - 1))


def _mlp_layer_types(config: Mapping[str, Any]) -> LayerSet:
    """Kimi Linear: mlp_layer_types lists dense/sparse; else MoE from first_k_dense_replace (1)."""
    types = config.get("mlp_layer_types")
    if types is not None:
        if not isinstance(types, list) or any(t not in ("dense", "sparse") for t in types):
            raise ConfigError("config key 'mlp_layer_types' must list 'dense' or 'sparse' for each layer")
        return LayerSet.listed(i for i, t in enumerate(types) if t == "sparse")
    k = read_int(config, ("first_k_dense_replace",), "dense layers", default=1, minimum=0)
    return LayerSet(Every(1, 0, start=k))


def _expert_period(config: Mapping[str, Any]) -> LayerSet:
    """Jamba: MoE iff i mod expert_layer_period = expert_layer_offset; every layer without them."""
    if config.get("expert_layer_period") is None:
        return ALL
    p = whole("expert_layer_period", config["expert_layer_period"])
    o = read_int(config, ("expert_layer_offset",), "expert layer offset", default=0, minimum=0)
    if o >= p:
        raise ConfigError(f"config key 'expert_layer_offset' = {o} must be below expert_layer_period = {p}")
    return LayerSet(Every(p, o))


LAYER_RULES = {
    "first_k_dense": _first_k_dense,
    "sparse_step": _sparse_step,
    "moe_layers": _listed_moe_layers,
    "mlp_layer_types": _mlp_layer_types,
    "keys": _expert_period,
}


def _moe_layers(config: Mapping[str, Any], layout: ExpertLayout, kinds: LayerKinds | None) -> LayerSet:
    """Which layers hold experts, as a rule plus the layers a config lists (never a per-layer loop)."""
    if kinds is not None and kinds.listed is not None and "moe" in kinds.listed:  # Nemotron-H's 'E'
        return LayerSet.listed(i for i, k in enumerate(kinds.listed) if k == "moe")
    return LAYER_RULES[layout.layers](config)


def _shared(config: Mapping[str, Any], layout: ExpertLayout, expert_d_ff: int) -> tuple[int, int]:
    """(shared experts, one's width) by the family's rule (`attn_core.cost.families.SharedRule`)."""
    if layout.shared == "count":
        return read_int(
            config, ("n_shared_experts", "num_shared_experts"), "shared experts", 0, 0
        ), expert_d_ff
    if layout.shared == "one":
        return 1, expert_d_ff
    if layout.shared == "width":
        width = read_int(config, (layout.shared_width_key,), "shared expert width", 0, 0)
        return (1 if width and read_int(config, ("n_shared_experts",), "shared", 1, 0) else 0), width
    return 0, 0


def read_moe(
    config: Mapping[str, Any], model_type: str, kinds: LayerKinds | None = None, built_moe: bool = False
) -> MoE | None:
    """The expert layout, or None for a dense model (no expert count, or one expert). ``built_moe``:
    the model's build (this config's, or its type's at class defaults, `type_facts`) holds experts,
    so a config that names no expert count is refused rather than sized as a dense model."""
    key, value = first(config, EXPERT_KEYS)
    if key is None and built_moe:
        raise ConfigError(
            f"model_type {model_type!r} builds experts, but this config names no expert count (one of "
            f"{', '.join(EXPERT_KEYS)}): give it, or let transformers complete the config"
        )
    if key is None or whole(key, value, minimum=0) <= 1:
        return None
    layout = family(model_type).experts
    if layout is None:
        raise ConfigError(
            f"config key {key!r} = {value!r} routed experts: the formulas have no expert layout for "
            f"model_type {model_type or '(none)'!r} (which key gives an expert's width, which layers hold "
            "experts, how shared experts count: attn_core/cost/families.py)"
        )
    if kinds is not None and kinds.listed is not None and "mlp" in kinds.listed and "moe" not in kinds.listed:
        return None  # Nemotron-H's pattern has no 'E': the class's default experts are never built
    if config.get("moe_latent_size") is not None:
        raise ConfigError("config key 'moe_latent_size': experts in a latent space are not sized here")
    expert_d_ff = read_int(config, (layout.width_key,), "expert width")
    n_shared, shared_d_ff = _shared(config, layout, expert_d_ff)
    facts = recorded_facts(model_type)
    return MoE(
        n_experts=whole(key, value),
        top_k=read_int(config, TOP_K_KEYS, "experts per token"),
        expert_d_ff=expert_d_ff,
        n_shared=n_shared,
        shared_d_ff=shared_d_ff,
        moe_layers=_moe_layers(config, layout, kinds),
        router_bias=layout.router_bias or config.get("topk_method") == "noaux_tc",
        expert_bias=layout.expert_bias,
        shared_gate=layout.shared_gate and n_shared > 0,
        expert_matrices=2 if facts is not None and facts.mlp == "plain" else 3,  # as built
    )
