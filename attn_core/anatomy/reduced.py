"""Each layer's cache from a real forward on the CPU of a reduced copy of the model, where the
meta forward cannot run (a step that needs a tensor's value: ``.item()``, ``nonzero``, a copy to
the host, an expert's routing).

What a layer keeps per token and per sequence is the layer's own: its mixer, widths and window,
not how many layers stand beside it, how large the vocabulary is or among how many experts its
router picks. So the copy keeps the shortest prefix of the layer stack that holds every distinct
layer (told apart by structure: each submodule's class, parameter shapes and integer, boolean and
string settings), a vocabulary of `REDUCED_VOCAB` and k of E routed experts, in bf16, and is
refused over `MAX_REDUCED_BYTES`. Each reduction is checked on the meta device before it is used
(the copy's layers must be the model's first layers, structure for structure; a reduction that
changes them is dropped), and tests/anatomy/test_reduced.py holds the copy's figures against the
meta forward of the whole model, to the byte."""

from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass

from torch import nn

from attn_core.anatomy.build import (
    LAYER_KEYS,
    BuildRefused,
    _one_line,
    build_model,
)
from attn_core.anatomy.cache import CacheAbsent, LayerCache, layer_caches
from attn_core.anatomy.parts import decoder_layers, is_moe

REDUCED_VOCAB = 256  # at least every special token id the config names, + 1
# What one reduced copy may take on this server: its parameters and buffers (the forward's
# activations at 4 tokens are small beside them). One layer of the widest class default
# (longcat_flash: two MLA attentions, two 12,288-wide MLPs, 12 routed and 12 zero-compute experts
# whose fused weights transformers allocates) is 2.8 GiB in bf16. The weights are left
# uninitialized (their values never change a cache's size), so pages a forward does not write
# are never committed: the cap bounds the worst case.
MAX_REDUCED_BYTES = 4 * 2**30
MAX_TRIES = 2  # real forwards per model, each a cut less reduced than the one before
_EXPERT_COUNT = re.compile(r"(num|n)_\w*experts|experts?_num")  # how many experts (also zero-compute ones)
_TOP_K = re.compile(r"experts_per_tok|topk|top_k")
_INDEX = re.compile(r"idx|index|layer_id|layer_num|number|expert", re.I)


@dataclass(frozen=True)
class ReducedRead:
    """The caches of every layer of the whole model, and how the copy they came from was cut."""

    caches: list[LayerCache]
    how: str  # "a reduced copy on the CPU: 4 of 48 layers, vocabulary 256, 10 of 512 experts"


def _setting(value) -> bool:
    simple = (bool, int, str, type(None))
    return isinstance(value, simple) or (
        isinstance(value, list | tuple) and all(isinstance(v, simple) for v in value)
    )


def layer_fingerprint(layer: nn.Module) -> tuple:
    """A layer's structure: each submodule's class, parameter shapes and integer, boolean and
    string settings (its index aside); a mixture of experts by its class alone (the copy has fewer
    experts). Two layers with one fingerprint keep the same cache."""
    rows: list[tuple] = []
    skipped: list[str] = []
    for path, mod in layer.named_modules():
        if any(path.startswith(s + ".") for s in skipped):
            continue
        if path and is_moe(mod):
            rows.append((path, type(mod).__name__))
            skipped.append(path)
            continue
        settings = tuple(
            sorted(
                (k, tuple(v) if isinstance(v, list) else v)
                for k, v in vars(mod).items()
                if not k.startswith("_") and _setting(v) and not _INDEX.search(k)
            )
        )
        shapes = tuple((n, tuple(p.shape)) for n, p in mod.named_parameters(recurse=False))
        rows.append((path, type(mod).__name__, settings, shapes))
    return tuple(rows)


