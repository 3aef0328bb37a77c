"""The check's pipe as JSON: the job the server sends its child process and the outcome it sends
back (`child`), each a tree of the dataclasses below turned into plain dicts and back.

A dataclass travels as ``{"$type": name, field: value, …}`` and is rebuilt only if its name is
in ``TYPES`` (so a byte on the pipe can name no other class, unlike a pickle, which can call
anything); a tuple as ``{"$tuple": […]}``, a frozenset as ``{"$frozenset": […]}``, a dict whose
keys are not all plain strings (the probe's rates by (m, k, n)) as ``{"$items": [[key, value],
…]}``, and transformers' config of what is built as ``{"$hf_config": its to_dict()}`` (rebuilt
by ``AutoConfig.for_model``, as `hf` rebuilds it for its meta counts). Frozen dataclasses are
rebuilt through their constructors, so a shape is validated again on arrival."""

from __future__ import annotations

import dataclasses
import json
import numbers
from typing import Any

from attn_core.cost.experts import MoE
from attn_core.cost.layer_variants import PerLayerEmbeddings
from attn_core.cost.layers import Every, LayerKinds, LayerSet
from attn_core.cost.mixers import GatedDeltaNet, KimiDeltaAttention, Mamba, Mamba2
from attn_core.cost.mla import MLA
from attn_core.cost.model_shape import ModelShape
from attn_core.verify.counts import AttentionCall, Gemm, PhaseCounts
from attn_core.verify.peak import Peak
from attn_core.verify.plan import Plan, VerifyRequest
from attn_core.verify.probe import Probe
from attn_core.verify.run import PhaseResult, VerifyResult

# Every dataclass a job or an outcome holds: the shape and its parts, the request, the result.
_CLASSES = (
    ModelShape,
    LayerKinds,
    LayerSet,
    Every,
    MoE,
    MLA,
    PerLayerEmbeddings,
    GatedDeltaNet,
    KimiDeltaAttention,
    Mamba,
    Mamba2,
    VerifyRequest,
    Plan,
    Peak,
    Probe,
    PhaseCounts,
    Gemm,
    AttentionCall,
    PhaseResult,
    VerifyResult,
)
TYPES: dict[str, type] = {cls.__name__: cls for cls in _CLASSES}


def _hf_config(value: Any) -> bool:
    return type(value).__module__.startswith("transformers.") and hasattr(value, "to_json_string")


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data (see the module docstring); TypeError for what may not travel."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if _hf_config(value):  # (a dataclass too, in recent transformers: not one of ours)
        return {"$hf_config": encode(value.to_dict())}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if TYPES.get(name) is not type(value):
            raise TypeError(f"{name} is not allowed on the check's pipe")
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return {"$type": name, **fields}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, frozenset):
        return {"$frozenset": [encode(v) for v in sorted(value)]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"$items": [[encode(k), encode(v)] for k, v in value.items()]}
    raise TypeError(f"{type(value).__name__} is not allowed on the check's pipe")


def _rebuild_hf_config(d: dict) -> Any:
    from transformers import AutoConfig

    d = dict(d)
    return AutoConfig.for_model(d.pop("model_type"), **d)


def decode(data: Any) -> Any:
    """The value `encode` wrote; ValueError for a class not in ``TYPES`` or a malformed tag."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "$type" in data:
        cls = TYPES.get(data["$type"])
        if cls is None:
            raise ValueError(f"{str(data['$type'])[:40]!r} is not allowed on the check's pipe")
        return cls(**{k: decode(v) for k, v in data.items() if k != "$type"})
    if "$tuple" in data:
        return tuple(decode(v) for v in data["$tuple"])
    if "$frozenset" in data:
        return frozenset(decode(v) for v in data["$frozenset"])
    if "$items" in data:
        return {decode(k): decode(v) for k, v in data["$items"]}
    if "$hf_config" in data:
        return _rebuild_hf_config(decode(data["$hf_config"]))
    return {k: decode(v) for k, v in data.items()}


def dumps(value: Any) -> bytes:
    """``value`` as UTF-8 JSON bytes for the pipe."""
    return json.dumps(encode(value)).encode()


def loads(payload: bytes) -> Any:
    """The value `dumps` wrote (JSON only: no class outside ``TYPES`` is ever built)."""
    return decode(json.loads(payload))
