"""What each layer keeps, read from the model's own cache after a forward on the meta device.

Two forwards (T = 2 and T = 4 tokens, batch 1) give each layer's bytes as a + b·T: b grows with
the sequence (keys, values, MLA latents, indexer keys), a is fixed per sequence (convolution and
recurrent states). Tensors are read from the cache object itself — its layers and any per-layer
list it keeps beside them (MiniMax's lightning-attention states) — so a layer kind transformers
adds is read without being named here. A sliding layer's window is read from its cache layer:
transformers' dynamic cache keeps W − 1 tokens of it."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_core.anatomy.build import BuildRefused, _one_line, quiet

T_SHORT, T_LONG = 2, 4


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
        for i, layer in enumerate(list(layers)[:n_layers]):
            rows[i][2] = type(layer).__name__
            w = getattr(layer, "sliding_window", None)
            rows[i][3] = int(w) if isinstance(w, int) and not isinstance(w, bool) else None
            for t in _tensors(layer):
                rows[i][0] += t.numel() * t.element_size()
                rows[i][1] += t.numel() * t.element_size() if t.dtype == torch.float32 else 0
    for name, value in vars(cache).items():  # per-layer lists kept beside the layers
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


def _forward(model, T: int):
    ids = torch.zeros(1, T, dtype=torch.long, device="meta")
    try:
        with quiet(), torch.no_grad():
            out = model(input_ids=ids, use_cache=True)
    except Exception as exc:
        raise BuildRefused(f"transformers' forward fails on it: {_one_line(exc)}") from None
    cache = getattr(out, "past_key_values", None)
    if cache is None:
        cache = getattr(out, "cache_params", None)
    if cache is None:
        raise BuildRefused("transformers' forward returns no cache for it")
    return cache


def layer_caches(model, n_layers: int) -> list[LayerCache]:
    """Each layer's cache as a + b·T, from forwards at T_SHORT and T_LONG tokens."""
    short = _per_layer(_forward(model, T_SHORT), n_layers)
    long = _per_layer(_forward(model, T_LONG), n_layers)
    out = []
    for (b1, f1, kind, window), (b2, f2, _, _) in zip(short, long, strict=True):
        per_token, rem = divmod(b2 - b1, T_LONG - T_SHORT)
        if rem or per_token < 0:
            raise BuildRefused("its cache does not grow linearly with the tokens on the meta device")
        fixed = b1 - T_SHORT * per_token
        fp32_fixed = f1 - T_SHORT * ((f2 - f1) // (T_LONG - T_SHORT))
        out.append(LayerCache(per_token, fixed, fp32_fixed, window, kind))
    return out
