"""Reading a model's shape: a `ModelShape` (`attn_core.cost.model_shape`) from a preset or a
Hugging Face ``config.json`` dict (pasted, uploaded or parsed): the key aliases read generically,
what a model_type means beyond its keys from its family's record (`attn_core.cost.families`), what
its build shows from `attn_core.cost.type_facts`.

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
from attn_core.cost.config_keys import decode_floats, first, read_bool, read_int, read_mtp_layers
from attn_core.cost.derived_records import preset_record
from attn_core.cost.experts import read_moe
from attn_core.cost.families import Family, family
from attn_core.cost.layer_config import (
    FFN_ONLY_KINDS,
    hybrid_pattern,
    layer_kinds,
    read_cross_layers,
    read_state_mixer,
)
from attn_core.cost.layer_variants import gemma4_layer_kinds, read_gemma4
from attn_core.cost.mixers import STATE_KINDS, read_state_dtype
from attn_core.cost.mla import read_mla
from attn_core.cost.model_shape import MlpKind
from attn_core.cost.model_shape import ModelShape as ModelShape
from attn_core.cost.model_types import (
    declared_type,
    read_quantization,
    read_sinks,
    refuse_unsized_models,
    unwrap_text_config,
    with_class_defaults,
)
from attn_core.cost.type_facts import TypeFacts, recorded_facts

MODELS_DIR = Path(__file__).resolve().parents[2] / "assets" / "models"

# What a model_type implies (its MLP's kind, biases, QK-norm, output gate, norms per layer, learned
# positions) is read from transformers' build of it: recorded per type (attn_core/cost/type_facts.py),
# or from the build of the config at hand where it runs (attn_core/anatomy/compare.py).
# Activations that, with no model_type at all, mean a gated MLP (LLaMA's SwiGLU convention). A
# model_type is never read this way (VaultGemma's and BitNet's GELU / ReLU² MLPs are gated): one
# without recorded facts is refused, and transformers' own build sizes it (attn_core/anatomy).
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
# What an unknown type is taken to have (no biases, norms, gates or positions beyond the keys').
NO_FACTS = TypeFacts(
    mlp=None,
    attention_bias="none",
    mlp_bias=False,
    qk_norm=False,
    output_gate=False,
    norms_per_layer=0,
    moe=False,
    learned_positions=False,
)
BIAS_KEYS = ("attention_bias", "bias", "use_bias", "add_qkv_bias")

MAX_CONFIG_BYTES = 1 << 20  # a config.json is a few KiB; anything over 1 MiB is not one
MAX_NAME_CHARS = 80  # a model name is shown in headings, tables and the CLI: a line, not a page


def display_name(value: Any) -> str:
    """A config's name, safe to print and to send to a browser: lone surrogates and control
    characters replaced, at most MAX_NAME_CHARS characters."""
    text = str(value).encode("utf-8", "replace").decode("utf-8")
    text = "".join(c if c.isprintable() else "\ufffd" for c in text)
    return text if len(text) <= MAX_NAME_CHARS else text[: MAX_NAME_CHARS - 1] + "…"


def first_architecture(config: Mapping[str, Any]) -> str | None:
    """A config's ``architectures[0]`` (LlamaForCausalLM): its name when it has no ``_name_or_path``."""
    arch = config.get("architectures")
    return arch[0] if isinstance(arch, list) and arch and isinstance(arch[0], str) and arch[0] else None


def _mlp_kind(config: Mapping[str, Any], model_type: str, facts: TypeFacts | None) -> MlpKind:
    """Gated (3 matrices) or plain (2): the build decides; a model_type without facts is refused
    (never guessed from its activation); with no model_type at all, a SiLU activation means
    SwiGLU (the LLaMA convention) and anything else a plain MLP."""
    explicit = config.get("mlp_kind")  # Attention Lab extension, for architectures we don't know
    if explicit is not None:
        if explicit not in ("gated", "plain"):
            raise ConfigError(f"config key 'mlp_kind' must be 'gated' or 'plain', got {explicit!r}")
        return explicit
    if facts is not None and facts.mlp in ("gated", "plain"):
        return facts.mlp
    if facts is not None and facts.moe and facts.mlp is None:
        return "plain"  # the build has experts and no dense MLP: no layer is sized by this kind
    if model_type:
        why = (
            "transformers' build of it shows no MLP of 3 or 2 matrices"
            if facts is not None
            else "no build of it is recorded (assets/derived/model_types.json), so whether its MLP is gated "
            "(3 matrices) or plain (2) is not known"
        )
        raise ConfigError(
            f"config key 'model_type' = {display_name(model_type)!r}: {why}, and the activation's name "
            "does not say; add 'mlp_kind'"
        )
    _, act = first(config, ACT_KEYS)
    return "gated" if str(act).lower() in GATED_ACTIVATIONS else "plain"


def _tie_default(facts: TypeFacts | None) -> bool:
    """A config that leaves tie_word_embeddings out: its class's default (Hugging Face's base
    default, tied, where the type is unknown)."""
    return True if facts is None or facts.tie_word_embeddings is None else facts.tie_word_embeddings


