"""What a 2026 config adds to a dense GQA block, read from Hugging Face ``config.json``:
mixture of experts, multi-head latent attention (MLA), per-layer attention types (sliding
windows, chunked attention) and text configs nested under ``text_config``.

Each reader returns None when the config does not use the feature and raises ConfigError,
naming the key, when it does but cannot be sized — an unknown expert layout, linear-attention
or state-space layers, a window without a size. Nothing is guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from attn_core.cost.keys import ConfigError, first, read_bool, read_int, read_int_list, whole
from attn_core.cost.layers import ALL, Every, LayerKinds, LayerSet

LayerKind = Literal["full", "sliding", "chunked"]
LAYER_KINDS: tuple[LayerKind, ...] = ("full", "sliding", "chunked")
HF_LAYER_TYPES: dict[str, LayerKind] = {
    "full_attention": "full",
    "sliding_attention": "sliding",
    "chunked_attention": "chunked",
}
# Model types whose layers keep a fixed-size recurrent state instead of (or beside) a KV cache.
STATE_SPACE_MODEL_TYPES = frozenset(
    {"mamba", "mamba2", "falcon_mamba", "jamba", "zamba", "zamba2", "nemotron_h"}
)
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
TOP_K_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_top_k")
# Expert layouts we know, by model_type: where the expert width lives and which layers are dense.
MOE_MODEL_TYPES = frozenset(
    {"mixtral", "gpt_oss", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "kimi_k2", "llama4_text"}
)
DEEPSEEK_TYPES = frozenset({"deepseek_v2", "deepseek_v3", "kimi_k2"})
# Expert width = intermediate_size (Llama 4's dense layers use intermediate_size_mlp instead).
OWN_WIDTH_TYPES = frozenset({"mixtral", "gpt_oss", "llama4_text"})


@dataclass(frozen=True)
class MoE:
    """A mixture-of-experts feed-forward layer: every expert is a gated (SwiGLU) MLP.

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
    shared_gate: bool = False  # Qwen2-MoE: a d → 1 gate on the shared expert

    def __post_init__(self) -> None:
        if not 1 <= self.top_k <= self.n_experts:
            raise ConfigError(f"top-k = {self.top_k} experts per token, but only {self.n_experts} experts")


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): K and V come from one cached latent
    of kv_lora_rank numbers per token, plus a shared rotary key of qk_rope_head_dim numbers."""

    kv_lora_rank: int  # r_kv, the cached latent
    qk_rope_head_dim: int  # rotary part of each query/key head (its key part is shared and cached)
    qk_nope_head_dim: int  # non-rotary part of each query/key head
    v_head_dim: int
    q_lora_rank: int | None = None  # None: queries projected straight from d

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def cache_width(self) -> int:
        """Numbers cached per token per layer: r_kv + d_rope (576 for DeepSeek-V3)."""
        return self.kv_lora_rank + self.qk_rope_head_dim


def unwrap_text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's config: ``text_config`` when the top level holds no layer count
    (Gemma 3, Llama 4, multimodal wrappers); the top level's quantization_config is kept."""
    text = config.get("text_config")
    if not isinstance(text, Mapping) or first(config, ("num_hidden_layers", "n_layer", "num_layers"))[0]:
        return config
    carried = {k: config[k] for k in ("quantization_config", "tie_word_embeddings") if k in config}
    return carried | dict(text)


def refuse_state_layers(config: Mapping[str, Any], model_type: str) -> None:
    """ConfigError for linear-attention or state-space layers, naming the key that says so."""
    mamba_key = next((k for k in config if k.startswith(("mamba_", "ssm_"))), None)
    if model_type in STATE_SPACE_MODEL_TYPES or mamba_key:
        key = mamba_key or "model_type"
        raise ConfigError(
            f"config key {key!r}: state-space (Mamba) layers keep a fixed recurrent state this "
            "calculator does not size"
        )


def layer_kinds(config: Mapping[str, Any], model_type: str, n_layers: int) -> LayerKinds | None:
    """Each layer's attention pattern, or None when every layer is the same (full, or Mistral's
    window on every layer). Reads ``layer_types`` (gpt-oss, Gemma 3, Llama 4, Qwen3-Next),
    ``sliding_window_pattern`` (Gemma 3: every p-th layer global), Gemma 2's alternation and
    Llama 4's ``no_rope_layers`` (chunked where RoPE is used, global where not). Patterns stay
    rules (see `attn_core.cost.layers`): a config cannot buy work by declaring more layers."""
    types = config.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_layers:
            raise ConfigError(
                f"config key 'layer_types' must list one type for each of the {n_layers:,} layers"
            )
        bad = [t for t in types if not isinstance(t, str) or t not in HF_LAYER_TYPES]
        if bad:
            shown = repr(bad[0]) if isinstance(bad[0], str) else f"a {type(bad[0]).__name__}"
            raise ConfigError(
                f"config key 'layer_types' lists {shown[:60]}: only full, sliding and chunked "
                "attention can be sized (linear attention keeps a fixed state this calculator does not size)"
            )
        return LayerKinds(n_layers, listed=tuple(HF_LAYER_TYPES[t] for t in types))
    if config.get("sliding_window_pattern") is not None:  # layer i global iff (i + 1) % p == 0
        p = whole("sliding_window_pattern", config["sliding_window_pattern"])
        return LayerKinds(n_layers, "sliding", "full", LayerSet(Every(p, p - 1)))
    if model_type == "gemma2":  # sliding on even layers, global on odd ones
        return LayerKinds(n_layers, "sliding", "full", LayerSet(Every(2, 1)))
    if config.get("attention_chunk_size") is not None:
        no_rope = read_int_list(config, "no_rope_layers")
        if len(no_rope) == n_layers:
            return LayerKinds(n_layers, listed=tuple("chunked" if r else "full" for r in no_rope))
        if config.get("no_rope_layer_interval") is not None:
            every = whole("no_rope_layer_interval", config["no_rope_layer_interval"])
            return LayerKinds(n_layers, "chunked", "full", LayerSet(Every(every, every - 1)))
        raise ConfigError(
            "config key 'attention_chunk_size' is set but neither 'layer_types' nor 'no_rope_layers' "
            "says which layers are chunked"
        )
    return None


