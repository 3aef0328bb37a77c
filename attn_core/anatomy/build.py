"""The config as transformers reads it, and the model built from it on the meta device.

A refusal is transformers' own: no class for the model_type, a config its class rejects, or a
build that raises — `BuildRefused` carries its reason in one line."""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Mapping
from typing import Any

import torch

MODEL_DTYPE = torch.bfloat16  # the dtype the cache figures are read at (2 bytes per value)
# What one build may cost this server (a meta build takes ~10 ms per layer, more with one module
# per expert): the largest shipped models have 94 layers and 61 × 256 experts.
MAX_BUILD_LAYERS = 1024
MAX_BUILD_LAYER_EXPERTS = 131_072  # layers × routed experts
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")


class BuildRefused(Exception):
    """transformers cannot build this config; the message names its reason."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return (text[:237] + "…") if len(text) > 240 else text


@contextlib.contextmanager
def quiet():
    """transformers' warnings (slow kernel fallbacks, unused keys) off for a build."""
    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logger.setLevel(level)


def text_config(config: Mapping[str, Any]):
    """transformers' config object for the language model in ``config`` (a config.json dict):
    the class of its model_type with its defaults for absent keys; a multimodal config's text
    (decoder) config. BuildRefused when transformers has no such type or rejects a value."""
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if not isinstance(config, Mapping):
        raise BuildRefused(f"a config must be a JSON object, got {type(config).__name__}")
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise BuildRefused("no 'model_type': transformers cannot tell which class reads this config")
    if model_type not in CONFIG_MAPPING:
        remote = " (its auto_map names remote code, which is not run here)" if "auto_map" in config else ""
        raise BuildRefused(f"transformers {_version()} has no model_type {model_type!r}{remote}")
    kwargs = {k: v for k, v in config.items() if k not in ("model_type", "auto_map", "transformers_version")}
    for part in (config, config.get("text_config")):  # refuse a huge build before transformers reads it
        if isinstance(part, Mapping):
            check_build_size(part)
    try:
        with quiet():
            full = AutoConfig.for_model(model_type, **kwargs)
            text = full.get_text_config(decoder=True)
    except Exception as exc:
        raise BuildRefused(f"transformers rejects the config: {_one_line(exc)}") from None
    check_build_size(text.to_dict())
    return text


def _count(config: Mapping[str, Any], keys: tuple[str, ...]) -> int:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 1


def check_build_size(config: Mapping[str, Any]) -> None:
    """BuildRefused for a model too large to build here (layers, or layers × experts, over the caps)."""
    layers, experts = _count(config, LAYER_KEYS), _count(config, EXPERT_KEYS)
    if layers > MAX_BUILD_LAYERS or layers * max(experts, 1) > MAX_BUILD_LAYER_EXPERTS:
        raise BuildRefused(
            f"too large to build on this server ({layers:,} layers × {experts:,} experts; the caps are "
            f"{MAX_BUILD_LAYERS:,} layers and {MAX_BUILD_LAYER_EXPERTS:,} layer-experts)"
        )


def _version() -> str:
    import transformers

    return transformers.__version__


def causal_lm_class(cfg):
    """The causal-LM class transformers maps this config class to; BuildRefused if none."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    try:
        return MODEL_FOR_CAUSAL_LM_MAPPING[type(cfg)]
    except KeyError:
        pass
    found = _causal_lm_beside(cfg)  # a text model of a multimodal family (mllama's text config)
    if found is not None:
        return found
    raise BuildRefused(
        f"transformers {_version()} has no causal language model for model_type {cfg.model_type!r}"
    )


def _causal_lm_beside(cfg):
    """A ``…ForCausalLM`` class in the modeling module beside the config's, built from it."""
    import importlib

    module = type(cfg).__module__.replace(".configuration_", ".modeling_")
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    for name in dir(mod):
        cls = getattr(mod, name)
        if (
            name.endswith("ForCausalLM")
            and isinstance(cls, type)
            and getattr(cls, "config_class", None) is type(cfg)
        ):
            return cls
    return None


def build_model(cfg, device: str = "meta", initialize: bool = True):
    """The model in MODEL_DTYPE on ``device``: on meta every weight is a shape only; on the CPU
    (a reduced copy, attn_core/anatomy/reduced.py) the weights are real, uninitialized where
    ``initialize`` is False (buffers, computed by the modules, always are)."""
    from transformers.initialization import no_init_weights

    cls = causal_lm_class(cfg)
    cfg._attn_implementation = "sdpa" if cls._supports_sdpa else "eager"
    skip = contextlib.nullcontext() if initialize else no_init_weights()
    try:
        with quiet(), torch.device(device), skip:
            model = cls._from_config(cfg, dtype=MODEL_DTYPE)
    except Exception as exc:
        raise BuildRefused(f"transformers cannot build it: {_one_line(exc)}") from None
    return model.eval()


def build_on_meta(cfg):
    """The model, every weight on the meta device (shapes only), in MODEL_DTYPE."""
    return build_model(cfg, "meta")


def completed_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The language model's config as transformers completes it (every class default written
    out, as ``save_pretrained`` would): what the formulas read when a config.json leaves keys out."""
    cfg = text_config(config)
    out = cfg.to_dict()
    out["model_type"] = cfg.model_type
    return out
