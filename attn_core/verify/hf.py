"""transformers' own layers for a check: the named model's config cut to the layers the plan
picked (and, for a mixture of experts over the cap, fewer routed experts, same k and expert
shape), built by transformers at true shapes with random weights (its own ``_init_weights``),
and run through the model's own forward with the cache object that forward makes.

What is built is the base model the causal LM wraps, with those layers: the token embeddings
(and, where the model has them, Gemma's per-layer embeddings), the layers, the final norm — all
in ``params_built`` and in the planned peak. The output head is neither built nor run (the cost
model counts the layers); the embeddings are, at their true size, so a large vocabulary needs a
larger memory cap (Llama 3's 128,256 × 4,096 table is 2 GiB in fp32). transformers runs its torch fallbacks
for the linear-attention and state-space cores on a CPU (the CUDA kernels are optional there).

A config transformers cannot build — one that needs remote code (``auto_map``), a model_type it
does not have, a value it rejects — is built by the lab's own layers (`layers`) from the cost
model's reading, and says why (``HFBuild.reason``)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from attn_core.anatomy.build import LAYER_KEYS, BuildRefused, causal_lm_class, quiet, text_config

# A list of layer indices (not one entry per layer) is named so: Qwen's ``mlp_only_layers``,
# LFM2's ``full_attn_idxs``. Any other list (or pattern string) with one entry per layer is cut.
_INDEX_SUFFIXES = ("_idxs", "_indices", "_only_layers", "_layer_ids", "_layers_idx")
_PATTERN_KEYS = ("hybrid_override_pattern", "block_pattern", "layers_block_type")
_NOT_EXPERT_COUNT = re.compile(r"per_tok|top_?k|shared|size|dim|group", re.I)


def layer_count(cfg) -> int:
    """The layers transformers builds from ``cfg`` (its ``num_hidden_layers`` or kin)."""
    for key in LAYER_KEYS:
        v = getattr(cfg, key, None)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    raise BuildRefused("the config names no layer count transformers reads")


def _per_layer(name: str, value, n: int) -> bool:
    """A list with one entry per layer (a two-entry list of two layers only by its name)."""
    named = any(w in name for w in ("layer", "pattern", "type", "block"))
    return isinstance(value, list | tuple) and len(value) == n and (n >= 3 or named)


def _is_index_list(name: str, value, n: int) -> bool:
    return (
        name.endswith(_INDEX_SUFFIXES)
        and isinstance(value, list)
        and all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n for i in value)
    )


def _index(key, n: int) -> bool:
    text = str(key)
    return text.isdigit() and int(text) < n


def expert_count_keys(d: Mapping[str, Any], E: int) -> tuple[str, ...]:
    """The settings of the config ``d`` that hold its E routed experts per MoE layer (E as the
    build's module tree shows it): integers equal to E named for experts, the top-k and the shared
    experts aside (``num_experts``, ``num_local_experts``, ``n_routed_experts``, …)."""
    return tuple(
        key
        for key, v in d.items()
        if "expert" in key
        and not _NOT_EXPERT_COUNT.search(key)
        and isinstance(v, int)
        and not isinstance(v, bool)
        and v == E
    )


def cut_config_dict(
    d: Mapping[str, Any], n: int, picked: Sequence[int], experts: tuple[int, int] | None
) -> dict[str, Any]:
    """The config (transformers' completed dict, of ``n`` layers) of the layers ``picked`` in
    order: the layer count, every per-layer list or pattern string cut to them, every list of
    layer indices renumbered, Gemma's KV-sharing layers counted among them; ``experts`` (E of the
    model, E built): the routed experts set (`expert_count_keys`), BuildRefused where no key holds E."""
    out = dict(d)
    for key in LAYER_KEYS:
        if isinstance(d.get(key), int) and not isinstance(d.get(key), bool):
            out[key] = len(picked)
    where = {old: new for new, old in enumerate(picked)}
    for name, value in d.items():
        if _is_index_list(name, value, n):
            out[name] = [where[i] for i in value if i in where]
        elif _per_layer(name, value, n):
            out[name] = [value[i] for i in picked]
        elif name in _PATTERN_KEYS and isinstance(value, str) and len(value) == n:
            out[name] = "".join(value[i] for i in picked)
        elif "layer" in name and isinstance(value, Mapping) and value and all(_index(k, n) for k in value):
            # a sparse map by layer index (Gemma 4's per_layer_config: its global layers' head width)
            out[name] = {where[int(k)]: v for k, v in value.items() if int(k) in where}
    shared = d.get("num_kv_shared_layers")
    if isinstance(shared, int) and shared > 0:  # the last ``shared`` layers reuse earlier layers' KV
        out["num_kv_shared_layers"] = sum(1 for i in picked if i >= n - shared)
    if experts is not None and experts[0] != experts[1]:
        keys = expert_count_keys(d, experts[0])
        if not keys:
            raise BuildRefused(f"no config key holds its {experts[0]:,} routed experts: they cannot be cut")
        out |= dict.fromkeys(keys, experts[1])
    return out


@dataclass(frozen=True)
class HFBuild:
    """Whether transformers builds this config here: its text config (``cfg``) or the reason not."""

    cfg: Any  # a transformers PretrainedConfig, or None
    reason: str | None  # why the lab's own layers are built instead

    @property
    def buildable(self) -> bool:
        return self.cfg is not None


def hf_build(config: Mapping[str, Any] | None) -> HFBuild:
    """transformers' text config for ``config`` if it builds a causal LM from it on a CPU; else
    the reason (no config, remote code, transformers' own refusal)."""
    if config is None:
        return HFBuild(None, "no config.json was given (a shape alone): the lab's layers are built")
    if "auto_map" in config:
        return HFBuild(
            None, "the config needs remote code (auto_map), not run here: the lab's layers are built"
        )
    try:
        cfg = text_config(config)
        causal_lm_class(cfg)
    except BuildRefused as exc:
        return HFBuild(None, f"{exc}: the lab's layers are built")
    return HFBuild(cfg, None)


def cut_config(cfg, picked: Sequence[int], experts: tuple[int, int] | None):
    """A new config of ``cfg``'s class for the layers ``picked`` and ``experts`` (E of the model,
    E built; see `cut_config_dict`)."""
    d = cut_config_dict(cfg.to_dict(), layer_count(cfg), picked, experts)
    d.pop("model_type", None)
    d.pop("transformers_version", None)
    try:
        with quiet():
            cut = type(cfg)(**d)
    except Exception as exc:
        raise BuildRefused(f"transformers rejects the config cut to {len(picked)} layers: {exc}") from None
    kinds = getattr(cfg, "layer_types", None)
    per_layer = isinstance(kinds, list) and len(kinds) == layer_count(cfg)
    if per_layer and list(getattr(cut, "layer_types", None) or []) != [kinds[i] for i in picked]:
        # Gemma 4 makes its last layer global whatever the config says
        raise BuildRefused(f"transformers changes the layer kinds of layers {list(picked)} when built alone")
    return cut


def hf_source(config: Mapping[str, Any], n_layers: int):
    """(transformers' text config, None) where transformers builds ``config`` with the
    ``n_layers`` layers the cost model read; else (None, why the lab's layers are built)."""
    built = hf_build(config)
    if not built.buildable:
        return None, built.reason
    n = layer_count(built.cfg)
    if n != n_layers:
        return None, (
            f"transformers builds {n} layers where the cost model reads {n_layers}: the lab's layers are built"
        )
    return built.cfg, None


def keeps_kinds(cfg, picked: Sequence[int]) -> bool:
    """Whether transformers builds the layers ``picked`` of ``cfg`` as they are in the model."""
    try:
        cut_config(cfg, picked, None)
    except BuildRefused:
        return False
    return True


def _attn(cls) -> str:
    return "sdpa" if cls._supports_sdpa else "eager"


def eager(cut) -> bool:
    """Whether transformers runs this model's attention eagerly (no SDPA path): B·H·T·S weights."""
    return _attn(causal_lm_class(cut)) == "eager"


@functools.lru_cache(maxsize=256)
def _meta_counts(cls_name: str, key: str) -> tuple[int, int, int]:
    from transformers import AutoConfig

    d = json.loads(key)
    cfg = AutoConfig.for_model(d.pop("model_type"), **d)
    model = _build(cfg, torch.float32, "meta")
    params = sum(p.numel() for p in model.parameters())
    largest = max((p.numel() for p in model.parameters()), default=0)
    return params, params + sum(b.numel() for b in model.buffers()), largest


def _counts(cut) -> tuple[int, int, int]:
    d = cut.to_dict()
    d["model_type"] = cut.model_type
    return _meta_counts(type(cut).__name__, json.dumps(d, sort_keys=True, default=str))


def built_params(cut) -> int:
    """Parameters of transformers' base model of ``cut``, read from its meta build."""
    return _counts(cut)[0]


def built_numel(cut) -> int:
    """Parameters and buffers of that model: what `build_model` allocates (× the dtype's bytes).
    Both cached by config content (the plan asks once per layer set and expert count)."""
    return _counts(cut)[1]


def largest_numel(cut) -> int:
    """The largest parameter of that model: the build held one more copy of it for a moment
    (Gemma 4's causal LM, its 262,144-row embedding: +1.125 GiB in bf16, a head made then tied)."""
    return _counts(cut)[2]


def base_class(cut):
    """The class of the base model the causal LM wraps (embeddings, layers, final norm; no head)."""
    cls = causal_lm_class(cut)
    cut._attn_implementation = _attn(cls)
    try:
        with quiet(), torch.device("meta"):
            return type(decoder(cls._from_config(cut)))
    except Exception as exc:
        raise BuildRefused(f"transformers cannot build it: {exc}") from None


def _build(cut, dtype: torch.dtype, device: str):
    cls = base_class(cut)
    try:
        with quiet(), torch.device(device):
            model = cls._from_config(cut, dtype=dtype)
    except Exception as exc:
        raise BuildRefused(f"transformers cannot build it: {exc}") from None
    return model.eval()


def build_model(cut, dtype: torch.dtype, device: str, seed: int = 0):
    """transformers' base model of ``cut`` on ``device`` in ``dtype``, random weights (its own
    initialisation, seeded)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _build(cut, dtype, device)


def decoder(model):
    """The base model (embeddings, layers, final norm) that the causal LM wraps: what is timed."""
    base = getattr(model, "model", None)
    return base if isinstance(base, torch.nn.Module) else model.base_model


def warm_up(cut) -> None:
    """Import what a forward of ``cut`` imports (its modeling module, masks, fallbacks) by
    building it on the meta device and running two tokens through it there."""
    model = _build(cut, torch.float32, "meta")
    ids = torch.zeros(1, 2, dtype=torch.long, device="meta")
    try:
        with quiet(), torch.inference_mode():
            out = decoder(model)(input_ids=ids, use_cache=True)
            decoder(model)(input_ids=ids[:, :1], past_key_values=_cache(out), use_cache=True)
    except Exception:  # a forward that does not run on meta warms up in the run itself
        pass


def _cache(out):
    cache = getattr(out, "past_key_values", None)
    return cache if cache is not None else getattr(out, "cache_params", None)


def measure_hf(model, request, device: str, time_call, repeats: int) -> tuple[list, list]:
    """([(s, wall s)] of ``repeats`` prefills, [(s, wall s)] of each decode step) of transformers' base
    model: B × T random token ids, then M single tokens on the cache the prefill made."""
    base = decoder(model)
    vocab = base.get_input_embeddings().weight.shape[0]
    B, T, M = request.batch, request.seq_len, request.decode_steps
    with torch.random.fork_rng(devices=[]), torch.inference_mode(), quiet():
        torch.manual_seed(1)
        ids = torch.randint(0, vocab, (B, T), device=device)
        steps = torch.randint(0, vocab, (M, B, 1), device=device)
        holder: list = [None]

        def prefill():
            holder[0] = _cache(base(input_ids=ids, use_cache=True))

        prefills = [time_call(prefill, device) for _ in range(repeats)]
        cache = holder[0]
        decode = [
            time_call(lambda i=i: base(input_ids=steps[i], past_key_values=cache, use_cache=True), device)
            for i in range(M)
        ]
    return prefills, decode
