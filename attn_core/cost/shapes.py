"""Reading a model's shape: a `ModelShape` (`attn_core.cost.model_shape`) from a preset or a
Hugging Face ``config.json`` dict (pasted, uploaded or parsed), with the model-type tables that
say what an architecture implies and the key aliases read.

Presets live in ``assets/models/<name>.json`` (Hugging Face config.json form);
``assets/models/README.md`` gives the source of every number.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attn_core.cost.config_keys import ConfigError as ConfigError
from attn_core.cost.config_keys import first, read_bool, read_int
from attn_core.cost.experts import read_moe
from attn_core.cost.layer_config import FFN_ONLY_KINDS, hybrid_pattern, layer_kinds, read_state_mixer
from attn_core.cost.layer_variants import GEMMA4_TYPES, gemma4_layer_kinds, read_gemma4
from attn_core.cost.mixers import STATE_KINDS
from attn_core.cost.mla import read_mla
from attn_core.cost.model_shape import MlpKind
from attn_core.cost.model_shape import ModelShape as ModelShape
from attn_core.cost.model_types import (
    read_quantization,
    read_sinks,
    refuse_unsized_models,
    unwrap_text_config,
    with_class_defaults,
)

MODELS_DIR = Path(__file__).resolve().parents[2] / "assets" / "models"

# The tables below are the formulas' explanation of what a model_type implies, not the last word:
# every config the page or the CLI opens is held against transformers' own build of it
# (attn_core/anatomy/check.py), which names any part they get wrong, and a model_type missing from
# the MLP tables takes its MLP kind from that build.
# Architectures whose feed-forward network is gated (SwiGLU/GeGLU: gate, up and down matrices).
GATED_MODEL_TYPES = frozenset(
    {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "gemma3_text", "phi3", "olmo",
     "olmo2", "granite", "llama4", "llama4_text", "mixtral", "gpt_oss", "qwen2_moe", "qwen3_moe",
     "deepseek_v2", "deepseek_v3", "kimi_k2", "qwen3_next", "kimi_linear", "jamba", "qwen3_5", "qwen3_5_text",
     "qwen3_5_moe", "qwen3_5_moe_text", "gemma4_text"}
)  # fmt: skip
# Architectures with a plain two-matrix MLP (up, activation, down).
PLAIN_MODEL_TYPES = frozenset(
    {"gpt2", "gpt_neox", "gptj", "opt", "falcon", "bloom", "phi", "gpt_bigcode", "starcoder2", "nemotron_h"}
)
# Architectures with learned absolute position embeddings (a max_context × d table of weights).
LEARNED_POSITION_TYPES = frozenset({"gpt2", "gpt_bigcode", "opt", "bert"})
# Architectures whose linear layers carry biases unless the config says otherwise.
BIASED_MODEL_TYPES = frozenset({"gpt2", "gpt_bigcode", "gpt_neox", "opt", "bloom"})
# Qwen2 / Qwen2.5 put biases on q, k and v only: not on o, not in the MLP (their configs do not say so).
QKV_BIAS_MODEL_TYPES = frozenset({"qwen2", "qwen2_moe"})
# QK-norm: a d_h-wide RMSNorm on every query and key head (2·d_h weights per layer).
QK_NORM_MODEL_TYPES = frozenset(
    {"qwen3", "qwen3_moe", "gemma3", "gemma3_text", "qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe",
     "qwen3_5_moe_text", "gemma4_text"}
)  # fmt: skip
# Gated attention: the query map is twice as wide and its second half gates the output (Qwen3-Next).
OUTPUT_GATE_MODEL_TYPES = frozenset(
    {"qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"}
)
# Gemma 2 and 3 norm before and after both attention and MLP: four norms per layer.
FOUR_NORM_MODEL_TYPES = frozenset({"gemma2", "gemma3", "gemma3_text", "gemma4_text"})
# Activations that, with no model_type at all, mean a gated MLP (LLaMA's SwiGLU convention). A
# model_type not in the tables above is never read this way (VaultGemma's and BitNet's GELU / ReLU²
# MLPs are gated): the formulas refuse it, and transformers' own build sizes it (attn_core/anatomy).
GATED_ACTIVATIONS = frozenset({"silu", "swish", "swiglu", "geglu"})

# Key aliases, first match wins (Hugging Face names first, then GPT-2's, then others').
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
WIDTH_KEYS = ("hidden_size", "n_embd", "d_model", "dim")
HEAD_KEYS = ("num_attention_heads", "n_head", "num_heads", "n_heads")
KV_HEAD_KEYS = ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "n_head_kv")
HEAD_DIM_KEYS = ("head_dim", "kv_channels")
FF_KEYS = ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size", "hidden_dim")
VOCAB_KEYS = ("vocab_size", "n_vocab", "padded_vocab_size")
CONTEXT_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "n_ctx",
    "max_seq_len",
    "seq_length",
    "model_max_length",
)
ACT_KEYS = ("hidden_act", "activation_function", "hidden_activation")

MAX_CONFIG_BYTES = 1 << 20  # a config.json is a few KiB; anything over 1 MiB is not one
MAX_NAME_CHARS = 80  # a model name is shown in headings, tables and the CLI: a line, not a page


def display_name(value: Any) -> str:
    """A config's name, safe to print and to send to a browser: lone surrogates and control
    characters replaced, at most MAX_NAME_CHARS characters."""
    text = str(value).encode("utf-8", "replace").decode("utf-8")
    text = "".join(c if c.isprintable() else "\ufffd" for c in text)
    return text if len(text) <= MAX_NAME_CHARS else text[: MAX_NAME_CHARS - 1] + "…"


def _mlp_kind(config: Mapping[str, Any], model_type: str) -> MlpKind:
    """Gated (3 matrices) or plain (2): the architecture decides; an unknown model_type is refused
    (never guessed from its activation); with no model_type at all, a SiLU activation means
    SwiGLU (the LLaMA convention) and anything else a plain MLP."""
    explicit = config.get("mlp_kind")  # Attention Lab extension, for architectures we don't know
    if explicit is not None:
        if explicit not in ("gated", "plain"):
            raise ConfigError(f"config key 'mlp_kind' must be 'gated' or 'plain', got {explicit!r}")
        return explicit
    if model_type in GATED_MODEL_TYPES:
        return "gated"
    if model_type in PLAIN_MODEL_TYPES:
        return "plain"
    if model_type:
        raise ConfigError(
            f"config key 'model_type' = {display_name(model_type)!r}: the formulas do not know whether its MLP is "
            "gated (3 matrices) or plain (2), and the activation's name does not say; add 'mlp_kind'"
        )
    _, act = first(config, ACT_KEYS)
    return "gated" if str(act).lower() in GATED_ACTIVATIONS else "plain"


ROTARY_FRACTION_KEYS = ("partial_rotary_factor", "rotary_pct")  # Qwen3-Next, Phi; GPT-NeoX


def _rotary_dim(config: Mapping[str, Any], head_dim: int) -> int | None:
    """⌊d_h × the config's rotary fraction⌋ (Hugging Face's rule), read at the top level or under
    ``rope_parameters``; None when absent (rotary over the whole head)."""
    nested = config.get("rope_parameters")
    key, value = first(config, ROTARY_FRACTION_KEYS)
    if key is None and isinstance(nested, Mapping):
        key, value = first(nested, ROTARY_FRACTION_KEYS)
    if key is None:
        return None
    ok = not isinstance(value, bool) and isinstance(value, int | float) and 0 < value <= 1
    if not ok or int(head_dim * value) < 1:
        raise ConfigError(f"config key {key!r} must be a fraction of the head width in (0, 1], got {value!r}")
    return None if value == 1 else int(head_dim * value)


def from_hf_config(config: Mapping[str, Any], name: str | None = None) -> ModelShape:
    """Build a ModelShape from a Hugging Face ``config.json`` dict.

    Accepts the common aliases (``num_hidden_layers``/``n_layer``, ``hidden_size``/``n_embd``,
    ``num_attention_heads``/``n_head``, ``intermediate_size``/``n_inner``, …) and a language
    model nested under ``text_config``. Defaults follow the Hugging Face classes: no
    ``num_key_value_heads`` → MHA; no ``head_dim`` → d / h; no ``intermediate_size`` → 4d; no
    ``tie_word_embeddings`` → tied. Experts, MLA, per-layer attention types and sinks come from
    `attn_core.cost.model_types`, `layer_config`, `experts` and `mla`. Raises ConfigError naming the missing or malformed key.
    """
    if not isinstance(config, Mapping):
        raise ConfigError(f"a config must be a JSON object, got {type(config).__name__}")
    config = unwrap_text_config(config)
    model_type = str(config.get("model_type") or "").lower()
    refuse_unsized_models(config, model_type)
    config = with_class_defaults(config, model_type)
    pattern = hybrid_pattern(config)  # Nemotron-H: the pattern's length is the layer count
    n_layers = len(pattern) if pattern else read_int(config, LAYER_KEYS, "layer count")
    d_model = read_int(config, WIDTH_KEYS, "model width")
    mixer = read_state_mixer(config, model_type, d_model)
    n_heads = read_int(config, HEAD_KEYS, "attention-head count")
    n_kv_heads = read_int(config, KV_HEAD_KEYS, "KV-head count", default=n_heads)
    if config.get("multi_query") is True:  # GPT-BigCode / Falcon spell MQA as a flag
        n_kv_heads = 1
    if first(config, HEAD_DIM_KEYS)[0] is None and d_model % n_heads and config.get("kv_lora_rank") is None:
        raise ConfigError(
            f"no 'head_dim' and the width {d_model} is not divisible by {n_heads} heads: add 'head_dim'"
        )
    mla = read_mla(config)
    if mla is not None:  # MLA: a query/key head is d_nope + d_rope wide, whatever d / h is
        head_dim = mla.qk_head_dim
    else:
        head_dim = read_int(config, HEAD_DIM_KEYS, "head width", default=d_model // n_heads)
    ff_keys = ("intermediate_size_mlp", *FF_KEYS) if model_type == "llama4_text" else FF_KEYS  # dense layers
    d_ff = read_int(config, ff_keys, "feed-forward width", default=4 * d_model)
    kinds = layer_kinds(config, model_type, n_layers, mixer)
    variants: dict[str, Any] = {}
    if model_type in GEMMA4_TYPES:  # per-layer heads, KV sharing, per-layer embeddings (layer_variants)
        kinds = gemma4_layer_kinds(config, n_layers, kinds)
        variants = read_gemma4(config, n_layers, kinds, head_dim)
    one_block = kinds is not None and any(k in FFN_ONLY_KINDS for k in kinds.counts())
    window = config.get("sliding_window")
    if config.get("use_sliding_window") is False:  # Qwen2 ships a window it does not use
        window = None
    if window is not None:
        window = read_int(config, ("sliding_window",), "sliding window")
        if model_type in GEMMA4_TYPES and config.get("use_bidirectional_attention") == "all":
            window = window // 2 + 1  # as Gemma4TextConfig sets it: an exclusive bound each side
    chunk = config.get("attention_chunk_size")
    biased = model_type in BIASED_MODEL_TYPES
    qkv_only = model_type in QKV_BIAS_MODEL_TYPES
    layer_norm = (
        model_type != "nemotron_h"
        and "rms_norm_eps" not in config
        and ("layer_norm_epsilon" in config or "layer_norm_eps" in config)
    )
    moe = read_moe(config, model_type, kinds)  # an unknown MoE layout is named before the MLP kind
    mlp_kind = _mlp_kind(config, model_type)
    return ModelShape(
        name=display_name(name or config.get("_name_or_path") or model_type or "custom model"),
        n_layers=n_layers,
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        head_dim=head_dim,
        d_ff=d_ff,
        mlp_kind=mlp_kind,
        vocab_size=read_int(config, VOCAB_KEYS, "vocabulary size"),
        attention_bias=read_bool(
            config, ("attention_bias", "bias", "use_bias", "add_qkv_bias"), biased or qkv_only
        ),
        output_bias=False if qkv_only else None,
        mlp_bias=read_bool(config, ("mlp_bias", "bias", "use_bias"), biased),
        norm_kind="layer" if layer_norm else "rms",
        tie_embeddings=read_bool(config, ("tie_word_embeddings",), True),
        learned_positions=model_type in LEARNED_POSITION_TYPES,
        sliding_window=window if kinds is None or "sliding" in kinds.counts() else None,
        max_context=read_int(config, CONTEXT_KEYS, "context", default=0) or None,
        layer_types=kinds,
        attention_chunk_size=None if chunk is None else read_int(config, ("attention_chunk_size",), "chunk"),
        moe=moe,
        mla=mla,
        attention_sinks=read_sinks(config, model_type),
        qk_norm=model_type in QK_NORM_MODEL_TYPES,
        norms_per_layer=(1 if one_block else 4 if model_type in FOUR_NORM_MODEL_TYPES else 2)
        + (1 if variants.get("per_layer_embeddings") else 0),  # Gemma 4: a norm after the per-layer input
        quantization=read_quantization(config),
        nextn_layers_left_out=read_int(
            config, ("num_nextn_predict_layers",), "MTP layers", default=0, minimum=0
        ),
        state_mixer=mixer if kinds is not None and any(k in STATE_KINDS for k in kinds.counts()) else None,
        attention_output_gate=model_type in OUTPUT_GATE_MODEL_TYPES
        or read_bool(config, ("attn_output_gate",), False),
        one_mixer_per_layer=one_block,
        rotary_dim=None if mla is not None else _rotary_dim(config, head_dim),
        **variants,
    )


def parse_config_text(text: str, name: str | None = None) -> ModelShape:
    """Parse the text of a config.json (pasted or uploaded) into a ModelShape.

    Raises ConfigError for invalid JSON (with line and column) or an unsizable config."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from exc
    except RecursionError:
        raise ConfigError("not a config.json: nested too deeply") from None
    return from_hf_config(config, name=name)


