"""One call: a config.json dict → its `Anatomy` (parameters by part and by layer, cache per
layer, forward FLOPs per layer and part), from transformers' own build on the meta device. Cached by the config's content."""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attn_core.anatomy.build import MODEL_DTYPE, BuildRefused, build_on_meta, text_config
from attn_core.anatomy.cache import CacheAbsent, LayerCache, layer_caches
from attn_core.anatomy.facts import facts_of
from attn_core.anatomy.flops import ModelFlops, model_flops
from attn_core.anatomy.parts import PARTS, param_parts
from attn_core.anatomy.reduced import meta_prefix, reduced_layer_caches
from attn_core.cost.type_facts import TypeFacts

BYTES_PER_VALUE = MODEL_DTYPE.itemsize  # the cache figures are at bf16: 2 bytes per value


@dataclass(frozen=True)
class LayerGroup:
    """Layers alike in their mixers, parameters and cache: one row of the anatomy."""

    kind: str  # the mixers' class names, e.g. "Qwen3NextGatedDeltaNet"
    layers: tuple[int, ...]  # their indices
    params: dict[str, int]  # per layer, by part
    cache: LayerCache

    @property
    def count(self) -> int:
        return len(self.layers)


@dataclass(frozen=True)
class Anatomy:
    """A model as transformers builds it: figures exact to the parameter and the byte."""

    model_type: str
    built_class: str
    transformers_version: str
    n_layers: int
    params_total: int
    params_active: int
    params_by_part: dict[str, int]
    experts: tuple[int, int] | None  # (k, E)
    checkpoint_buffers: int  # numbers a checkpoint holds beyond the parameters (persistent buffers)
    groups: tuple[LayerGroup, ...]
    seconds: float
    mlp_kind: str | None = None  # the dense MLP's kind as built: "gated", "plain" or None (none or neither)
    cache_unread: str | None = None  # why the cache could not be read (transformers' reasons)
    cache_read_by: str | None = None  # "the meta forward" or the reduced copy's cut
    cache_absent: str | None = None  # the model keeps no cache at all (an encoder): why we say so
    flops: ModelFlops | None = None  # forward FLOPs per layer and part, counted from the model (`flops`)
    flops_unread: str | None = None  # why they could not be counted (transformers' reasons)
    facts: TypeFacts | None = None  # what its module tree says of the model_type (anatomy/facts.py)

    @property
    def cache_bytes_per_token(self) -> int:
        """Bytes the cache grows by per token, every layer (a sliding layer until its window fills)."""
        return sum(g.count * g.cache.per_token for g in self.groups)

    @property
    def fixed_state_bytes(self) -> int:
        """Bytes kept per sequence whatever its length (convolution and recurrent states)."""
        return sum(g.count * g.cache.fixed for g in self.groups)

    def cache_bytes(self, T: int, batch: int = 1, b: int = 2, layers: int | None = None) -> int:
        """The cache after T tokens, B sequences, in transformers' dynamic cache: a sliding
        layer keeps min(T, W − 1) tokens, any other T; plus the fixed state. Read at bf16: at
        ``b`` bytes a value all but the state kept in fp32 scales by b / 2; ``layers``: the first
        that many layers only."""
        per_seq = 0
        for g in self.groups:
            n = g.count if layers is None else sum(1 for i in g.layers if i < layers)
            kept = T if g.cache.window is None else min(T, g.cache.window - 1)
            at_b = (g.cache.per_token * kept + g.cache.fixed - g.cache.fixed_fp32) * b // 2
            per_seq += n * (at_b + g.cache.fixed_fp32)
        return batch * per_seq

    def to_json(self) -> dict[str, Any]:
        return {
            "built_by": "transformers",
            "model_type": self.model_type,
            "class": self.built_class,
            "transformers_version": self.transformers_version,
            "n_layers": self.n_layers,
            "params_total": self.params_total,
            "params_active": self.params_active,
            "params_by_part": self.params_by_part,
            "experts_k_of_E": list(self.experts) if self.experts else None,
            "checkpoint_buffers": self.checkpoint_buffers,
            "mlp_kind": self.mlp_kind,
            "facts": None if self.facts is None else self.facts.to_json(),
            "cache_dtype_bytes": BYTES_PER_VALUE,
            "cache_unread": self.cache_unread,
            "cache_read_by": self.cache_read_by,
            "cache_absent": self.cache_absent,
            "cache_bytes_per_token": self.cache_bytes_per_token,
            "flops": self.flops.to_json() if self.flops is not None else None,
            "flops_unread": self.flops_unread,
            "fixed_state_bytes": self.fixed_state_bytes,
            "layer_groups": [
                {
                    "kind": g.kind,
                    "count": g.count,
                    "first_layer": g.layers[0],
                    "params_per_layer": g.params,
                    "cache_bytes_per_token": g.cache.per_token,
                    "fixed_bytes": g.cache.fixed,
                    "fixed_fp32_bytes": g.cache.fixed_fp32,
                    "window": g.cache.window,
                    "cache_layer": g.cache.kind,
                }
                for g in self.groups
            ],
        }


