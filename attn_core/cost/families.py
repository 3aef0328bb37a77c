"""One home per model family: what a config's model_type means that its keys do not say, as one
`Family` record per family — its transformers class defaults, its expert layout (which keys give an
expert's width, which rule picks the MoE layers, how shared experts are counted), the layer rule its
class applies when the config lists none, the extra width keys of its dense layers, a norm its keys
misname, its window rule, its sinks and per-layer variants.

Everything a build shows is read from the build instead (`attn_core.cost.type_facts`: MLP kind,
biases, QK-norm, output gate, norms per layer, experts or not, an expert's matrices); what is here
is the config class's code — defaults and key names — which one build's module tree does not show.
The readers (`model_types`, `experts`, `layer_config`, `config_reader`) ask `family(model_type)`;
none branches on a model_type's name. A type not listed is `PLAIN`: every key read as it is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from attn_core.cost.layers import Every

# Which layers hold experts (`attn_core.cost.experts`): "first_k_dense" (DeepSeek: i ≥
# first_k_dense_replace and i mod moe_layer_freq = 0), "sparse_step" (Qwen-MoE: (i + 1) mod
# decoder_sparse_step = 0, less mlp_only_layers), "moe_layers" (Llama 4: listed, else every
# interleave_moe_layer_step-th), "mlp_layer_types" (Kimi Linear: listed sparse, else from
# first_k_dense_replace = 1), "keys" (Jamba's expert_layer_period/offset where given, else all).
MoeLayerRule = Literal["first_k_dense", "sparse_step", "moe_layers", "mlp_layer_types", "keys"]
# Shared experts: "none"; "count" (n_shared_experts / num_shared_experts, each as wide as a routed
# one); "one" (one, as wide as a routed one); "width" (one, as wide as ``shared_width_key`` says,
# none where that is 0 or n_shared_experts is 0).
SharedRule = Literal["none", "count", "one", "width"]


@dataclass(frozen=True)
class ExpertLayout:
    """Where a family's config keeps its experts' sizes."""

    width_key: str = "moe_intermediate_size"  # one routed expert's width
    layers: MoeLayerRule = "keys"
    shared: SharedRule = "none"
    shared_width_key: str = ""  # for shared = "width"
    shared_gate: bool = False  # a d → 1 gate on the shared expert (Qwen2-MoE, Qwen3-Next)
    router_bias: bool = False  # gpt-oss (DeepSeek-V3's noaux_tc is read from topk_method)
    expert_bias: bool = False  # gpt-oss: biases in every expert


@dataclass(frozen=True)
class LayerRule:
    """The class's layer pattern where a config names none: layer i is ``other`` iff ``every``
    picks it, else ``base`` ("state": the mixer the config's keys size)."""

    base: str
    other: str
    every: Every


@dataclass(frozen=True)
class Family:
    """What one family's model_types imply beyond their keys (defaults: nothing)."""

    class_defaults: Mapping[str, Any] = field(default_factory=dict)
    experts: ExpertLayout | None = None  # None: an expert count in its config is refused
    layer_rule: LayerRule | None = None
    dense_width_keys: tuple[str, ...] = ()  # read before the common feed-forward keys
    rms_norm: bool = False  # RMS norm whatever its epsilon key is called (Nemotron-H)
    attention_sinks: bool = False  # one learned sink logit per head per layer (gpt-oss)
    per_layer_variants: bool = False  # Gemma 4's per-layer heads, KV sharing, PLE (layer_variants)
    bidirectional_window: bool = False  # a window both ways: ⌊w/2⌋ + 1 each side (Gemma 4)


PLAIN = Family()
_DEEPSEEK = Family(experts=ExpertLayout(layers="first_k_dense", shared="count"))
_QWEN_MOE = ExpertLayout(
    layers="sparse_step", shared="width", shared_width_key="shared_expert_intermediate_size", shared_gate=True
)

FAMILIES: dict[str, Family] = {
    "mixtral": Family(experts=ExpertLayout(width_key="intermediate_size")),
    "gpt_oss": Family(
        experts=ExpertLayout(width_key="intermediate_size", router_bias=True, expert_bias=True),
        attention_sinks=True,
    ),
    "deepseek_v2": _DEEPSEEK,
    "glm4_moe": _DEEPSEEK,  # Glm4MoeConfig: DeepSeek-V3's keys (first_k_dense_replace, n_shared_experts)
    "deepseek_v3": _DEEPSEEK,
    "kimi_k2": _DEEPSEEK,
    "qwen2_moe": Family(experts=_QWEN_MOE),
    "qwen3_moe": Family(experts=ExpertLayout(layers="sparse_step")),
    "qwen3_next": Family(
        class_defaults={
            "linear_conv_kernel_dim": 4,
            "linear_key_head_dim": 128,
            "linear_value_head_dim": 128,
            "linear_num_key_heads": 16,
            "linear_num_value_heads": 32,
            "full_attention_interval": 4,
            "head_dim": 256,
            "decoder_sparse_step": 1,
            "num_experts": 512,
            "num_experts_per_tok": 10,
            "moe_intermediate_size": 512,
            "shared_expert_intermediate_size": 512,
        },
        experts=_QWEN_MOE,
    ),
    "llama4_text": Family(
        experts=ExpertLayout(width_key="intermediate_size", layers="moe_layers", shared="one"),
        dense_width_keys=("intermediate_size_mlp",),
    ),
    "kimi_linear": Family(
        class_defaults={
            "linear_num_heads": 32,
            "linear_head_dim": 128,
            "linear_conv_kernel_dim": 4,
            "kv_lora_rank": 512,
            "qk_rope_head_dim": 64,
            "qk_nope_head_dim": 128,
            "v_head_dim": 128,
            "num_experts": 256,
            "num_experts_per_token": 8,
            "moe_intermediate_size": 1024,
            "num_shared_experts": 1,
            "first_k_dense_replace": 1,
        },
        experts=ExpertLayout(layers="mlp_layer_types", shared="count"),
        layer_rule=LayerRule("state", "full", Every(4, 0, start=1)),  # full iff i > 0, i mod 4 = 0
    ),
    "jamba": Family(
        class_defaults={
            "attn_layer_period": 8,
            "attn_layer_offset": 4,
            "expert_layer_period": 2,
            "expert_layer_offset": 1,
            "num_experts": 16,
            "num_experts_per_tok": 2,
            "mamba_d_state": 16,
            "mamba_d_conv": 4,
            "mamba_expand": 2,
            "mamba_dt_rank": "auto",
            "mamba_conv_bias": True,
            "mamba_proj_bias": False,
        },
        experts=ExpertLayout(width_key="intermediate_size"),
    ),
    "nemotron_h": Family(
        class_defaults={
            "ssm_state_size": 128,
            "mamba_num_heads": 128,
            "mamba_head_dim": 64,
            "n_groups": 8,
            "conv_kernel": 4,
            "chunk_size": 128,
            "use_conv_bias": True,
            "use_bias": False,
            "head_dim": 128,
            "n_routed_experts": 8,
            "num_experts_per_tok": 2,
            "n_shared_experts": 1,
            "moe_intermediate_size": 7688,
            "moe_shared_expert_intermediate_size": 7688,
        },
        experts=ExpertLayout(shared="width", shared_width_key="moe_shared_expert_intermediate_size"),
        rms_norm=True,  # its config names layer_norm_epsilon, its norms are RMS
    ),
    "gemma2": Family(layer_rule=LayerRule("sliding", "full", Every(2, 1))),  # sliding even, global odd
    "gemma4_text": Family(
        class_defaults={  # Gemma4TextConfig; its per-layer keys' defaults: attn_core.cost.layer_variants
            "vocab_size": 262_144,
            "hidden_size": 2304,
            "intermediate_size": 9216,
            "num_hidden_layers": 30,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "sliding_window": 512,
            "max_position_embeddings": 131_072,
        },
        per_layer_variants=True,
        bidirectional_window=True,
    ),
}


def family(model_type: str) -> Family:
    """What ``model_type`` implies beyond its keys; `PLAIN` for a type not listed."""
    return FAMILIES.get(model_type, PLAIN)
