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

Loading within caps is ``loading``, the capture ``capture``, token ids ``token_ids``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_core.attention import attention, check_shapes, expand_kv, masked_scores, stable_softmax
from attn_core.heads import head_metrics, rank_one_distance
from attn_core.hf.capture import LayerCapture, capture
from attn_core.masks import causal_mask, sliding_window_mask
from attn_core.oracle import attention_map_tolerance


def allowed_mask(T: int, sliding_window: int | None) -> torch.Tensor:
    """(T, T) True where query i may read key j: j ≤ i, and i − j < window when there is one."""
    return sliding_window_mask(T, T, sliding_window) if sliding_window else causal_mask(T, T)


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
