"""Load a Hugging Face causal LM within caps and recompute its attention maps with attn_core.

Capture: every transformers model of the Llama / Mistral / GPT-2 families calls the module-level
``eager_attention_forward`` of its modeling file with the queries and keys *after* rotary
embedding, the KV heads not yet repeated, its ``scaling`` and (where it has one) its
``sliding_window``. For one forward we wrap that function (a lock keeps two captures apart) and
keep what it received and the probabilities it returned: the model's own numbers.

Recompute: ``attn_core.attention`` in float64 on those q and k with the model's scale, a causal
mask we build ourselves (intersected with the sliding window), and GQA by attn_core's own head
grouping. A model whose attention is something else (ALiBi, soft-capping, learned sinks) shows
its true difference rather than a pass.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

from attn_core.attention import attention
from attn_core.heads import head_metrics, rank_one_distance
from attn_core.heads import uniform_entropy as uniform_entropy  # the page's reference line
from attn_core.masks import causal_mask, sliding_window_mask
from attn_core.oracle import attention_map_tolerance

MAX_PARAMS = 200_000_000  # CPU, float32: 0.8 GB of weights; GPT-2 (124M) and SmolLM-135M fit
MAX_TOKENS = 256
LOAD_CAP_S = 60.0  # a load that took longer is reported as over the cap (it cannot be interrupted)
_CAPTURE_LOCK = threading.Lock()


@dataclass(frozen=True)
class Loaded:
    model: torch.nn.Module
    tokenizer: object | None  # None when the folder has no tokenizer: type token ids instead
    name: str
    n_params: int
    load_s: float
    over_time_cap: bool


class OverCap(ValueError):
    """The model is larger than the page allows."""


def _transformers():
    try:
        import transformers
    except ImportError as exc:  # pragma: no cover - an environment without the optional package
        raise ValueError("the transformers package is not installed on this server") from exc
    return transformers


HUB_HOST = "huggingface.co"
HUB_PROBE_S = 3.0  # seconds to wait for the hub before treating it as unreachable


def hub_reachable(timeout: float = HUB_PROBE_S) -> bool:
    """One TCP connection to the hub: without it transformers retries for ~30 s before failing."""
    try:
        socket.create_connection((HUB_HOST, 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def load(
    source: str, max_params: int = MAX_PARAMS, *, folder: bool | None = None, shown_as: str | None = None
) -> Loaded:
    """A local folder (config.json + weights) or a hub id; eager attention, float32, eval mode.

    ``folder`` says which ``source`` is (None: a folder when one exists there); messages name it
    as ``shown_as`` (what the visitor typed), never by its path on this server. The parameter
    count is read from the config on the meta device before any weight is loaded, so an
    oversized model is refused without reading it. ValueError with the reason otherwise."""
    tf = _transformers()
    source = source.strip()
    if not source:
        raise ValueError("give a local folder or a hub id")
    shown = shown_as if shown_as is not None else source
    local = Path(source).expanduser()
    if folder is None:
        folder = is_folder(local)
        if not folder and (source.startswith(("/", ".", "~")) or source.count("/") > 1):
            raise ValueError(f"there is no folder {shown!r} on this server")  # a path, not an org/name id
    elif folder and not is_folder(local):
        raise ValueError(f"there is no folder {shown!r} on this server")
    where = f"the folder {shown!r}" if folder else f"the hub id {source!r}"
    name = str(local) if folder else source
    start = time.perf_counter()
    # offline: only the local cache is tried (an unreachable hub fails at once instead of retrying)
    offline = {} if folder or hub_reachable() else {"local_files_only": True}
    # A hub id's failure says the same whatever is on this disk: transformers would read a folder
    # of that name in the server's working directory, so such a name is answered as a miss, and
    # transformers' own words (which can name local paths) are not shown for a hub id.
    hub_miss = ValueError(
        f"could not load the hub id {source!r}: "
        + (
            "it is not in this server's cache and the hub is unreachable from here "
            "(a model folder on this server works)"
            if offline
            else "no such model on the hub, or not a causal LM that transformers can read"
        )
    )
    if not folder and is_folder(local):
        raise hub_miss
    try:
        config = tf.AutoConfig.from_pretrained(name, **offline)
        with torch.device("meta"):
            shell = tf.AutoModelForCausalLM.from_config(config)
        n_params = sum(p.numel() for p in shell.parameters())
        if n_params > max_params:
            raise OverCap(f"{n_params:,} parameters: over this page's cap of {max_params:,}")
        model = tf.AutoModelForCausalLM.from_pretrained(
            name,
            attn_implementation="eager",
            dtype=torch.float32,
            use_safetensors=True,  # never unpickle a .bin a folder or a hub repo offers
            **offline,
        )
    except OverCap:
        raise
    except (OSError, ValueError) as exc:  # no config.json, unknown model type, no network, no such repo
        if not folder:
            raise hub_miss from exc
        detail = str(exc).splitlines()[0].replace(name, shown) if str(exc) else type(exc).__name__
        raise ValueError(f"could not load {where}: {detail}") from exc
    model.eval()
    try:
        tokenizer = tf.AutoTokenizer.from_pretrained(name, **offline)
    except (OSError, ValueError, TypeError):
        tokenizer = None
    if tokenizer is not None and len(tokenizer.get_vocab()) < 2:  # built from the model type alone
        tokenizer = None
    load_s = time.perf_counter() - start
    return Loaded(model, tokenizer, shown, n_params, load_s, load_s > LOAD_CAP_S)


def is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder; False (not an error) for a name the OS cannot even look up."""
    try:
        return path.is_dir()
    except (OSError, ValueError):  # a name too long, a NUL byte
        return False


