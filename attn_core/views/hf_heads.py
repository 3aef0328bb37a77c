"""The Real-model heads page in three calls: load a Hugging Face causal LM (the shipped pretrained
SmolLM2-135M by default, the seeded random demo, or a folder or hub id), recompute its maps on the
visitor's text with attn_core and check them against the model's own probabilities, and score
every head on the standard probe. SmolLM2 and the demo are loaded once per server process and
shared; other sources are cached for the last few."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch

from attn_core.cost.limits import MAX_CONFIG_CHARS
from attn_core.heads import uniform_entropy
from attn_core.hf import attention_maps as hf
from attn_core.hf import shipped
from attn_core.hf.attention_maps import LOAD_CAP_S as LOAD_CAP_S  # re-exported for the page
from attn_core.hf.attention_maps import MAX_PARAMS as MAX_PARAMS
from attn_core.hf.attention_maps import MAX_TOKENS as MAX_TOKENS
from attn_core.hf.demo import build_demo
from attn_core.hf.probe import SCORES as SCORES  # re-exported for the page
from attn_core.hf.probe import ProbeScores, probe

DEMO = "demo"
SHIPPED = "smollm2"
SHIPPED_LABEL = shipped.NAME
SHIPPED_ORIGIN = shipped.ORIGIN
SHIPPED_TEXT = "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog."
TRIED = (
    "SmolLM2-135M-Instruct, and tiny random checkpoints of Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3, "
    "Phi-3, OLMo 2, Granite, GPT-2, GPT-NeoX, gpt-oss and Qwen3-Next"
)  # the architectures tests/hf/test_architectures.py opens
DEMO_LABEL = "a tiny random Mistral-style model built here (GQA 4:2, rotary, sliding window 8)"
DEMO_TEXT = "3 14 15 92 65 35 89 79 32 38 46 26 43 38 32 79"
_LOCK = threading.Lock()  # one new load at a time on the server: loads are the expensive part


MODEL_DIRS_ENV = "ATTN_LAB_MODEL_DIRS"  # os.pathsep-separated folders a visitor may load from


def model_roots() -> list[Path]:
    """The only folders whose models a visitor may load from this server: the Hugging Face cache
    and ./models by default, or those ATTN_LAB_MODEL_DIRS names. Anything else on the disk is
    not the visitor's to read, nor to probe for (the refusal is the same whether it exists)."""
    named = os.environ.get(MODEL_DIRS_ENV, "")
    roots = named.split(os.pathsep) if named else ["~/.cache/huggingface", "models"]
    return [Path(r).expanduser().resolve() for r in roots if r]


MAX_SOURCE_CHARS = 200  # a hub id is at most 96 + 1 + 96 characters; a folder name under a root is shorter
REFUSAL = (
    "this server loads local models only from its model folders (the Hugging Face cache and ./models, "
    "or the folders ATTN_LAB_MODEL_DIRS names), or a hub id such as gpt2 or org/name"
)


def resolve_local(source: str) -> Path | None:
    """The folder under one of model_roots() that ``source`` names, or None for a hub id.

    Decided by the name alone, never by what exists: a path (starting with /, . or ~, or with
    more than one /) must lie under a model root, else the same refusal whether it exists or not;
    a name or org/name is a folder only where it lies under a root, a hub id everywhere else. No
    message names a path on this server."""
    if len(source) > MAX_SOURCE_CHARS:
        raise ValueError(f"a model folder or hub id is at most {MAX_SOURCE_CHARS} characters")
    if "\x00" in source:
        raise ValueError(REFUSAL)
    resolved = Path(os.path.realpath(os.path.expanduser(source)))
    under_root = any(resolved == root or root in resolved.parents for root in model_roots())
    if source.startswith(("/", ".", "~")) or source.count("/") > 1:
        if not under_root:
            raise ValueError(REFUSAL)
        return resolved
    return resolved if under_root and hf.is_folder(resolved) else None


_CACHE: dict[str, hf.Loaded] = {}  # the last MAX_CACHED user models, oldest first
MAX_CACHED = 2


