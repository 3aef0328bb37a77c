"""Mixture of experts read from a Hugging Face config: the expert layout (count, top-k, widths,
shared experts) and which layers hold experts, as a rule plus listed layers (never a per-layer loop).
An expert count in a model_type whose layout is not known is refused by name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attn_core.cost.config_keys import ConfigError, first, read_int, read_int_list, whole
from attn_core.cost.layers import ALL, Every, LayerKinds, LayerSet

EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
TOP_K_KEYS = ("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "moe_top_k")
# Expert layouts we know, by model_type: where the expert width lives and which layers are dense.
# Kept by hand: whether a type has experts is recorded from its build (type_facts), but which config
# key names an expert's width and which rule picks the MoE layers is the config class's code, not
# something one build's module tree shows (a build at other sizes would be needed for each key).
MOE_MODEL_TYPES = frozenset(
    {"mixtral", "gpt_oss", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "kimi_k2", "llama4_text",
     "qwen3_next", "kimi_linear", "jamba", "nemotron_h"}
)  # fmt: skip
DEEPSEEK_TYPES = frozenset({"deepseek_v2", "deepseek_v3", "kimi_k2"})
QWEN_MOE_TYPES = frozenset({"qwen2_moe", "qwen3_moe", "qwen3_next"})
# Expert width = intermediate_size (Llama 4's dense layers use intermediate_size_mlp instead).
OWN_WIDTH_TYPES = frozenset({"mixtral", "gpt_oss", "llama4_text", "jamba"})


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


def _moe_layers(config: Mapping[str, Any], model_type: str, kinds: LayerKinds | None) -> LayerSet:
    """Which layers hold experts, as a rule plus the layers a config lists (never a per-layer loop)."""
    if kinds is not None and kinds.listed is not None and "moe" in kinds.listed:  # Nemotron-H's 'E'
        return LayerSet.listed(i for i, k in enumerate(kinds.listed) if k == "moe")
    if model_type in DEEPSEEK_TYPES:  # MoE iff i ≥ first_k_dense_replace and i % moe_layer_freq == 0
        k = read_int(config, ("first_k_dense_replace",), "dense layers", default=0, minimum=0)
        freq = read_int(config, ("moe_layer_freq",), "MoE frequency", default=1)
        return LayerSet(Every(freq, 0, start=k))
    if model_type in QWEN_MOE_TYPES:  # MoE iff not in mlp_only_layers and (i+1) % step == 0
        step = read_int(config, ("decoder_sparse_step",), "sparse step", default=1)
        return LayerSet(Every(step, step - 1), removed=frozenset(read_int_list(config, "mlp_only_layers")))
    if model_type == "llama4_text":  # MoE iff listed in moe_layers (else every interleave-th layer)
        if config.get("moe_layers") is not None:
            return LayerSet.listed(read_int_list(config, "moe_layers"))
        step = read_int(config, ("interleave_moe_layer_step",), "MoE interleave step", default=1)
        return LayerSet(Every(step, step - 1))
    if model_type == "kimi_linear":  # mlp_layer_types lists dense/sparse; else MoE from first_k_dense_replace
        types = config.get("mlp_layer_types")
        if types is not None:
            if not isinstance(types, list) or any(t not in ("dense", "sparse") for t in types):
                raise ConfigError("config key 'mlp_layer_types' must list 'dense' or 'sparse' for each layer")
            return LayerSet.listed(i for i, t in enumerate(types) if t == "sparse")
        k = read_int(config, ("first_k_dense_replace",), "dense layers", default=1, minimum=0)
        return LayerSet(Every(1, 0, start=k))
    if config.get("expert_layer_period") is not None:  # Jamba: MoE iff i mod period = offset
        p = whole("expert_layer_period", config["expert_layer_period"])
        o = read_int(config, ("expert_layer_offset",), "expert layer offset", default=0, minimum=0)
        if o >= p:
            raise ConfigError(
                f"config key 'expert_layer_offset' = {o} must be below expert_layer_period = {p}"
            )
        return LayerSet(Every(p, o))
    return ALL


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
    if model_type not in MOE_MODEL_TYPES:
        raise ConfigError(
            f"config key {key!r} = {value!r}: the expert layout of model_type {model_type or '(none)'!r} is "
            f"not known (known: {', '.join(sorted(MOE_MODEL_TYPES))})"
        )
    if kinds is not None and kinds.listed is not None and "mlp" in kinds.listed and "moe" not in kinds.listed:
        return None  # Nemotron-H's pattern has no 'E': the class's default experts are never built
    if config.get("moe_latent_size") is not None:
        raise ConfigError("config key 'moe_latent_size': experts in a latent space are not sized here")
    width_key = "intermediate_size" if model_type in OWN_WIDTH_TYPES else "moe_intermediate_size"
    expert_d_ff = read_int(config, (width_key,), "expert width")
    n_shared, shared_d_ff = 0, 0
    if model_type in DEEPSEEK_TYPES or model_type == "kimi_linear":
        n_shared = read_int(config, ("n_shared_experts", "num_shared_experts"), "shared experts", 0, 0)
        shared_d_ff = expert_d_ff
    elif model_type == "llama4_text":  # one shared expert as wide as a routed one
        n_shared, shared_d_ff = 1, expert_d_ff
    elif model_type in ("qwen2_moe", "qwen3_next"):
        shared_d_ff = read_int(config, ("shared_expert_intermediate_size",), "shared expert width", 0, 0)
        n_shared = 1 if shared_d_ff else 0
    elif model_type == "nemotron_h":  # one shared MLP (not gated), as wide as the config says
        shared_d_ff = read_int(config, ("moe_shared_expert_intermediate_size",), "shared expert width", 0, 0)
        n_shared = 1 if shared_d_ff and read_int(config, ("n_shared_experts",), "shared", 1, 0) else 0
    return MoE(
        n_experts=whole(key, value),
        top_k=read_int(config, TOP_K_KEYS, "experts per token"),
        expert_d_ff=expert_d_ff,
        n_shared=n_shared,
        shared_d_ff=shared_d_ff,
        moe_layers=_moe_layers(config, model_type, kinds),
        router_bias=model_type == "gpt_oss" or config.get("topk_method") == "noaux_tc",
        expert_bias=model_type == "gpt_oss",
        shared_gate=model_type in ("qwen2_moe", "qwen3_next") and n_shared > 0,
        expert_matrices=2 if model_type == "nemotron_h" else 3,
    )