def _config_dict(cfg) -> dict:
    """Every setting of the config: its dict and its declared fields (a dict may leave some out).
    A field the class will not read globally (a per-layer one: Gemma 4's heads) stays as the dict
    has it, with its per-layer values in ``per_layer_config``."""
    fields = dataclasses.fields(cfg) if dataclasses.is_dataclass(cfg) else ()
    out = cfg.to_dict()
    for f in fields:
        try:
            if hasattr(cfg, f.name):
                out[f.name] = getattr(cfg, f.name)
        except Exception:  # transformers' AmbiguousGlobalPerLayerAttributeError
            continue
    return out


def _per_layer_cut(d: dict, n: int) -> dict:
    """``per_layer_config`` (layer index → settings) kept for the first n layers only."""
    per_layer = d.get("per_layer_config")
    if not isinstance(per_layer, dict) or not per_layer:
        return {}
    return {"per_layer_config": {i: v for i, v in per_layer.items() if str(i).isdigit() and int(i) < n}}


def _cuts(cfg, N: int, n: int, k: int | None) -> list[tuple[str, dict]]:
    """Candidate reductions of the config, most reduced first, each with its description."""
    d = _config_dict(cfg)
    if not k:  # the build did not name its top-k: the config's own key for it, by its name
        k = next((v for key, v in d.items() if _TOP_K.search(key) and isinstance(v, int) and v > 0), None)
    layers = {key: n for key, v in d.items() if v == N and (key in LAYER_KEYS or key.endswith("_layers"))}
    layers |= {key: v[:n] for key, v in d.items() if isinstance(v, list) and len(v) == N}
    layers |= _per_layer_cut(d, n)
    special = [v for key, v in d.items() if key.endswith("token_id") and isinstance(v, int)]
    V = max([REDUCED_VOCAB, *(s + 1 for s in special)])
    vocab = {"vocab_size": V} if isinstance(d.get("vocab_size"), int) and d["vocab_size"] > V else {}
    experts = {
        key: k for key, v in d.items() if k and isinstance(v, int) and v > k and _EXPERT_COUNT.search(key)
    }
    if n == N:
        layers = {}
    out = []
    for use in (
        (layers, vocab, experts),
        (layers, vocab, {}),
        (layers, {}, {}),
        ({}, vocab, experts),
        ({}, vocab, {}),
        ({}, {}, {}),
    ):
        over = use[0] | use[1] | use[2]
        if any(over == o for _, o in out):
            continue
        what = [f"{n} of {N} layers" if use[0] else f"all {N} layers"]
        what += [f"vocabulary {V:,} of {d['vocab_size']:,}"] if use[1] else []
        what += [f"{k} of {d[key]:,} experts" for key in use[2]][:1]
        out.append((", ".join(what), over))
    return out


def _outside_shapes(model: nn.Module, path: str) -> list[tuple[str, tuple[int, ...]]]:
    """Every parameter and buffer outside the decoder stack at ``path``, with its shape."""
    inside = path + "."
    named = (*model.named_parameters(), *model.named_buffers())
    return sorted((n, tuple(t.shape)) for n, t in named if not n.startswith(inside))


def meta_prefix(cfg, model: nn.Module) -> tuple[nn.Module, list[int]] | None:
    """One layer of each distinct structure: the model's shortest prefix of layers holding every
    distinct layer (`layer_fingerprint`), built on meta from the config with only its layer count
    and its per-layer lists cut, and for each of the model's layers the prefix layer standing for
    it. A forward of the prefix reads each layer's cache and FLOPs as the whole model's forward
    does (tests/anatomy/test_reduced.py holds them equal on the presets). None where there is no
    shorter prefix, or the cut changes the layers it keeps, the stack's place, or anything
    outside the layers (a map sized by the layer count)."""
    path, stack = decoder_layers(model)
    prints = [layer_fingerprint(layer) for layer in stack]
    first: dict[tuple, int] = {}
    for i, fp in enumerate(prints):
        first.setdefault(fp, i)
    N, n = len(prints), max(first.values(), default=0) + 1
    if n >= N:
        return None
    try:  # a config whose settings cannot all be read globally (per-layer configs): the whole model
        over = next((o for what, o in _cuts(cfg, N, n, None) if what == f"{n} of {N} layers"), None)
    except Exception:
        return None
    if over is None:
        return None
    try:
        small = type(cfg).from_dict(_config_dict(cfg) | over)
        copy = build_model(small, "meta")
        copy_path, copy_stack = decoder_layers(copy)
    except Exception:  # the class rejects the cut config, or builds it otherwise: the whole model
        return None
    same = copy_path == path and [layer_fingerprint(layer) for layer in copy_stack] == prints[:n]
    if not same or _outside_shapes(copy, path) != _outside_shapes(model, path):
        return None
    return copy, [first[fp] for fp in prints]