def parse_ids(text: str, vocab_size: int, max_len: int = MAX_TOKENS, cap: int = MAX_TOKENS) -> torch.Tensor:
    """Comma- or space-separated token ids → (1, T); ValueError naming the problem."""
    return check_ids(read_ids(text), vocab_size, max_len, cap)


def read_ids(text: str) -> list[int]:
    """Comma- or space-separated whole numbers → a list (unchecked); ValueError otherwise."""
    try:
        return [int(p) for p in text.replace(",", " ").split()]
    except ValueError as exc:
        raise ValueError("token ids must be whole numbers separated by commas or spaces") from exc


def check_ids(
    ids: list[int], vocab_size: int, max_len: int = MAX_TOKENS, cap: int = MAX_TOKENS
) -> torch.Tensor:
    """(1, T) ids, 1 ≤ T ≤ min(max_len, cap), every id in the vocabulary; else ValueError. ``cap``:
    the page's token cap (MAX_TOKENS here; the long-sequence views pass theirs)."""
    limit = min(max_len, cap)
    if not 1 <= len(ids) <= limit:
        why = "this page's cap" if limit == cap else "the model's positions"
        raise ValueError(f"{len(ids)} tokens: give 1…{limit} ({why})")
    if bad := [i for i in ids if not 0 <= i < vocab_size]:
        raise ValueError(f"token ids {bad[:5]} are outside the vocabulary 0…{vocab_size - 1}")
    return torch.tensor([ids])


@dataclass(frozen=True)
class LayerCapture:
    q: torch.Tensor  # (1, Hq, T, d) after rotary
    k: torch.Tensor  # (1, Hkv, T, d) after rotary, KV heads not repeated
    scale: float
    sliding_window: int | None
    weights: torch.Tensor  # (1, Hq, T, T): the model's own eager probabilities


@contextmanager
def wrapped_attention(model: torch.nn.Module, wrap: Callable[[Callable], Callable]) -> Iterator[None]:
    """While inside, every attention module of ``model`` calls ``wrap(eager_attention_forward)``
    instead of its modeling file's ``eager_attention_forward`` (one capture at a time: a lock)."""
    modules = {type(m).__module__ for m in model.modules() if type(m).__name__.endswith("Attention")}
    targets = [sys.modules[name] for name in modules if hasattr(sys.modules[name], "eager_attention_forward")]
    if not targets:
        raise ValueError(f"{type(model).__name__} has no eager_attention_forward to capture")
    with _CAPTURE_LOCK:
        originals = {m: m.eager_attention_forward for m in targets}
        try:
            for m, f in originals.items():
                m.eager_attention_forward = wrap(f)
            yield
        finally:
            for m, f in originals.items():
                m.eager_attention_forward = f