def _groups(layers, caches: list[LayerCache]) -> tuple[LayerGroup, ...]:
    keyed: dict[tuple, list[int]] = {}
    for i, (lp, c) in enumerate(zip(layers, caches, strict=True)):
        key = (lp.kind, tuple(sorted(lp.params.items())), c)
        keyed.setdefault(key, []).append(i)
    return tuple(
        LayerGroup(kind, tuple(idx), {p: n for p, n in params if n}, cache)
        for (kind, params, cache), idx in keyed.items()
    )


def _read_caches(cfg, model, parts) -> tuple[list[LayerCache], str | None, str | None, str | None]:
    """(caches, how they were read, why not read, why there is none): the meta forward; where it
    fails, a reduced copy's real forward on the CPU; where that fails too, transformers' reasons."""
    n = len(parts.layers)
    none = [LayerCache(0, 0, 0, None, "none")] * n
    try:
        return layer_caches(model, n), "the meta forward", None, None
    except CacheAbsent as exc:
        return none, None, None, str(exc)
    except BuildRefused as exc:
        on_meta = str(exc)
    try:
        read = reduced_layer_caches(cfg, model, parts.experts)
    except CacheAbsent as exc:
        return none, None, None, str(exc)
    except BuildRefused as exc:  # the parameters stand; the cache is not read
        return [LayerCache(0, 0, 0, None, "not read")] * n, None, f"on meta: {on_meta}; {exc}", None
    return read.caches, read.how, None, None


def _forwards(cfg, model, parts, one_of_each: bool):
    """(caches, how read, why unread, why none, FLOPs, why not counted): from forwards of the
    model, or with ``one_of_each`` of its prefix of one layer of each kind (`meta_prefix`), each
    layer's figures those of the prefix layer standing for it."""
    prefix = meta_prefix(cfg, model) if one_of_each else None
    if prefix is None:
        caches, read_by, unread, absent = _read_caches(cfg, model, parts)
        try:
            return caches, read_by, unread, absent, model_flops(cfg, model, parts.experts), None
        except BuildRefused as exc:
            return caches, read_by, unread, absent, None, str(exc)
    copy, standing = prefix
    few = dataclasses.replace(parts, layers=parts.layers[: max(standing) + 1])
    caches, read_by, unread, absent = _read_caches(copy.config, copy, few)
    caches = [caches[j] for j in standing]
    try:
        f = model_flops(copy.config, copy, parts.experts)
    except BuildRefused as exc:
        return caches, read_by, unread, absent, None, str(exc)
    decode = None if f.decode is None else tuple(f.decode[j] for j in standing)
    f = dataclasses.replace(f, prefill=tuple(f.prefill[j] for j in standing), decode=decode)
    return caches, read_by, unread, absent, f, None


def _derive(config: Mapping[str, Any], one_of_each: bool = True) -> Anatomy:
    import transformers

    start = time.perf_counter()
    cfg = text_config(config)
    model = build_on_meta(cfg)
    parts = param_parts(model, cfg)
    caches, read_by, unread, absent, flops, flops_unread = _forwards(cfg, model, parts, one_of_each)
    by_part = {p: parts.by_part[p] for p in PARTS if parts.by_part.get(p)}
    return Anatomy(
        model_type=str(cfg.model_type),
        built_class=type(model).__name__,
        transformers_version=transformers.__version__,
        n_layers=len(parts.layers),
        params_total=parts.total,
        params_active=parts.active,
        params_by_part=by_part,
        experts=parts.experts,
        checkpoint_buffers=parts.buffers,
        groups=_groups(parts.layers, caches),
        seconds=time.perf_counter() - start,
        mlp_kind=parts.mlp_kind,
        cache_unread=unread,
        cache_read_by=read_by,
        cache_absent=absent,
        flops=flops,
        flops_unread=flops_unread,
        facts=facts_of(model, cfg),
    )


@functools.lru_cache(maxsize=64)
def _derive_cached(key: str) -> Anatomy:
    return _derive(json.loads(key))


def config_key(config: Mapping[str, Any]) -> str:
    """The config's content as one canonical string: the cache key."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)


def derive(config: Mapping[str, Any]) -> Anatomy:
    """The model's anatomy from transformers' own build (meta device); BuildRefused (one line,
    transformers' reason) where it cannot be built. Cached by config content."""
    return _derive_cached(config_key(config))
