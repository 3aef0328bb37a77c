"""Load a Hugging Face causal LM within caps and recompute its attention maps with attn_core.

Capture: every transformers model hands its queries and keys (after rotary embedding and any
QK-norm, the KV heads not yet repeated) to the attention function registered under its
``config._attn_implementation``, with its ``scaling`` and, where it has them, ``softcap``,
``sliding_window`` and learned sinks ``s_aux``. We register one function there (``use_capture``)
that runs the model's own eager attention and, during a capture, keeps what it received and the
probabilities it returned: the model's own numbers. No table of model types: any model whose
attention goes through the interface is read the same way (a hybrid's attention layers included).

Recompute: ``attn_core.attention`` in float64 on those q and k with the model's scale, soft-cap
and sinks, a causal mask we build ourselves (intersected with the sliding window), and GQA by
attn_core's own head grouping. What the recomputation does not reproduce (an argument it does not
know, a mask of the model's own) is named in ``ModelView.not_reproduced``, and the comparison
with the model's probabilities shows its true difference rather than a pass.
"""

from __future__ import annotations

import math
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError

from attn_core.attention import attention, check_shapes, expand_kv, masked_scores, stable_softmax
from attn_core.heads import head_metrics, rank_one_distance
from attn_core.heads import uniform_entropy as uniform_entropy  # the page's reference line
from attn_core.masks import causal_mask, sliding_window_mask
from attn_core.oracle import attention_map_tolerance

MAX_PARAMS = 200_000_000  # CPU, float32: 0.8 GB of weights; GPT-2 (124M) and SmolLM-135M fit
MAX_TOKENS = 256
LOAD_CAP_S = 60.0  # a load that took longer is reported as over the cap (it cannot be interrupted)


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
    # no config.json, unknown model type, no network, no such repo; a corrupt safetensors header
    except (OSError, ValueError, SafetensorError) as exc:
        if not folder:
            raise hub_miss from exc
        detail = str(exc).splitlines()[0].replace(name, shown) if str(exc) else type(exc).__name__
        raise ValueError(f"could not load {where}: {detail}") from exc
    model.eval()
    use_capture(model)
    try:
        tokenizer = tf.AutoTokenizer.from_pretrained(name, **offline)
    except (OSError, ValueError, TypeError):
        tokenizer = None
    if tokenizer is not None and not has_vocabulary(tokenizer):  # built from the model type alone
        tokenizer = None
    load_s = time.perf_counter() - start
    return Loaded(model, tokenizer, shown, n_params, load_s, load_s > LOAD_CAP_S)


def has_vocabulary(tokenizer) -> bool:
    """Whether a tokenizer has words beyond its special tokens: one that transformers builds from
    the model type alone (a GPT-NeoX folder without tokenizer files) has only those, and would
    read every text as 0 tokens."""
    vocab = tokenizer.get_vocab()
    specials = set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
    return len(vocab) >= 2 and any(i not in specials for i in vocab.values())


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


# Capture: transformers' attention interface
# ----------------------------------------------------------------------------------------------
# Every transformers model hands q, k, v to ``ALL_ATTENTION_FUNCTIONS[config._attn_implementation]``
# (q, k after rotary and QK-norm, the KV heads not repeated, with its ``scaling`` and, where it has
# them, ``softcap``, ``sliding_window`` and learned sinks ``s_aux``). We register one function
# there by name: it runs the model's own eager attention (its modeling file's
# ``eager_attention_forward``) and, in a thread that is recording, hands the call to the recorder
# first. A model is switched to it once (``use_capture``); other threads' forwards pass straight
# through, so one loaded model serves every visitor.

CAPTURE = "attn_lab_capture"
EXPRESSED = ("scaling", "softcap", "sliding_window", "s_aux")  # what the recomputation reproduces
# what the interface also passes that does not change the weights at inference
BOOKKEEPING = frozenset({
    "dropout", "position_ids", "cache_position", "cu_seq_lens_q", "cu_seq_lens_k", "max_length_q",
    "max_length_k", "is_causal", "use_cache", "output_attentions", "past_key_values", "layer_idx",
    "position_embeddings", "output_hidden_states", "return_dict", "token_type_ids", "head_mask",
    "output_router_logits",
})  # fmt: skip
_RECORDING = threading.local()  # .recorder: the current thread's, or absent


def _eager_of(module: torch.nn.Module) -> Callable:
    """The module's own eager attention: ``eager_attention_forward`` of its modeling file."""
    eager = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if eager is None:
        raise ValueError(f"{type(module).__name__} has no eager attention to run: not readable here")
    return eager


