"""What a 2026 config adds to a dense GQA block, read from Hugging Face ``config.json``:
mixture of experts, multi-head latent attention (MLA), per-layer attention types (sliding
windows, chunked attention), linear-attention and state-space layers (`attn_core.cost.mixers`:
Gated DeltaNet, KDA, Mamba, Mamba-2), gated attention, and text configs nested under ``text_config``.

Layer kinds are read from the keys that name them, whatever the model_type: ``layer_types`` /
``layers_block_type`` and ``hybrid_override_pattern`` (lists), ``full_attention_interval``,
``attn_layer_period``/``attn_layer_offset`` (rules), Kimi Linear's ``linear_attn_config``; the mixer
from its ``linear_*``, ``mamba_*``, ``ssm_*``, ``conv_*`` sizes. A key a known model_type leaves out
takes its transformers class default (`CLASS_DEFAULTS`). Each reader returns None when the config
does not use the feature and raises ConfigError, naming the key, when it does but cannot be
sized — an unknown expert layout, a layer kind no mixer is given for, a window without a size.
Nothing is guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from attn_core.cost.keys import ConfigError, first, read_bool, read_int, read_int_list, whole
from attn_core.cost.layers import ALL, Every, LayerKinds, LayerSet
from attn_core.cost.mixers import STATE_KINDS, GatedDeltaNet, KimiDeltaAttention, Mamba, Mamba2, StateMixer

LayerKind = Literal["full", "sliding", "chunked", "gdn", "kda", "mamba", "mamba2", "mlp", "moe"]
ATTENTION_KINDS: tuple[LayerKind, ...] = ("full", "sliding", "chunked")
# Nemotron-H's pattern makes a layer one block: a mixer ('M', '*') or a feed-forward part alone.
FFN_ONLY_KINDS: tuple[LayerKind, ...] = ("mlp", "moe")
LAYER_KINDS: tuple[LayerKind, ...] = (*ATTENTION_KINDS, *STATE_KINDS, *FFN_ONLY_KINDS)
HF_LAYER_TYPES: dict[str, LayerKind] = {
    "full_attention": "full",
    "attention": "full",  # Jamba's layers_block_type
    "sliding_attention": "sliding",
    "chunked_attention": "chunked",
    "mlp": "mlp",  # Nemotron-H's layers_block_type
    "moe": "moe",
}
LINEAR_LAYER_TYPES = ("linear_attention", "mamba")  # whichever state mixer the config's keys give
PATTERN_CHARS = {"*": "full", "-": "mlp", "E": "moe"}  # and 'M': the state mixer (Mamba-2)
# Whole models of state-space or other mixers whose layout is not read here: refused by name.
UNSIZED_MODEL_TYPES = frozenset(
    {"mamba", "mamba2", "falcon_mamba", "zamba", "zamba2", "falcon_h1", "granitemoehybrid", "lfm2",
     "bamba", "rwkv", "recurrent_gemma", "xlstm", "nemotron_h_omni"}
)  # fmt: skip
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
TOP_K_KEYS = ("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "moe_top_k")
# Expert layouts we know, by model_type: where the expert width lives and which layers are dense.
MOE_MODEL_TYPES = frozenset(
    {"mixtral", "gpt_oss", "qwen2_moe", "qwen3_moe", "deepseek_v2", "deepseek_v3", "kimi_k2", "llama4_text",
     "qwen3_next", "kimi_linear", "jamba", "nemotron_h"}
)  # fmt: skip
DEEPSEEK_TYPES = frozenset({"deepseek_v2", "deepseek_v3", "kimi_k2"})
QWEN_MOE_TYPES = frozenset({"qwen2_moe", "qwen3_moe", "qwen3_next"})
# Expert width = intermediate_size (Llama 4's dense layers use intermediate_size_mlp instead).
OWN_WIDTH_TYPES = frozenset({"mixtral", "gpt_oss", "llama4_text", "jamba"})
# What transformers' configuration classes default to, for the keys read here (a config.json that
# leaves a key out gets its class's default). Only for these model types; any other must say.
CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "qwen3_next": {
        "tie_word_embeddings": False,
        "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
        "linear_num_key_heads": 16, "linear_num_value_heads": 32, "full_attention_interval": 4,
        "head_dim": 256, "decoder_sparse_step": 1, "num_experts": 512, "num_experts_per_tok": 10,
        "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
    },
    "kimi_linear": {
        "tie_word_embeddings": False,
        "linear_num_heads": 32, "linear_head_dim": 128, "linear_conv_kernel_dim": 4,
        "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
        "num_experts": 256, "num_experts_per_token": 8, "moe_intermediate_size": 1024,
        "num_shared_experts": 1, "first_k_dense_replace": 1,
    },
    "jamba": {
        "tie_word_embeddings": False,
        "attn_layer_period": 8, "attn_layer_offset": 4, "expert_layer_period": 2, "expert_layer_offset": 1,
        "num_experts": 16, "num_experts_per_tok": 2, "mamba_d_state": 16, "mamba_d_conv": 4,
        "mamba_expand": 2, "mamba_dt_rank": "auto", "mamba_conv_bias": True, "mamba_proj_bias": False,
    },
    "nemotron_h": {
        "tie_word_embeddings": False,
        "ssm_state_size": 128, "mamba_num_heads": 128, "mamba_head_dim": 64, "n_groups": 8,
        "conv_kernel": 4, "chunk_size": 128, "use_conv_bias": True, "use_bias": False, "head_dim": 128,
        "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1,
        "moe_intermediate_size": 7688, "moe_shared_expert_intermediate_size": 7688,
    },
}  # fmt: skip
GDN_KEYS = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim")
KDA_KEYS = ("linear_num_heads", "linear_head_dim", "linear_attn_config")
MAMBA2_KEYS = ("mamba_num_heads", "mamba_head_dim", "n_groups", "mamba_n_groups", "ssm_state_size")
MAMBA_KEYS = ("mamba_d_state", "mamba_expand", "mamba_d_conv", "mamba_dt_rank")


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


def with_class_defaults(config: Mapping[str, Any], model_type: str) -> Mapping[str, Any]:
    """The config with its transformers class's defaults filled in where a key is absent or null,
    and Kimi Linear's ``linear_attn_config`` sizes lifted to the top level (as its class does)."""
    defaults = CLASS_DEFAULTS.get(model_type)
    nested = config.get("linear_attn_config")
    if defaults is None and nested is None:
        return config
    out = dict(config)
    if isinstance(nested, Mapping):
        lifted = {"num_heads": "linear_num_heads", "head_dim": "linear_head_dim",
                  "short_conv_kernel_size": "linear_conv_kernel_dim"}  # fmt: skip
        out |= {top: nested[k] for k, top in lifted.items() if nested.get(k) is not None}
    elif nested is not None:
        raise ConfigError(f"config key 'linear_attn_config' must be an object, got {nested!r}"[:200])
    for key, value in (defaults or {}).items():
        if out.get(key) is None:
            out[key] = value
    return out