def capture(model: torch.nn.Module, idx: torch.Tensor) -> tuple[list[LayerCapture], list[torch.Tensor]]:
    """One forward with every layer's eager attention inputs and probabilities recorded; also the
    hidden states (the residual stream before layer 0 and after every layer)."""
    records: list[LayerCapture] = []

    def wrap(original):
        def eager(module, query, key, value, attention_mask, *args, **kwargs):
            out, weights = original(module, query, key, value, attention_mask, *args, **kwargs)
            scale = kwargs.get("scaling")
            records.append(LayerCapture(
                query.detach(), key.detach(), float(scale if scale is not None else query.shape[-1] ** -0.5),
                kwargs.get("sliding_window"), weights.detach(),
            ))  # fmt: skip
            return out, weights

        return eager

    with wrapped_attention(model, wrap), torch.no_grad():
        out = model(idx, output_hidden_states=True, use_cache=False)
    return records, list(out.hidden_states)


def allowed_mask(T: int, sliding_window: int | None) -> torch.Tensor:
    """(T, T) True where query i may read key j: j ≤ i, and i − j < window when there is one."""
    return sliding_window_mask(T, T, sliding_window) if sliding_window else causal_mask(T, T)


def model_positions(config) -> int | None:
    """The positions the model's config allows (learned or rotary); None when it names none."""
    for name in ("max_position_embeddings", "n_positions", "n_ctx"):
        if isinstance(getattr(config, name, None), int):
            return getattr(config, name)
    return None


def max_positions(config, cap: int = MAX_TOKENS) -> int:
    """The longest input the model's config allows (learned or rotary positions), capped."""
    positions = model_positions(config)
    return cap if positions is None else min(positions, cap)


def tolerance(c: LayerCapture) -> float:
    """Float rounding of the model's own computation (``oracle.attention_map_tolerance``), with
    u = the unit roundoff of the dtype the model computed its weights in."""
    return attention_map_tolerance(c.q, c.k, c.scale, torch.finfo(c.weights.dtype).eps / 2)


@dataclass(frozen=True)
class ModelView:
    maps: list[torch.Tensor]  # per layer (Hq, T, T), recomputed by attn_core (float64)
    max_abs_diff: list[float]  # per layer, vs the model's own probabilities
    tol: list[float]
    sink_share: list[float]  # per layer: mean weight on token 0 over heads and rows t ≥ 1
    entropy: list[float]  # per layer, nats: mean over heads and rows t ≥ 1
    rank_one: list[float]  # per hidden state (n_layer + 1): ‖X − 1x̄ᵀ‖_F / ‖X‖_F
    n_kv_heads: int
    head_dim: int
    kv_cache_bytes: int  # K and V of every layer at this length (window-capped), in the model's dtype
    sliding_window: int | None


def recompute(model: torch.nn.Module, idx: torch.Tensor) -> ModelView:
    records, hidden = capture(model, idx)
    maps, diffs, tols, sink, ent = [], [], [], [], []
    for c in records:
        T = c.q.shape[-2]
        q, k = c.q.double(), c.k.double()
        P = attention(q, k, k, allowed_mask(T, c.sliding_window), scale=c.scale).weights[0]  # (Hq, T, T)
        maps.append(P)
        diffs.append(float((P - c.weights[0].double()).abs().max()))
        tols.append(tolerance(c))
        m = head_metrics(P)  # per head; every head has the same rows, so the mean of means
        sink.append(float(m.sink.mean()))
        ent.append(float(m.entropy.mean()))
    first = records[0]
    n_kv, d = first.k.shape[1], first.k.shape[-1]
    T = idx.shape[1]
    # a sliding-window layer keeps only its last `window` tokens' K and V
    kept = sum(min(T, c.sliding_window or T) for c in records)  # token slots over all layers
    return ModelView(
        maps=maps,
        max_abs_diff=diffs,
        tol=tols,
        sink_share=sink,
        entropy=ent,
        rank_one=[float(rank_one_distance(h[0].double())) for h in hidden],
        n_kv_heads=n_kv,
        head_dim=d,
        kv_cache_bytes=2 * kept * n_kv * d * first.k.element_size(),
        sliding_window=first.sliding_window,
    )
