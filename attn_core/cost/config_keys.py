"""Reading a Hugging Face config.json safely: the first alias present, whole numbers only, and one
error type whose message names the key (a silent guess is never acceptable)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from attn_core.cost.limits import MAX_INT


class ConfigError(ValueError):
    """A config that cannot be sized; the message names the key that is missing or wrong."""


def first(config: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    """(key, value) of the first alias present with a non-null value, else (None, None)."""
    for key in keys:
        if config.get(key) is not None:
            return key, config[key]
    return None, None


def whole(key: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int from ``minimum`` to MAX_INT; ConfigError naming ``key`` otherwise
    (strings, booleans, fractions, NaN, ±Infinity and 1e309 — which JSON reads as Infinity)."""
    ok = not isinstance(value, bool) and isinstance(value, int | float)
    if ok and isinstance(value, float):
        ok = math.isfinite(value) and value.is_integer()
    if not ok:
        raise ConfigError(f"config key {key!r} must be a finite whole number, got {value!r}")
    if not minimum <= int(value) <= MAX_INT:
        raise ConfigError(
            f"config key {key!r} must be a whole number from {minimum} to {MAX_INT:,}, got {value!r}"
        )
    return int(value)


def read_int(
    config: Mapping[str, Any], keys: tuple[str, ...], what: str, default: int | None = None, minimum: int = 1
) -> int:
    """The first alias of ``keys`` as a whole number; ``default`` if none is present, else ConfigError."""
    key, value = first(config, keys)
    if key is None:
        if default is not None:
            return default
        names = " or ".join(repr(k) for k in keys[:2])
        raise ConfigError(f"config has no {what}: expected key {names}")
    return whole(key, value, minimum)


def read_bool(config: Mapping[str, Any], keys: tuple[str, ...], default: bool) -> bool:
    key, value = first(config, keys)
    if key is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"config key {key!r} must be true or false, got {value!r}")
    return value


def read_int_list(config: Mapping[str, Any], key: str, minimum: int = 0) -> list[int]:
    """A list of whole numbers (absent or null: empty)."""
    value = config.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"config key {key!r} must be a list of whole numbers, got {value!r}")
    return [whole(key, v, minimum) for v in value]


# Next-token-prediction (MTP) layers, as each maker's config declares them: (count key, the key of
# the decoder layers in each counted module; "" where each counts one layer). DeepSeek, GLM-4.x,
# MiMo: num_nextn_predict_layers; Qwen3-Next, Qwen3.5: mtp_num_hidden_layers; transformers' own
# attribute: num_mtp_layers; MiniMax-M2: num_mtp_modules of mtp_transformer_layers each.
MTP_KEYS = (
    ("num_nextn_predict_layers", ""),
    ("mtp_num_hidden_layers", ""),
    ("num_mtp_layers", ""),
    ("num_mtp_modules", "mtp_transformer_layers"),
)


def read_mtp_layers(config: Mapping[str, Any]) -> int:
    """The MTP decoder layers a config declares (0 if none), by the first key of `MTP_KEYS` present."""
    for count_key, layers_key in MTP_KEYS:
        if config.get(count_key) is not None:
            each = read_int(config, (layers_key,), "layers per MTP module", default=1) if layers_key else 1
            return whole(count_key, config[count_key], minimum=0) * each
    return 0


# transformers writes a non-finite float as {"__float__": "Infinity"} (``to_json_string``) and
# reads it back as the float (``PretrainedConfig._dict_from_json_file``): Falcon-H1's
# time_step_limit [0.0, inf].
_FLOAT_TAG = "__float__"
_FLOAT_TAGS = {"Infinity": float("inf"), "-Infinity": float("-inf"), "NaN": float("nan")}


def decode_floats(value: Any) -> Any:
    """A parsed config.json with transformers' tagged non-finite floats decoded."""
    if isinstance(value, dict):
        tag = value.get(_FLOAT_TAG)
        if len(value) == 1 and isinstance(tag, str) and tag in _FLOAT_TAGS:
            return _FLOAT_TAGS[tag]
        return {k: decode_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_floats(v) for v in value]
    return value