def _attend(module, query, key, value, attention_mask, *args, **kwargs):
    eager = _eager_of(module)
    recorder = getattr(_RECORDING, "recorder", None)
    if recorder is None:
        return eager(module, query, key, value, attention_mask, *args, **kwargs)
    return recorder(eager, module, query, key, value, attention_mask, *args, **kwargs)


def use_capture(model: torch.nn.Module) -> None:
    """Register the capture function (and eager's mask for it) and switch ``model`` to it. The
    model computes exactly as with ``attn_implementation="eager"`` when nothing records."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(CAPTURE, _attend)
    AttentionMaskInterface.register(CAPTURE, eager_mask)
    if getattr(model.config, "_attn_implementation", None) != CAPTURE:
        model.set_attn_implementation(CAPTURE)


@contextmanager
def recording(recorder: Callable) -> Iterator[None]:
    """While inside, this thread's attention calls go to ``recorder(eager, module, query, key,
    value, attention_mask, **kwargs)``, which returns what eager would."""
    previous = getattr(_RECORDING, "recorder", None)
    _RECORDING.recorder = recorder
    try:
        yield
    finally:
        _RECORDING.recorder = previous


@dataclass(frozen=True)
class LayerCapture:
    layer: int  # the decoder layer (a hybrid's attention layers are not every layer)
    q: torch.Tensor  # (1, Hq, T, d) after rotary
    k: torch.Tensor  # (1, Hkv, T, d) after rotary, KV heads not repeated
    scale: float
    sliding_window: int | None
    softcap: float | None  # scores become softcap · tanh(S / softcap) before the mask
    sinks: torch.Tensor | None  # (Hq,) learned sink logits: a column in the softmax, then dropped
    own_allowed: torch.Tensor | None  # (T, T) where the model's own mask lets query i read key j
    unexpressed: tuple[str, ...]  # what the model added that the recomputation does not reproduce
    weights: torch.Tensor  # (1, Hq, T, T): the model's own eager probabilities


def _allowed_of(mask: torch.Tensor | None) -> torch.Tensor | None:
    """The model's own mask as (T, T) bool, True = may attend (an additive float mask or a bool one)."""
    if mask is None or not isinstance(mask, torch.Tensor) or mask.ndim != 4:
        return None
    m = mask[0, 0]
    return m if m.dtype == torch.bool else m > torch.finfo(m.dtype).min / 2


def _unexpressed(module: torch.nn.Module, kwargs: dict) -> tuple[str, ...]:
    odd = [
        name for name, value in kwargs.items()
        if value is not None and name not in EXPRESSED and name not in BOOKKEEPING
    ]  # fmt: skip
    if module.training and kwargs.get("dropout"):
        odd.append("dropout")
    return tuple(odd)


def _record(module, query, key, attention_mask, kwargs, weights, order: int) -> LayerCapture:
    """What one call received; ``order``: how many calls came before (the layer, for a module
    that does not carry its ``layer_idx``)."""
    scale = kwargs.get("scaling")
    layer = getattr(module, "layer_idx", None)
    sinks = kwargs.get("s_aux")
    softcap = kwargs.get("softcap")
    return LayerCapture(
        layer=layer if isinstance(layer, int) else order,
        q=query.detach(),
        k=key.detach(),
        scale=float(scale if scale is not None else query.shape[-1] ** -0.5),
        sliding_window=int(kwargs["sliding_window"]) if kwargs.get("sliding_window") else None,
        softcap=float(softcap) if softcap else None,
        sinks=None if sinks is None else sinks.detach().reshape(-1),
        own_allowed=_allowed_of(attention_mask),
        unexpressed=_unexpressed(module, kwargs),
        weights=weights.detach(),
    )


def capture(model: torch.nn.Module, idx: torch.Tensor) -> tuple[list[LayerCapture], list[torch.Tensor]]:
    """One forward with every attention layer's inputs and eager probabilities recorded; also the
    hidden states (the residual stream before layer 0 and after every layer). ValueError when no
    layer's attention went through the interface."""
    use_capture(model)
    records: list[LayerCapture] = []

    def recorder(eager, module, query, key, value, attention_mask, *args, **kwargs):
        out, weights = eager(module, query, key, value, attention_mask, *args, **kwargs)
        records.append(_record(module, query, key, attention_mask, kwargs, weights, len(records)))
        return out, weights

    with recording(recorder), torch.no_grad():
        out = model(idx, output_hidden_states=True, use_cache=False)
    if not records:
        raise ValueError(
            f"{type(model).__name__}'s attention does not go through transformers' attention interface: "
            "not readable here"
        )
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