def load(source: str, progress: Callable[[float, str], None] | None = None) -> hf.Loaded:
    """The model for ``source`` (SHIPPED, DEMO, a local folder or a hub id); ValueError with the
    reason. ``progress(fraction, stage)`` follows the shipped model's first load.

    A cached model is returned without waiting; only a new load takes the lock, so a visitor
    loading a large model never holds up visitors reading one already loaded."""
    source = source.strip()
    if source == DEMO:
        return _demo()
    if source == SHIPPED:
        return load_shipped(progress)
    folder = resolve_local(source)
    if (hit := _CACHE.get(source)) is not None:
        return hit
    with _LOCK:
        if source not in _CACHE:
            path = str(folder) if folder is not None else source
            loaded = hf.load(path, folder=folder is not None, shown_as=source)
            while len(_CACHE) >= MAX_CACHED:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[source] = loaded
        return _CACHE[source]


_SHIPPED: list[hf.Loaded] = []  # SmolLM2, once per server process
_SHIPPED_LOCK = threading.Lock()


def shipped_loaded() -> bool:
    """Whether SmolLM2 is already in this process (the page shows a progress bar otherwise)."""
    return bool(_SHIPPED)


def load_shipped(progress: Callable[[float, str], None] | None = None) -> hf.Loaded:
    """SmolLM2-135M-Instruct (``attn_core.hf.shipped``), loaded by the first visitor and shared:
    others wait on the lock, then read the same model."""
    if _SHIPPED:
        return _SHIPPED[0]
    with _SHIPPED_LOCK:
        if not _SHIPPED:
            _SHIPPED.append(shipped.load_shipped(progress))
        return _SHIPPED[0]


@cache
def _demo() -> hf.Loaded:
    """The seeded random Mistral-style model of ``attn_core.hf.demo`` with this page's positions."""
    return build_demo(hf.MAX_TOKENS, DEMO_LABEL)


@dataclass(frozen=True)
class HFView:
    tokens: list[str]
    view: hf.ModelView
    worst_layer: int  # the layer whose max |Δ| / tolerance is largest
    layer_rows: list[dict]
    uniform_entropy: float  # nats: a causal head that spreads evenly, on this length
    config_json: str | None  # compact config.json for the Cost calculator (None: too long to paste)
    n_layers: int  # attention layers read (a hybrid's linear layers have no map)
    oracle: str  # what the badge compares: the recomputation with the features it reproduced


def tokens_of(loaded: hf.Loaded, text: str) -> tuple[torch.Tensor, list[str]]:
    """Tokenize with the model's tokenizer, or read token ids when it has none."""
    vocab, longest = loaded.model.config.vocab_size, hf.max_positions(loaded.model.config)
    if loaded.tokenizer is None:
        idx = hf.parse_ids(text, vocab, longest)
        return idx, [str(i) for i in idx[0].tolist()]
    ids = loaded.tokenizer(text)["input_ids"]
    idx = hf.check_ids(list(ids), vocab, longest)
    return idx, [loaded.tokenizer.decode([i]) for i in ids]


def hf_view(loaded: hf.Loaded, text: str) -> HFView:
    idx, tokens = tokens_of(loaded, text)
    view = hf.recompute(loaded.model, idx)
    ratios = [d / t for d, t in zip(view.max_abs_diff, view.tol, strict=True)]
    rows = [
        {
            "layer": view.layers[i],
            "sink share": view.sink_share[i],
            "entropy, nats": view.entropy[i],
            "rank-1 distance after": view.rank_one[view.layers[i] + 1],
            "max |Δ| vs the model": view.max_abs_diff[i],
            "tolerance": view.tol[i],
        }
        for i in range(len(view.maps))
    ]
    # the name the visitor knows, never where the weights sit on this server
    fields = loaded.model.config.to_dict() | {"_name_or_path": loaded.name}
    config = json.dumps(fields, separators=(",", ":"), default=str)
    return HFView(
        tokens=tokens,
        view=view,
        worst_layer=max(range(len(ratios)), key=ratios.__getitem__),
        layer_rows=rows,
        uniform_entropy=uniform_entropy(len(tokens)),
        config_json=config if len(config) <= MAX_CONFIG_CHARS else None,  # fits the Cost page's box
        n_layers=len(view.maps),
        oracle="attn_core.attention"
        + (f" ({', '.join(view.features)})" if view.features else "")
        + " vs the model's own eager probabilities",
    )


def head_probe(loaded: hf.Loaded) -> ProbeScores:
    """Every head's induction, previous-token and sink scores on the standard probe
    (``attn_core.hf.probe``): BOS (the tokenizer's, else the config's) + random ids, twice."""
    bos = getattr(loaded.tokenizer, "bos_token_id", None) if loaded.tokenizer is not None else None
    if bos is None:
        bos = getattr(loaded.model.config, "bos_token_id", None)
    return probe(loaded.model, bos if isinstance(bos, int) else None)