def read_mla(config: Mapping[str, Any]) -> MLA | None:
    """MLA's ranks and head widths when the config has ``kv_lora_rank``."""
    if config.get("kv_lora_rank") is None:
        return None
    q_rank = config.get("q_lora_rank")
    return MLA(
        kv_lora_rank=read_int(config, ("kv_lora_rank",), "latent rank"),
        qk_rope_head_dim=read_int(config, ("qk_rope_head_dim",), "rotary head width"),
        qk_nope_head_dim=read_int(config, ("qk_nope_head_dim",), "non-rotary head width"),
        v_head_dim=read_int(config, ("v_head_dim",), "value head width"),
        q_lora_rank=None if q_rank is None else whole("q_lora_rank", q_rank),
    )


def _moe_layers(config: Mapping[str, Any], model_type: str) -> LayerSet:
    """Which layers hold experts, as a rule plus the layers a config lists (never a per-layer loop)."""
    if model_type in DEEPSEEK_TYPES:  # MoE iff i ≥ first_k_dense_replace and i % moe_layer_freq == 0
        k = read_int(config, ("first_k_dense_replace",), "dense layers", default=0, minimum=0)
        freq = read_int(config, ("moe_layer_freq",), "MoE frequency", default=1)
        return LayerSet(Every(freq, 0, start=k))
    if model_type in ("qwen2_moe", "qwen3_moe"):  # MoE iff not in mlp_only_layers and (i+1) % step == 0
        step = read_int(config, ("decoder_sparse_step",), "sparse step", default=1)
        return LayerSet(Every(step, step - 1), removed=frozenset(read_int_list(config, "mlp_only_layers")))
    if model_type == "llama4_text":  # MoE iff listed in moe_layers (else every interleave-th layer)
        if config.get("moe_layers") is not None:
            return LayerSet.listed(read_int_list(config, "moe_layers"))
        step = read_int(config, ("interleave_moe_layer_step",), "MoE interleave step", default=1)
        return LayerSet(Every(step, step - 1))
    return ALL


def read_moe(config: Mapping[str, Any], model_type: str) -> MoE | None:
    """The expert layout, or None for a dense model (no expert count, or one expert)."""
    key, value = first(config, EXPERT_KEYS)
    if key is None or whole(key, value, minimum=0) <= 1:
        return None
    if model_type not in MOE_MODEL_TYPES:
        raise ConfigError(
            f"config key {key!r} = {value!r}: the expert layout of model_type {model_type or '(none)'!r} is "
            f"not known (known: {', '.join(sorted(MOE_MODEL_TYPES))})"
        )
    width_key = "intermediate_size" if model_type in OWN_WIDTH_TYPES else "moe_intermediate_size"
    expert_d_ff = read_int(config, (width_key,), "expert width")
    n_shared, shared_d_ff = 0, 0
    if model_type in DEEPSEEK_TYPES:
        n_shared = read_int(config, ("n_shared_experts",), "shared experts", default=0, minimum=0)
        shared_d_ff = expert_d_ff
    elif model_type == "llama4_text":  # one shared expert as wide as a routed one
        n_shared, shared_d_ff = 1, expert_d_ff
    elif model_type == "qwen2_moe":
        shared_d_ff = read_int(config, ("shared_expert_intermediate_size",), "shared expert width", 0, 0)
        n_shared = 1 if shared_d_ff else 0
    return MoE(
        n_experts=whole(key, value),
        top_k=read_int(config, TOP_K_KEYS, "experts per token"),
        expert_d_ff=expert_d_ff,
        n_shared=n_shared,
        shared_d_ff=shared_d_ff,
        moe_layers=_moe_layers(config, model_type),
        router_bias=model_type == "gpt_oss" or config.get("topk_method") == "noaux_tc",
        expert_bias=model_type == "gpt_oss",
        shared_gate=model_type == "qwen2_moe" and n_shared > 0,
    )


def read_quantization(config: Mapping[str, Any]) -> str | None:
    """The config's quantization_config in a phrase (reported, never applied to the sizes)."""
    q = config.get("quantization_config")
    if q is None:
        return None
    if not isinstance(q, Mapping):
        raise ConfigError(f"config key 'quantization_config' must be an object, got {q!r}")
    parts = [str(q.get("quant_method", "unnamed method"))]
    parts += [f"{k} {q[k]}" for k in ("fmt", "bits", "weight_block_size", "group_size") if k in q]
    return ", ".join(parts)


def read_sinks(config: Mapping[str, Any], model_type: str) -> bool:
    """gpt-oss learns one sink logit per query head per layer (extra softmax mass, no value)."""
    return model_type == "gpt_oss" or read_bool(config, ("attention_sinks",), False)
