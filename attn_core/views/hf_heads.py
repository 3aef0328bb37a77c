"""The Real-model heads page in three calls: load a Hugging Face causal LM (the shipped pretrained
SmolLM2-135M by default, the seeded random demo, or a folder or hub id), recompute its maps on the
visitor's text with attn_core and check them against the model's own probabilities, and score
every head on the standard probe. SmolLM2 and the demo are loaded once per server process and
shared; other sources are cached for the last few."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass

import torch

from attn_core.cost.limits import MAX_CONFIG_CHARS
from attn_core.heads import uniform_entropy
from attn_core.hf import loading as hf
from attn_core.hf import shipped
from attn_core.hf.attention_maps import ModelView, recompute
from attn_core.hf.demo import build_demo
from attn_core.hf.folders import MODEL_DIRS_ENV, resolve_local
from attn_core.hf.loading import LOAD_CAP_S, MAX_PARAMS, Loaded
from attn_core.hf.probe import SCORES, ProbeScores, probe
from attn_core.hf.token_ids import MAX_TOKENS, check_ids, max_positions, parse_ids

__all__ = [  # what the page reads (the page import rule: tests/pages/test_page_shape.py)
    "DEMO",
    "DEMO_LABEL",
    "DEMO_TEXT",
    "LOAD_CAP_S",
    "MAX_PARAMS",
    "MAX_TOKENS",
    "MODEL_DIRS_ENV",  # where this server's model folders are named (the page's tests set it)
    "SCORES",
    "SHIPPED",
    "SHIPPED_LABEL",
    "SHIPPED_ORIGIN",
    "SHIPPED_TEXT",
    "TRIED",
    "HFView",
    "default_ids",
    "head_probe",
    "hf_view",
    "ids_fit",
    "load",
    "shipped_cached",
    "shipped_loaded",
]

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

_CACHE: dict[str, Loaded] = {}  # the last MAX_CACHED user models, oldest first
MAX_CACHED = 2

# SmolLM2 and the demo: each loaded by its first visitor and kept for the server process, by source
# id (a progress callback follows that first load and is never part of the key)
_KEPT: dict[str, Loaded] = {}
_KEPT_LOCKS = {SHIPPED: threading.Lock(), DEMO: threading.Lock()}  # others wait, then share


def _demo(progress: Callable[[float, str], None] | None = None) -> Loaded:
    """The seeded random Mistral-style model of ``attn_core.hf.demo`` with this page's positions."""
    return build_demo(MAX_TOKENS, DEMO_LABEL)


_KEEPERS = {SHIPPED: shipped.load_shipped, DEMO: _demo}  # source id → its loader (progress)


def _kept(source: str, progress: Callable[[float, str], None] | None) -> Loaded:
    """The kept model for ``source`` (SHIPPED or DEMO), loaded once per process."""
    if (hit := _KEPT.get(source)) is not None:
        return hit
    with _KEPT_LOCKS[source]:
        if source not in _KEPT:
            _KEPT[source] = _KEEPERS[source](progress)
        return _KEPT[source]


def shipped_loaded() -> bool:
    """Whether SmolLM2 is already in this process (the page shows a progress bar otherwise)."""
    return SHIPPED in _KEPT


def shipped_cached() -> bool:
    """Whether SmolLM2's de-quantized cache is on this machine (its load takes seconds, not a minute)."""
    return shipped.cached()


def load(source: str, progress: Callable[[float, str], None] | None = None) -> Loaded:
    """The model for ``source`` (SHIPPED, DEMO, a local folder under a model root — see
    ``attn_core.hf.folders`` — or a hub id); ValueError with the reason. ``progress(fraction,
    stage)`` follows the shipped model's first load.

    A cached model is returned without waiting; only a new load takes the lock, so a visitor
    loading a large model never holds up visitors reading one already loaded."""
    source = source.strip()
    if source in _KEEPERS:
        return _kept(source, progress)
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


@dataclass(frozen=True)
class HFView:
    tokens: list[str]
    view: ModelView
    worst_layer: int  # the layer whose max |Δ| / tolerance is largest
    layer_rows: list[dict]
    uniform_entropy: float  # nats: a causal head that spreads evenly, on this length
    config_json: str | None  # compact config.json for the Cost calculator (None: too long to paste)
    n_layers: int  # attention layers read (a hybrid's linear layers have no map)
    oracle: str  # what the badge compares: the recomputation with the features it reproduced


def tokens_of(loaded: Loaded, text: str) -> tuple[torch.Tensor, list[str]]:
    """Tokenize with the model's tokenizer, or read token ids when it has none."""
    vocab, longest = loaded.model.config.vocab_size, max_positions(loaded.model.config)
    if loaded.tokenizer is None:
        idx = parse_ids(text, vocab, longest)
        return idx, [str(i) for i in idx[0].tolist()]
    ids = loaded.tokenizer(text)["input_ids"]
    idx = check_ids(list(ids), vocab, longest)
    return idx, [loaded.tokenizer.decode([i]) for i in ids]


def default_ids(loaded: Loaded) -> str:
    """The ids a model without a tokenizer opens on: DEMO_TEXT's, each modulo its vocabulary
    (the demo's own ids for the demo), cut to its positions."""
    vocab, longest = loaded.model.config.vocab_size, max_positions(loaded.model.config)
    return " ".join(str(int(i) % vocab) for i in DEMO_TEXT.split()[:longest])


def ids_fit(loaded: Loaded, text: str) -> bool:
    """Whether ``text`` is a valid input for ``loaded`` (its tokenizer's, or ids in its vocabulary
    and positions)."""
    try:
        tokens_of(loaded, text)
    except ValueError:
        return False
    return True


def hf_view(loaded: Loaded, text: str) -> HFView:
    idx, tokens = tokens_of(loaded, text)
    view = recompute(loaded.model, idx)
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


def head_probe(loaded: Loaded) -> ProbeScores:
    """Every head's induction, previous-token and sink scores on the standard probe
    (``attn_core.hf.probe``): BOS (the tokenizer's, else the config's) + random ids, twice."""
    bos = getattr(loaded.tokenizer, "bos_token_id", None) if loaded.tokenizer is not None else None
    if bos is None:
        bos = getattr(loaded.model.config, "bos_token_id", None)
    return probe(loaded.model, bos if isinstance(bos, int) else None)