def refuse_unsized_models(config: Mapping[str, Any], model_type: str) -> None:
    """ConfigError for model types whose layer layout is not read here, naming the model_type."""
    if model_type in UNSIZED_MODEL_TYPES:
        raise ConfigError(
            f"config key 'model_type' = {model_type!r}: its layer layout is not one this calculator "
            "reads (it sizes Gated DeltaNet, KDA, Mamba and Mamba-2 layers beside attention layers)"
        )


def _present(config: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if config.get(k) is not None), None)


def read_state_mixer(config: Mapping[str, Any], model_type: str, d_model: int) -> StateMixer | None:
    """The linear-attention or state-space mixer the config's keys size, or None when they size none.

    Gated DeltaNet from ``linear_num_key_heads``/``linear_num_value_heads``/``linear_key_head_dim``/
    ``linear_value_head_dim`` (+ ``linear_conv_kernel_dim``); KDA from ``linear_num_heads``/
    ``linear_head_dim``; Mamba-2 from ``mamba_num_heads``/``mamba_head_dim``/``n_groups``/
    ``ssm_state_size`` (+ ``conv_kernel``, ``chunk_size``); Mamba from ``mamba_d_state``/
    ``mamba_expand``/``mamba_d_conv``/``mamba_dt_rank``."""
    if _present(config, GDN_KEYS):
        return GatedDeltaNet(
            d_model,
            n_key_heads=read_int(config, ("linear_num_key_heads",), "linear-attention key heads"),
            n_value_heads=read_int(config, ("linear_num_value_heads",), "linear-attention value heads"),
            key_head_dim=read_int(config, ("linear_key_head_dim",), "linear-attention key width"),
            value_head_dim=read_int(config, ("linear_value_head_dim",), "linear-attention value width"),
            conv_kernel=read_int(config, ("linear_conv_kernel_dim",), "linear-attention conv kernel"),
        )
    if _present(config, KDA_KEYS):
        return KimiDeltaAttention(
            d_model,
            n_heads=read_int(config, ("linear_num_heads",), "linear-attention heads"),
            head_dim=read_int(config, ("linear_head_dim",), "linear-attention head width"),
            conv_kernel=read_int(config, ("linear_conv_kernel_dim",), "linear-attention conv kernel"),
        )
    if _present(config, MAMBA2_KEYS):
        return Mamba2(
            d_model,
            n_heads=read_int(config, ("mamba_num_heads",), "Mamba-2 heads"),
            head_dim=read_int(config, ("mamba_head_dim",), "Mamba-2 head width"),
            d_state=read_int(config, ("ssm_state_size", "mamba_d_state"), "Mamba-2 state size"),
            n_groups=read_int(config, ("n_groups", "mamba_n_groups"), "Mamba-2 groups"),
            conv_kernel=read_int(config, ("conv_kernel", "mamba_d_conv"), "Mamba-2 conv kernel"),
            chunk=read_int(config, ("chunk_size", "mamba_chunk_size"), "Mamba-2 chunk", default=128),
            conv_bias=read_bool(config, ("use_conv_bias", "mamba_conv_bias"), True),
            proj_bias=read_bool(config, ("use_bias", "mamba_proj_bias"), False),
        )
    if _present(config, MAMBA_KEYS):
        expand = read_int(config, ("mamba_expand",), "Mamba expansion")
        rank = config.get("mamba_dt_rank")
        dt_rank = -(-d_model // 16) if rank == "auto" else whole("mamba_dt_rank", rank)
        return Mamba(
            d_model,
            d_inner=expand * d_model,
            d_state=read_int(config, ("mamba_d_state",), "Mamba state size"),
            dt_rank=dt_rank,
            conv_kernel=read_int(config, ("mamba_d_conv",), "Mamba conv kernel"),
            conv_bias=read_bool(config, ("mamba_conv_bias",), True),
            proj_bias=read_bool(config, ("mamba_proj_bias",), False),
        )
    named = next((k for k in config if isinstance(k, str) and k.startswith(("mamba_", "ssm_"))), None)
    if named is not None:
        raise ConfigError(
            f"config key {named!r} names a state-space layer, but no Mamba (mamba_d_state, mamba_expand) "
            "or Mamba-2 (mamba_num_heads, mamba_head_dim, n_groups, ssm_state_size) sizes are given"
        )
    return None


def _name_of(value: Any) -> str:
    return repr(value)[:60] if isinstance(value, str) else f"a {type(value).__name__}"


def _state_kind(mixer: StateMixer | None, key: str, what: str) -> str:
    if mixer is None:
        raise ConfigError(
            f"config key {key!r} lists {what} layers but no linear_*, mamba_* or ssm_* key sizes them"
        )
    return mixer.kind


def _listed_kinds(types: Any, key: str, n_layers: int, mixer: StateMixer | None) -> LayerKinds:
    """A per-layer list: attention types, linear_attention/mamba (the state mixer), mlp and moe."""
    if not isinstance(types, list) or len(types) != n_layers:
        raise ConfigError(f"config key {key!r} must list one type for each of the {n_layers:,} layers")
    kinds = []
    for t in types:
        if isinstance(t, str) and t in HF_LAYER_TYPES:
            kinds.append(HF_LAYER_TYPES[t])
        elif isinstance(t, str) and t in LINEAR_LAYER_TYPES:
            kinds.append(_state_kind(mixer, key, repr(t)))
        else:
            raise ConfigError(
                f"config key {key!r} lists {_name_of(t)}: only full, sliding and chunked attention, "
                "linear_attention (Gated DeltaNet, KDA, Mamba, Mamba-2), mlp and moe can be sized"
            )
    return LayerKinds(n_layers, listed=tuple(kinds))


def hybrid_pattern(config: Mapping[str, Any]) -> str | None:
    """Nemotron-H's ``hybrid_override_pattern``: one character per layer (M * - E), or None."""
    pattern = config.get("hybrid_override_pattern")
    if pattern is None:
        return None
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(
            f"config key 'hybrid_override_pattern' must be a string like 'M-M*-', got {_name_of(pattern)}"
        )
    bad = next((c for c in pattern if c not in "M*-E"), None)
    if bad is not None:
        raise ConfigError(
            f"config key 'hybrid_override_pattern' has {bad!r}: only M (Mamba-2), * (attention), "
            "- (MLP) and E (MoE) can be sized"
        )
    return pattern


def _pattern_kinds(pattern: str, mixer: StateMixer | None) -> LayerKinds:
    state = _state_kind(mixer, "hybrid_override_pattern", "'M'") if "M" in pattern else "mamba2"
    table = PATTERN_CHARS | {"M": state}
    return LayerKinds(len(pattern), listed=tuple(table[c] for c in pattern))


def _kimi_kinds(config: Mapping[str, Any], n_layers: int, state: str) -> LayerKinds | None:
    """Kimi Linear's ``linear_attn_config``: full_attn_layers and kda_layers, numbered from 1."""
    nested = config.get("linear_attn_config")
    if not isinstance(nested, Mapping) or nested.get("full_attn_layers") is None:
        return None
    full = read_int_list(nested, "full_attn_layers", minimum=1)
    linear = read_int_list(nested, "kda_layers", minimum=1)
    if (
        any(i > n_layers for i in full + linear)
        or len(set(full) | set(linear)) != n_layers
        or set(full) & set(linear)
    ):
        raise ConfigError(
            f"config key 'linear_attn_config' must put each of the {n_layers:,} layers (numbered from 1) "
            "in exactly one of full_attn_layers and kda_layers"
        )
    return LayerKinds(n_layers, state, "full", LayerSet.listed(i - 1 for i in full))


def layer_kinds(
    config: Mapping[str, Any], model_type: str, n_layers: int, mixer: StateMixer | None = None
) -> LayerKinds | None:
    """Each layer's kind, or None when every layer is the same (full, or Mistral's window on every
    layer). Lists: ``layer_types``/``layers_block_type`` (gpt-oss, Gemma 3, Llama 4, Qwen3-Next,
    Nemotron-H), ``hybrid_override_pattern`` (Nemotron-H), Kimi Linear's ``linear_attn_config``,
    Llama 4's ``no_rope_layers``. Rules: ``sliding_window_pattern`` (Gemma 3: every p-th layer
    global), Gemma 2's alternation, ``full_attention_interval`` (Qwen3-Next: layer i full iff
    (i + 1) mod n = 0), ``attn_layer_period``/``attn_layer_offset`` (Jamba: full iff i mod p = o).
    Patterns stay rules (see `attn_core.cost.layers`): a config cannot buy work by declaring more
    layers. ``mixer`` (`read_state_mixer`) is the kind linear_attention, mamba and 'M' layers get."""
    pattern = hybrid_pattern(config)
    if pattern is not None:
        return _pattern_kinds(pattern, mixer)
    key = next((k for k in ("layer_types", "layers_block_type") if config.get(k) is not None), None)
    if key is not None:
        return _listed_kinds(config[key], key, n_layers, mixer)
    if mixer is not None:
        state = mixer.kind
        kimi = _kimi_kinds(config, n_layers, state)
        if kimi is not None:
            return kimi
        if config.get("full_attention_interval") is not None:
            n = whole("full_attention_interval", config["full_attention_interval"])
            return LayerKinds(n_layers, state, "full", LayerSet(Every(n, n - 1)))
        if config.get("attn_layer_period") is not None:
            p = whole("attn_layer_period", config["attn_layer_period"])
            o = read_int(config, ("attn_layer_offset",), "attention layer offset", default=0, minimum=0)
            if o >= p:
                raise ConfigError(
                    f"config key 'attn_layer_offset' = {o} must be below attn_layer_period = {p}"
                )
            return LayerKinds(n_layers, state, "full", LayerSet(Every(p, o)))
        if model_type == "kimi_linear":  # the class default: full iff i > 0 and i mod 4 = 0
            return LayerKinds(n_layers, state, "full", LayerSet(Every(4, 0, start=1)))
        raise ConfigError(
            f"config sizes {mixer.kind} layers but no key says which layers they are "
            "(layer_types, hybrid_override_pattern, full_attention_interval or attn_layer_period)"
        )
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


def read_moe(config: Mapping[str, Any], model_type: str, kinds: LayerKinds | None = None) -> MoE | None:
    """The expert layout, or None for a dense model (no expert count, or one expert)."""
    key, value = first(config, EXPERT_KEYS)
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
