"""Layer kinds and the linear-attention / state-space mixer, read from a Hugging Face config.

Layer kinds are read from the keys that name them, whatever the model_type: ``layer_types`` /
``layers_block_type`` and ``hybrid_override_pattern`` (lists), ``full_attention_interval``,
``attn_layer_period``/``attn_layer_offset`` (rules), Kimi Linear's ``linear_attn_config``; the mixer
(`attn_core.cost.mixers`: Gated DeltaNet, KDA, Mamba, Mamba-2) from its ``linear_*``, ``mamba_*``,
``ssm_*``, ``conv_*`` sizes. Each reader returns None when the config does not use the feature and
raises ConfigError, naming the key, when it does but cannot be sized — a layer kind no mixer is
given for, a window without a size. Nothing is guessed; patterns are counted by rule
(`attn_core.cost.layers`), never per layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from attn_core.cost.config_keys import ConfigError, read_bool, read_int, read_int_list, whole
from attn_core.cost.families import family
from attn_core.cost.layers import Every, LayerKinds, LayerSet
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
GDN_KEYS = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim")
KDA_KEYS = ("linear_num_heads", "linear_head_dim", "linear_attn_config")
MAMBA2_KEYS = ("mamba_num_heads", "mamba_head_dim", "n_groups", "mamba_n_groups", "ssm_state_size")
MAMBA_KEYS = ("mamba_d_state", "mamba_expand", "mamba_d_conv", "mamba_dt_rank")


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
        rule = family(model_type).layer_rule  # the class's default pattern (Kimi Linear)
        if rule is not None and rule.base == "state":
            return LayerKinds(n_layers, state, rule.other, LayerSet(rule.every))
        raise ConfigError(
            f"config sizes {mixer.kind} layers but no key says which layers they are "
            "(layer_types, hybrid_override_pattern, full_attention_interval or attn_layer_period)"
        )
    if config.get("sliding_window_pattern") is not None:  # layer i global iff (i + 1) % p == 0
        p = whole("sliding_window_pattern", config["sliding_window_pattern"])
        return LayerKinds(n_layers, "sliding", "full", LayerSet(Every(p, p - 1)))
    rule = family(model_type).layer_rule  # the class's default pattern (Gemma 2's alternation)
    if rule is not None and rule.base != "state":
        return LayerKinds(n_layers, rule.base, rule.other, LayerSet(rule.every))
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


def read_cross_layers(config: Mapping[str, Any], n_layers: int) -> tuple[int, ...]:
    """The layers the config's ``cross_attention_layers`` lists (Llama 3.2 Vision: every fifth):
    they attend to the image's keys and values, so they keep no cache that grows with T."""
    listed = config.get("cross_attention_layers")
    if listed is None:
        return ()
    if not isinstance(listed, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n_layers for i in listed
    ):
        raise ConfigError(f"'cross_attention_layers' must list layer indices from 0 to {n_layers - 1:,}")
    return tuple(sorted(set(listed)))
