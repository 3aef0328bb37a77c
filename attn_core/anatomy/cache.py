"""What each layer keeps, read from the model's own cache after a forward on the meta device.

Two forwards (T = 2 and T = 4 tokens, batch 1) give each layer's bytes as a + b·T: b grows with
the sequence (keys, values, MLA latents, indexer keys), a is fixed per sequence (convolution and
recurrent states). Tensors are read from the cache object itself — its layers and any per-layer
list it keeps beside them (MiniMax's lightning-attention states) — so a layer kind transformers
adds is read without being named here. A sliding layer's window is read from its cache layer:
transformers' dynamic cache keeps W − 1 tokens of it."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

from attn_core.anatomy.build import BuildRefused, _one_line, quiet
from attn_core.anatomy.parts import decoder_layers

T_SHORT, T_LONG = 2, 4


class CacheAbsent(BuildRefused):
    """The forward runs and keeps no cache at all (an encoder): "no cache", not "not read"."""


@dataclass(frozen=True)
class LayerCache:
    """One layer's cache: bytes per token (growing), fixed bytes per sequence, its window."""

    per_token: int
    fixed: int
    fixed_fp32: int  # of ``fixed``, the bytes kept in float32 (recurrent states some models keep so)
    window: int | None  # a sliding layer's W (the dynamic cache keeps W − 1 tokens); None: all
    kind: str  # the cache layer's class name


def _tensors(obj, depth: int = 0):
    """Every tensor an object holds in its attributes, lists, tuples and dicts (not 0-d ones)."""
    if isinstance(obj, torch.Tensor):
        if obj.dim() > 0:
            yield obj
        return
    if depth > 3:
        return
    if isinstance(obj, list | tuple):
        for v in obj:
            yield from _tensors(v, depth + 1)
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v, depth + 1)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type | torch.nn.Module):
        for v in vars(obj).values():
            yield from _tensors(v, depth + 1)