def _norms(facts: TypeFacts | None) -> int:
    """Norms per decoder layer as built (Gemma 2/3: 4); two (before attention and before the MLP)
    where the type is unknown or its norms sit inside the blocks."""
    return facts.norms_per_layer if facts is not None and facts.norms_per_layer > 0 else 2


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


def _read_sizes(config: Mapping[str, Any], model_type: str, facts: TypeFacts | None) -> dict[str, Any]:
    """Layer count, width, heads, head width, the dense feed-forward width, MLA and the state mixer
    (key ``mixer``, not a ModelShape field): generic key reading, the family's extra width keys."""
    pattern = hybrid_pattern(config)  # Nemotron-H: the pattern's length is the layer count
    n_layers = len(pattern) if pattern else read_int(config, LAYER_KEYS, "layer count")
    d_model = read_int(config, WIDTH_KEYS, "model width")
    try:
        mixer = read_state_mixer(config, model_type, d_model)
    except ConfigError:  # keys of a mixer the formulas do not size (Mamba-2 alone): name the type
        refuse_unsized_models(model_type, facts, None)
        raise
    refuse_unsized_models(model_type, facts, mixer)
    n_heads = read_int(config, HEAD_KEYS, "attention-head count")
    n_kv_heads = read_int(config, KV_HEAD_KEYS, "KV-head count", default=n_heads)
    if config.get("multi_query") is True:  # GPT-BigCode / Falcon spell MQA as a flag
        n_kv_heads = 1
    if first(config, HEAD_DIM_KEYS)[0] is None and d_model % n_heads and config.get("kv_lora_rank") is None:
        raise ConfigError(
            f"no 'head_dim' and the width {d_model} is not divisible by {n_heads} heads: add 'head_dim'"
        )
    mla = read_mla(config)
    # MLA: a query/key head is d_nope + d_rope wide, whatever d / h is
    head_dim = (
        mla.qk_head_dim
        if mla is not None
        else read_int(config, HEAD_DIM_KEYS, "head width", d_model // n_heads)
    )
    ff_keys = (
        *family(model_type).dense_width_keys,
        *FF_KEYS,
    )  # Llama 4's dense layers: intermediate_size_mlp
    d_ff = read_int(config, ff_keys, "feed-forward width", default=4 * d_model)
    return {
        "n_layers": n_layers,
        "d_model": d_model,
        "n_heads": n_heads,
        "n_kv_heads": n_kv_heads,
        "head_dim": head_dim,
        "d_ff": d_ff,
        "mla": mla,
        "mixer": mixer,
    }


def _read_window(config: Mapping[str, Any], fam: Family) -> int | None:
    """The sliding window (None where the config ships one it does not use, as Qwen2 does), as an
    exclusive bound each side where the family's window is bidirectional (Gemma4TextConfig's rule)."""
    window = config.get("sliding_window")
    if window is None or config.get("use_sliding_window") is False:
        return None
    window = read_int(config, ("sliding_window",), "sliding window")
    if fam.bidirectional_window and config.get("use_bidirectional_attention") == "all":
        window = window // 2 + 1
    return window


def _read_layers(config: Mapping[str, Any], model_type: str, sizes: dict[str, Any]) -> dict[str, Any]:
    """Each layer's kind, the family's per-layer variants (Gemma 4: `layer_variants`), the window,
    the chunk and the state mixer where some layer has one."""
    fam, n_layers, mixer = family(model_type), sizes["n_layers"], sizes["mixer"]
    kinds = layer_kinds(config, model_type, n_layers, mixer)
    variants: dict[str, Any] = {}
    if fam.per_layer_variants:  # per-layer heads, KV sharing, per-layer embeddings
        kinds = gemma4_layer_kinds(config, n_layers, kinds)
        variants = read_gemma4(config, n_layers, kinds, sizes["head_dim"])
    counts = kinds.counts() if kinds is not None else {}
    window = _read_window(config, fam)
    return variants | dict(
        layer_types=kinds,
        one_mixer_per_layer=any(k in FFN_ONLY_KINDS for k in counts),
        sliding_window=window if kinds is None or "sliding" in counts else None,
        attention_chunk_size=config.get("attention_chunk_size"),
        state_mixer=mixer if any(k in STATE_KINDS for k in counts) else None,
        cross_attention_layers=read_cross_layers(config, n_layers),
    )


def _read_features(
    config: Mapping[str, Any], model_type: str, facts: TypeFacts | None, layers: dict[str, Any]
) -> dict[str, Any]:
    """What the type's build shows (``facts``) as the config's keys may override it: biases, norms,
    ties, positions, QK-norm, the output gate; sinks, quantization, MTP layers, the state's dtype."""
    built = facts or NO_FACTS
    layer_norm = not family(model_type).rms_norm and "rms_norm_eps" not in config
    layer_norm = layer_norm and ("layer_norm_epsilon" in config or "layer_norm_eps" in config)
    chunk = layers["attention_chunk_size"]
    plus_ple = 1 if layers.get("per_layer_embeddings") else 0  # Gemma 4: a norm after the per-layer input
    return dict(
        vocab_size=read_int(config, VOCAB_KEYS, "vocabulary size"),
        attention_bias=read_bool(config, BIAS_KEYS, built.attention_bias in ("all", "qkv")),
        output_bias=False if built.attention_bias == "qkv" else None,
        mlp_bias=read_bool(config, ("mlp_bias", "bias", "use_bias"), built.mlp_bias),
        norm_kind="layer" if layer_norm else "rms",
        tie_embeddings=read_bool(config, ("tie_word_embeddings",), _tie_default(facts)),
        learned_positions=built.learned_positions,
        max_context=read_int(config, CONTEXT_KEYS, "context", default=0) or None,
        attention_chunk_size=None if chunk is None else read_int(config, ("attention_chunk_size",), "chunk"),
        attention_sinks=read_sinks(config, model_type),
        qk_norm=built.qk_norm,
        norms_per_layer=(1 if layers["one_mixer_per_layer"] else _norms(facts)) + plus_ple,
        quantization=read_quantization(config),
        nextn_layers_left_out=read_mtp_layers(config),
        state_dtype=read_state_dtype(config),
        attention_output_gate=built.output_gate or read_bool(config, ("attn_output_gate",), False),
    )


def from_hf_config(
    config: Mapping[str, Any], name: str | None = None, facts: TypeFacts | None = None
) -> ModelShape:
    """Build a ModelShape from a Hugging Face ``config.json`` dict.

    Accepts the common aliases (``num_hidden_layers``/``n_layer``, ``hidden_size``/``n_embd``,
    ``num_attention_heads``/``n_head``, ``intermediate_size``/``n_inner``, …) and a language
    model nested under ``text_config``. Defaults follow the Hugging Face classes: no
    ``num_key_value_heads`` → MHA; no ``head_dim`` → d / h; no ``intermediate_size`` → 4d; no
    ``tie_word_embeddings`` → tied. What a model_type means beyond its keys (class defaults, expert
    layout, layer rule, window rule) is its family's record (`attn_core.cost.families`); what its
    build shows (MLP kind, biases, QK-norm, output gate, norms, positions, the tie default) comes
    from ``facts``, transformers' build of this config where it ran, else from the facts recorded
    for the type (`attn_core.cost.type_facts`). Raises ConfigError naming the missing or malformed key.
    """
    if not isinstance(config, Mapping):
        raise ConfigError(f"a config must be a JSON object, got {type(config).__name__}")
    config, declared = declared_type(unwrap_text_config(config))
    model_type = str(config.get("model_type") or "").lower()
    facts = facts or recorded_facts(model_type)
    config = with_class_defaults(config, model_type)
    sizes = _read_sizes(config, model_type, facts)
    layers = _read_layers(config, model_type, sizes)
    # an unknown MoE layout is named before the MLP kind; experts the build has are never dropped
    moe = read_moe(config, model_type, layers["layer_types"], built_moe=facts is not None and facts.moe)
    mlp_kind = _mlp_kind(config, model_type, facts)
    features = _read_features(config, model_type, facts, layers)
    mla, head_dim = sizes["mla"], sizes["head_dim"]
    del sizes["mixer"]
    return ModelShape(
        **(sizes | layers | features),
        name=display_name(
            name or config.get("_name_or_path") or first_architecture(config) or model_type or "custom model"
        ),
        source=declared or "",
        mlp_kind=mlp_kind,
        moe=moe,
        rotary_dim=None if mla is not None else _rotary_dim(config, head_dim),
    )


def read_config_json(text: str) -> Any:
    """The value of a config.json's text as transformers reads it: JSON, with its tagged
    non-finite floats decoded. json.JSONDecodeError (or RecursionError) as ``json.loads``."""
    return decode_floats(json.loads(text))


def parse_config_text(text: str, name: str | None = None) -> ModelShape:
    """Parse the text of a config.json (pasted or uploaded) into a ModelShape.

    Raises ConfigError for invalid JSON (with line and column) or an unsizable config."""
    try:
        config = read_config_json(text)
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
    return read_config_json(text)


@functools.cache
def load_preset(name: str) -> ModelShape:
    """A shipped preset by name (see ``list_presets()``), e.g. 'llama-2-7b', read as its recorded
    check read it (assets/derived/presets.json: the config as transformers completes it, the facts
    its build shows), so a key the preset leaves out means what transformers means; the preset's
    own file where no record matches it. Cached: shapes are frozen."""
    raw = load_preset_config(name)
    read = (preset_record(name, raw) or {}).get("formulas_read")
    if read is not None:
        shape = from_hf_config(read["config"], name=name, facts=TypeFacts.from_json(read["facts"]))
    else:
        shape = from_hf_config(raw, name=name)
    return dataclasses.replace(shape, source=f"assets/models/{name}.json")