def parse_config_bytes(data: bytes, name: str | None = None) -> ModelShape:
    """Parse an uploaded config.json (UTF-8, at most 1 MiB) into a ModelShape; ConfigError if not."""
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{len(data):,} bytes is larger than 1 MiB: not a config.json")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError("not UTF-8 text: a config.json is a JSON text file") from None
    return parse_config_text(text, name=name)


@functools.cache
def _preset_texts() -> dict[str, str]:
    """Every preset file's text, read once per process."""
    return {p.stem: p.read_text() for p in sorted(MODELS_DIR.glob("*.json"))}


def list_presets() -> list[str]:
    """Names of the shipped presets (file stems under assets/models/), sorted."""
    return list(_preset_texts())


@functools.cache
def _built_texts() -> dict[str, str]:
    """Presets under assets/models/built/: families the formulas do not (yet) read, sized from
    transformers' own build (their recorded figures: assets/derived/presets.json)."""
    return {p.stem: p.read_text() for p in sorted((MODELS_DIR / "built").glob("*.json"))}


def list_built_presets() -> list[str]:
    """Names of the presets sized from transformers' build only, sorted."""
    return list(_built_texts())


def load_preset_config(name: str) -> dict[str, Any]:
    """The raw config.json dict of a preset (a fresh copy: callers may change it)."""
    text = _preset_texts().get(name) or _built_texts().get(name)
    if text is None:
        raise ConfigError(
            f"unknown model {name!r}; presets: {', '.join(list_presets() + list_built_presets())}"
        )
    return json.loads(text)


@functools.cache
def load_preset(name: str) -> ModelShape:
    """A shipped preset by name (see ``list_presets()``), e.g. 'llama-2-7b'. Cached: shapes are frozen."""
    shape = from_hf_config(load_preset_config(name), name=name)
    return dataclasses.replace(shape, source=f"assets/models/{name}.json")
