"""What a config's model_type implies before any size is read: the text config inside a multimodal
wrapper, the transformers class defaults for keys a config.json leaves out (`attn_core.cost.families`), the
model types refused by name (their build's mixers are not sized here: `attn_core.cost.type_facts`),
and two reported features (quantization_config, attention sinks)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from attn_core.cost.config_keys import ConfigError, first, read_bool
from attn_core.cost.families import family
from attn_core.cost.type_facts import TypeFacts, recorded_types

_CLASS_SUFFIX = re.compile(
    r"(ForCausalLM|ForConditionalGeneration|LMHeadModel|PreTrainedModel|Model|Config)$"
)


def _type_of_class(class_name: str) -> str | None:
    """The transformers model_type whose classes carry this name (``DeepseekV3ForCausalLM`` →
    ``deepseek_v3``): the name without its class suffix, matched to a recorded type letter for
    letter (case and underscores aside); None unless exactly one matches."""
    stem = _CLASS_SUFFIX.sub("", class_name.rsplit(".", 1)[-1]).lower()
    if not stem:
        return None
    found = [t for t in recorded_types() if t.replace("_", "") == stem]
    return found[0] if len(found) == 1 else None


def declared_type(config: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """A remote-code config (its model_type not one transformers ships, as recorded) that declares
    a transformers architecture, in ``architectures`` or its ``auto_map`` classes, is read as that
    type: (the config with that model_type, a sentence saying so). Kimi K2 ships model_type
    ``kimi_k2`` with ``DeepseekV3ForCausalLM``. Any other config: (itself, None)."""
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type in recorded_types():
        return config, None
    auto_map = config.get("auto_map")
    names = [*(config.get("architectures") or [])]
    names += [v for v in (auto_map.values() if isinstance(auto_map, Mapping) else ()) if isinstance(v, str)]
    types = {(t, n) for n in names if isinstance(n, str) for t in [_type_of_class(n)] if t}
    if len({t for t, _ in types}) != 1:
        return config, None
    (new, cls), *_ = sorted(types)
    note = (f"model_type {model_type!r} is remote code; its config declares {cls.rsplit('.', 1)[-1]}, "
            f"so it is sized as transformers' {new!r}")  # fmt: skip
    return dict(config) | {"model_type": new}, note


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
    defaults = family(model_type).class_defaults or None
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


def refuse_unsized_models(model_type: str, facts: TypeFacts | None, mixer: object | None) -> None:
    """ConfigError for a model_type whose build has linear-attention or state-space mixers
    (`attn_core.cost.type_facts`) that the config's keys do not size as one the formulas read."""
    if facts is not None and facts.state_mixers and mixer is None:
        raise ConfigError(
            f"config key 'model_type' = {model_type!r}: its layer layout ({', '.join(facts.state_mixers)}) is "
            "not one this calculator reads (it sizes Gated DeltaNet, KDA, Mamba and Mamba-2 layers beside "
            "attention layers)"
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
    """A family with sinks (gpt-oss) learns one sink logit per query head per layer (extra softmax mass, no value)."""
    return family(model_type).attention_sinks or read_bool(config, ("attention_sinks",), False)