def recompute_weights(c: LayerCapture) -> torch.Tensor:
    """The layer's weights (Hq, T, T) from its q and k in float64 with ``attn_core.attention``:
    S = Q Kᵀ · scale (GQA by head grouping), soft-capped where the model caps, blocked outside our
    own causal (sliding-window) mask, softmax over the keys and the learned sink column, which is
    then dropped (gpt-oss: P = e^S / (Σ e^S + e^sink))."""
    q, k = c.q.double(), c.k.double()
    T = q.shape[-2]
    allowed = allowed_mask(T, c.sliding_window)
    if c.softcap is None and c.sinks is None:
        return attention(q, k, k, allowed, scale=c.scale).weights[0]
    group = check_shapes(q, k, k)
    S, _ = masked_scores(q, expand_kv(k, group), scale=c.scale)  # (1, Hq, T, T), unmasked
    if c.softcap is not None:
        S = c.softcap * torch.tanh(S / c.softcap)  # capped before the mask, as the models do
    S = S.masked_fill(~allowed, -math.inf)
    if c.sinks is not None:
        sink = c.sinks.double().view(1, -1, 1, 1).expand(*S.shape[:-1], 1)
        return stable_softmax(torch.cat([S, sink], -1))[0, ..., :T]
    return stable_softmax(S)[0]


def features(c: LayerCapture) -> list[str]:
    """What the recomputation reproduced on this layer beyond plain causal softmax(Q Kᵀ · scale)."""
    found = [f"GQA {c.q.shape[1]}:{c.k.shape[1]}"] if c.q.shape[1] != c.k.shape[1] else []
    if c.sliding_window:
        found.append(f"sliding window {c.sliding_window}")
    if c.softcap:
        found.append(f"soft-capping {c.softcap:g}")
    if c.sinks is not None:
        found.append("learned sinks")
    return found


def not_reproduced(c: LayerCapture) -> list[str]:
    """What the model does that the recomputation does not: extra arguments, or a mask of its own
    other than the causal (sliding-window) one we build."""
    missing = [f"the argument {name!r}" for name in c.unexpressed]
    T = c.q.shape[-2]
    own = c.own_allowed
    if own is not None and (own.shape != (T, T) or not torch.equal(own, allowed_mask(T, c.sliding_window))):
        missing.append("the model's own mask (not causal within its window)")
    return missing


@dataclass(frozen=True)
class ModelView:
    layers: list[int]  # the decoder layer of each map (a hybrid's attention layers only)
    maps: list[torch.Tensor]  # per attention layer (Hq, T, T), recomputed by attn_core (float64)
    max_abs_diff: list[float]  # per layer, vs the model's own probabilities
    tol: list[float]
    sink_share: list[float]  # per layer: mean weight on token 0 over heads and rows t ≥ 1
    entropy: list[float]  # per layer, nats: mean over heads and rows t ≥ 1
    rank_one: list[float]  # per hidden state (n_layer + 1): ‖X − 1x̄ᵀ‖_F / ‖X‖_F
    n_kv_heads: int
    head_dim: int
    kv_cache_bytes: int  # K and V of every layer at this length (window-capped), in the model's dtype
    sliding_window: int | None
    features: list[str]  # reproduced beyond plain attention, over all layers (GQA, window, sinks, …)
    not_reproduced: list[str]  # what no map accounts for, over all layers: empty for a green badge
    n_decoder_layers: int


def recompute(model: torch.nn.Module, idx: torch.Tensor) -> ModelView:
    records, hidden = capture(model, idx)
    maps, diffs, tols, sink, ent = [], [], [], [], []
    found: dict[str, None] = {}
    missing: dict[str, None] = {}
    for c in records:
        P = recompute_weights(c)  # (Hq, T, T)
        maps.append(P)
        diffs.append(float((P - c.weights[0].double()).abs().max()))
        tols.append(tolerance(c))
        m = head_metrics(P)  # per head; every head has the same rows, so the mean of means
        sink.append(float(m.sink.mean()))
        ent.append(float(m.entropy.mean()))
        found.update(dict.fromkeys(features(c)))
        missing.update(dict.fromkeys(f"layer {c.layer}: {what}" for what in not_reproduced(c)))
    first = records[0]
    n_kv, d = first.k.shape[1], first.k.shape[-1]
    T = idx.shape[1]
    # a sliding-window layer keeps only its last `window` tokens' K and V
    kept = sum(min(T, c.sliding_window or T) for c in records)  # token slots over all layers
    return ModelView(
        layers=[c.layer for c in records],
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
        features=list(found),
        not_reproduced=list(missing),
        n_decoder_layers=len(hidden) - 1,
    )