def _copy_bytes(model: nn.Module) -> int:
    tensors = {id(t): t for t in (*model.parameters(), *model.buffers())}
    return sum(t.numel() * t.element_size() for t in tensors.values())


def reduced_copy_configs(cfg, model: nn.Module, experts: tuple[int, int] | None):
    """Yield (config of the copy, its description, the copy's layer standing for each of the
    model's layers), most reduced first: each cut whose meta build has the model's first layers
    and fits the cap. BuildRefused (with the reasons) if none does."""
    path, stack = decoder_layers(model)
    prints = [layer_fingerprint(layer) for layer in stack]
    first: dict[tuple, int] = {}
    for i, fp in enumerate(prints):
        first.setdefault(fp, i)
    N, n = len(prints), max(first.values()) + 1
    reasons, found = [], False
    for what, over in _cuts(cfg, N, n, experts[0] if experts else None):
        try:
            small = type(cfg).from_dict(_config_dict(cfg) | over)
            copy = build_model(small, "meta")
            copy_stack = copy.get_submodule(path)
        except (BuildRefused, AttributeError) as exc:
            reasons.append(f"{what}: {exc}")
            continue
        kept = len(copy_stack)
        if [layer_fingerprint(layer) for layer in copy_stack] != prints[:kept] or kept not in (n, N):
            continue  # the cut changed the layers it kept: not the same model
        size = _copy_bytes(copy)
        if size > MAX_REDUCED_BYTES:
            reasons.append(
                f"{what}: {size / 2**30:.1f} GiB, over the {MAX_REDUCED_BYTES / 2**30:.0f} GiB cap"
            )
            continue
        found = True
        yield small, what, [first[fp] for fp in prints] if kept < N else list(range(N))
    if not found:
        raise BuildRefused(
            "no reduced copy fits: " + ("; ".join(reasons[-2:]) or "every cut changes its layers")
        )


def reduced_layer_caches(cfg, model: nn.Module, experts: tuple[int, int] | None) -> ReducedRead:
    """Every layer's cache (as `layer_caches` gives it on meta) from a real forward of a reduced
    copy on the CPU, trying up to MAX_TRIES cuts (a cut of the experts can break group-limited
    routing: DeepSeek's groups of E / n_group); BuildRefused (transformers' reason, the first
    cut's) where none runs."""
    failures = []
    for small, what, standing in itertools.islice(reduced_copy_configs(cfg, model, experts), MAX_TRIES):
        copy = build_model(small, "cpu", initialize=False)
        try:
            caches = layer_caches(copy, max(standing) + 1, device="cpu")
        except CacheAbsent as exc:
            raise CacheAbsent(f"{exc} (on a reduced copy on the CPU: {what})") from None
        except Exception as exc:  # transformers' forward, or the reader on a real cache
            failures.append(f"{_one_line(exc)} (on a reduced copy on the CPU: {what})")
            continue
        finally:
            del copy
        return ReducedRead([caches[j] for j in standing], f"a reduced copy on the CPU: {what}")
    raise BuildRefused(failures[0])