def _per_layer(cache, n_layers: int) -> list[tuple[int, int, str, int | None]]:
    """(bytes, float32 bytes, class name, window) per layer of a cache object after a forward."""
    rows = [[0, 0, "", None] for _ in range(n_layers)]
    layers = getattr(cache, "layers", None)
    if layers is not None:
        layers = list(layers)
        # c cache layers per decoder layer (LongCat-Flash's two attentions: layer_idx·2 + j)
        c = len(layers) // n_layers if len(layers) % n_layers == 0 and len(layers) > n_layers else 1
        for j, layer in enumerate(layers[: c * n_layers]):
            i = j // c
            rows[i][2] = rows[i][2] or type(layer).__name__
            w = getattr(layer, "sliding_window", None)
            rows[i][3] = int(w) if isinstance(w, int) and not isinstance(w, bool) else rows[i][3]
            for t in _tensors(layer):
                rows[i][0] += t.numel() * t.element_size()
                rows[i][1] += t.numel() * t.element_size() if t.dtype == torch.float32 else 0
    for name, value in getattr(cache, "__dict__", {}).items():  # per-layer lists beside the layers
        if name == "layers" or not isinstance(value, list) or not 0 < len(value) <= n_layers:
            continue
        for i, item in enumerate(value):
            for t in _tensors(item):
                rows[i][0] += t.numel() * t.element_size()
                rows[i][1] += t.numel() * t.element_size() if t.dtype == torch.float32 else 0
                rows[i][2] = rows[i][2] or type(cache).__name__ + "." + name
    if layers is None and not any(r[0] for r in rows):  # a cache that is not per layer
        total = sum(t.numel() * t.element_size() for t in _tensors(cache))
        fp32 = sum(t.numel() * t.element_size() for t in _tensors(cache) if t.dtype == torch.float32)
        for i in range(n_layers):
            rows[i] = [total // n_layers, fp32 // n_layers, type(cache).__name__, None]
    return [tuple(r) for r in rows]


class _NoMasks(dict):
    """A mask mapping that answers None for every layer type: a model that takes a prepared
    mapping skips its mask builder, which asks the cache its length and fails when the cache has
    no attention layer (a hybrid whose class defaults have none; the positions, given too, skip
    the same question). A mask never changes what a layer keeps."""

    def __missing__(self, key):
        return None


CACHE_FIELDS = ("past_key_values", "cache_params", "state", "mems")  # where a forward returns it


def _run(model, ids, **kwargs):
    with quiet(), torch.no_grad():
        return model(input_ids=ids, use_cache=True, **kwargs)


def _forward(model, ids: torch.Tensor):
    """The forward's output; one retry with every layer's mask given as None (see _NoMasks)."""
    try:
        return _run(model, ids)
    except Exception as exc:
        try:
            positions = torch.arange(ids.shape[1], device=ids.device)[None]
            return _run(model, ids, attention_mask=_NoMasks(), position_ids=positions)
        except Exception:
            raise BuildRefused(f"transformers' forward fails on it: {_one_line(exc)}") from None


def _held_by_modules(layers) -> list[tuple[int, int]]:
    """(bytes, float32 bytes) per layer of the tensors its modules keep as plain attributes (not
    parameters, buffers or submodules): a model that keeps its state on its layers."""
    rows = []
    for layer in layers:
        n = fp32 = 0
        for mod in layer.modules():
            for name, value in vars(mod).items():
                if name.startswith("_") or name == "config":
                    continue
                for t in _tensors(value):
                    n += t.numel() * t.element_size()
                    fp32 += t.numel() * t.element_size() if t.dtype == torch.float32 else 0
        rows.append((n, fp32))
    return rows


def _read(model, T: int, n_layers: int, device: str) -> list[tuple[int, int, str, int | None]]:
    """Each layer's cache after a forward of T tokens: the cache object the forward returns; where
    it returns none, a dynamic cache handed to it and the state its layers keep on themselves.
    CacheAbsent where it keeps nothing."""
    ids = torch.zeros(1, T, dtype=torch.long, device=device)
    encoder = getattr(model.config, "is_decoder", None) is False  # the config's own word
    out = _forward(model, ids)
    cache = next((c for c in (getattr(out, f, None) for f in CACHE_FIELDS) if c is not None), None)
    if cache is not None:
        return _per_layer(cache, n_layers)
    if encoder:
        raise CacheAbsent("no cache: transformers' forward keeps none (its config has is_decoder=False)")
    from transformers import DynamicCache

    given = DynamicCache(config=model.config)
    with contextlib.suppress(Exception):  # a model that takes no cache: its layers may keep state
        _run(model, ids, past_key_values=given)
    rows = _per_layer(given, n_layers)
    _, stack = decoder_layers(model)
    held = _held_by_modules(list(stack)[:n_layers])
    rows = [
        (b + h, f + hf, kind or "layer attributes", w)
        for (b, f, kind, w), (h, hf) in zip(rows, held, strict=True)
    ]
    if not any(r[0] for r in rows):
        raise CacheAbsent("no cache: transformers' forward keeps none for it")
    return rows


def layer_caches(model, n_layers: int, device: str = "meta") -> list[LayerCache]:
    """Each layer's cache as a + b·T, from forwards at T_SHORT and T_LONG tokens."""
    short = _read(model, T_SHORT, n_layers, device)
    long = _read(model, T_LONG, n_layers, device)
    out = []
    for (b1, f1, kind, window), (b2, f2, _, _) in zip(short, long, strict=True):
        per_token, rem = divmod(b2 - b1, T_LONG - T_SHORT)
        if rem or per_token < 0:
            raise BuildRefused("its cache does not grow linearly with the tokens on the meta device")
        fixed = b1 - T_SHORT * per_token
        fp32_fixed = f1 - T_SHORT * ((f2 - f1) // (T_LONG - T_SHORT))
        out.append(LayerCache(per_token, fixed, fp32_fixed, window, kind))
    return out
