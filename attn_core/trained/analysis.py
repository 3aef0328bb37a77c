"""What each head of a trained model does: scores on its attention patterns, ablation, circuits.

The scores (previous-token, induction, sink share, entropy) are the head metrics of
``attn_core.heads``, shared with the Hugging Face page; here they are read on a probe of
held-out repeated random sequences and averaged per (layer, head).

The two circuits (lesson, "two circuits"; Elhage et al. 2021), per head, over the vocabulary:
QK = W_E W_Q W_Kᵀ W_Eᵀ / √hs (which key token a query token looks at) and
OV = W_E W_V W_O W_U (what reading a token adds to each output logit).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

import torch

from attn_core.attention import attention
from attn_core.dtypes import UNIT_ROUNDOFF
from attn_core.heads import head_metrics
from attn_core.heads import induction_score as induction_score  # the shared metrics, also here
from attn_core.heads import mean_entropy as mean_entropy
from attn_core.heads import previous_token_score as previous_token_score
from attn_core.heads import sink_share as sink_share
from attn_core.masks import causal_mask
from attn_core.oracle import attention_map_tolerance
from attn_core.tile_maps import LayerQK
from attn_core.trained.memo import per_model
from attn_core.trained.model import TinyTransformer, Trace
from attn_core.trained.tasks import TASKS, TaskId, repeated
from attn_core.trained.training import EVAL_SEED, eval_loss

PROBE_N = TASKS[TaskId.INDUCTION].n  # period of the repeated sequences the scores are read on
PROBE_BATCH = 64


# --------------------------------------------------------------------------- on a model


@dataclass(frozen=True)
class HeadScores:
    """Every score per (layer, head): tensors of shape (n_layer, n_head)."""

    previous_token: torch.Tensor
    induction: torch.Tensor
    sink: torch.Tensor
    entropy: torch.Tensor  # nats
    period: int  # the probe's repeat period


def probe_batch(batch_size: int = PROBE_BATCH, seed: int = EVAL_SEED, period: int = PROBE_N) -> torch.Tensor:
    """(B, 2·period) held-out sequences ^ x₁…x_n x₁…x_{n−1} (n = ``period`` distinct letters, 16 by
    default) the scores are read on."""
    seq, _ = repeated(batch_size, period, torch.Generator().manual_seed(seed), period=period)
    return seq[:, :-1]


def probe_period(model: TinyTransformer) -> int:
    """16, or the longest period whose probe fits the model's learned positions."""
    return min(PROBE_N, model.config.block_size // 2)


@torch.no_grad()
def run_trace(model: TinyTransformer, idx: torch.Tensor) -> Trace:
    """The model's forward on idx (B, T) with every layer's q, k, v and weights kept."""
    model.eval()
    _, trace = model(idx, trace=True)
    return trace


class _Enough(Exception):
    """Raised from a hook once the layers asked for are recorded: the rest is not run."""


@torch.no_grad()
def capture_qk(
    model: TinyTransformer,
    idx: torch.Tensor,
    layers: int | None = None,
    on_layer: Callable[[int, LayerQK], None] | None = None,
) -> list[LayerQK]:
    """Layers 0 … ``layers`` − 1 (all by default) of the forward on idx (1, T): per layer q and k
    (n_head, T, head_size) read off the c_attn projection, the scale 1/√head_size, causal and
    no window — the capture record of ``attn_core.tile_maps``, as ``hf.qk_capture`` hands it
    (``on_layer`` as there: each record handed over as its layer runs, none kept). The model's
    own attention still forms its (n_head, T, T) weights inside each layer, but T ≤ block_size
    ≤ ``MAX_BLOCK`` keeps them small and none is kept."""
    if idx.ndim != 2 or idx.shape[0] != 1:
        raise ValueError(f"one sequence of token ids (1, T), got {tuple(idx.shape)}")
    cfg, records = model.config, []
    wanted, seen = min(layers or cfg.n_layer, cfg.n_layer), 0

    def record(_module, _inputs, qkv):  # qkv (1, T, 3C) = q | k | v
        if threading.get_ident() != owner:
            return  # another session's forward through the same shared model
        q, k, _ = qkv[0].split(cfg.n_embd, dim=-1)  # (T, C) each
        heads = lambda x: x.view(-1, cfg.n_head, cfg.head_size).transpose(0, 1).contiguous()  # noqa: E731
        nonlocal seen
        record = LayerQK(heads(q), heads(k), cfg.head_size**-0.5, None)  # (nh, T, hs)
        records.append(record) if on_layer is None else on_layer(seen, record)
        seen += 1
        if seen >= wanted:
            raise _Enough

    owner = threading.get_ident()
    model.eval()
    hooks = [block.attn.c_attn.register_forward_hook(record) for block in model.h]
    try:
        model(idx)
    except _Enough:
        pass
    finally:
        for h in hooks:
            h.remove()
    return records


def stack_weights(trace: Trace) -> torch.Tensor:
    """(n_layer, B, nh, T, T): every layer's attention weights."""
    return torch.stack([layer.weights for layer in trace.layers])


def head_scores(
    model: TinyTransformer, idx: torch.Tensor | None = None, period: int | None = None
) -> HeadScores:
    """The four scores of every head, averaged over the probe sequences (default: 64 held-out
    repeated random sequences, period 16, or ``probe_period`` for a model with fewer positions).
    On the default probe, computed once per model version (``memo``); the result is shared."""
    if idx is None and period is None:
        return per_model(model, "head_scores", lambda: _head_scores(model, None, probe_period(model)))
    return _head_scores(model, idx, probe_period(model) if period is None else period)


def _head_scores(model: TinyTransformer, idx: torch.Tensor | None, period: int) -> HeadScores:
    idx = probe_batch(period=period) if idx is None else idx
    P = stack_weights(run_trace(model, idx)).to(torch.float64)  # (n_layer, B, nh, T, T)
    m = head_metrics(P, period)  # each (n_layer, B, nh): averaged over the probe's batch
    return HeadScores(
        previous_token=m.previous_token.mean(1),
        induction=m.induction.mean(1),
        sink=m.sink.mean(1),
        entropy=m.entropy.mean(1),
        period=period,
    )


def ablation(model: TinyTransformer, task: TaskId) -> tuple[float, torch.Tensor]:
    """The held-out loss of ``task`` and its change (n_layer, n_head) when each head's output is
    zeroed alone (positive: the model needed that head). Once per model version and task."""
    return per_model(model, ("ablation", TaskId(task)), lambda: _ablation(model, task))


def _ablation(model: TinyTransformer, task: TaskId) -> tuple[float, torch.Tensor]:
    cfg = model.config
    base = eval_loss(model, task)
    change = torch.zeros(cfg.n_layer, cfg.n_head, dtype=torch.float64)
    for layer in range(cfg.n_layer):
        for head in range(cfg.n_head):
            mask = torch.ones(cfg.n_layer, cfg.n_head)
            mask[layer, head] = 0.0
            change[layer, head] = eval_loss(model, task, head_mask=mask) - base
    return base, change


@dataclass(frozen=True)
class Circuits:
    qk: torch.Tensor  # (V, V): query token × key token, the score a pure token pair gets
    ov: torch.Tensor  # (V, V): attended token × output logit, what reading it adds


def head_weights(model: TinyTransformer, layer: int, head: int) -> dict[str, torch.Tensor]:
    """W_Q, W_K, W_V (C, hs) and W_O (hs, C) of one head, in the x @ W convention."""
    cfg = model.config
    C, hs = cfg.n_embd, cfg.head_size
    attn = model.h[layer].attn
    W = attn.c_attn.weight  # (3C, C): q | k | v = x @ Wᵀ
    rows = slice(head * hs, (head + 1) * hs)
    return {
        "W_Q": W[:C][rows].T,
        "W_K": W[C : 2 * C][rows].T,
        "W_V": W[2 * C :][rows].T,
        "W_O": attn.c_proj.weight[:, rows].T,  # (hs, C): the head's slice of the output projection
    }


@torch.no_grad()
def circuits(model: TinyTransformer, layer: int, head: int) -> Circuits:
    """QK = W_E W_Q W_Kᵀ W_Eᵀ / √hs and OV = W_E W_V W_O W_U over the whole vocabulary (V, V)."""
    w = head_weights(model, layer, head)
    E = model.wte.weight.to(torch.float64)  # (V, C)
    U = model.lm_head.weight.to(torch.float64).T  # (C, V)
    W_Q, W_K, W_V, W_O = (w[k].to(torch.float64) for k in ("W_Q", "W_K", "W_V", "W_O"))
    qk = (E @ W_Q) @ (E @ W_K).T / math.sqrt(model.config.head_size)  # (V, V)
    ov = E @ W_V @ W_O @ U  # (V, V)
    return Circuits(qk=qk, ov=ov)


def copying_share(ov: torch.Tensor) -> float:
    """Share of tokens whose OV row raises their own logit most (1 for a pure copying head)."""
    return float((ov.argmax(-1) == torch.arange(ov.shape[0])).double().mean())


# ------------------------------------------------------------------------- the oracle


@dataclass(frozen=True)
class MapCheck:
    max_abs_diff: float  # max |P_model − P_recomputed| over every layer, head and entry
    tol: float  # the float32 bound it must stay under (see map_check)
    per_layer: list[float]


def map_check(trace: Trace) -> MapCheck:
    """Recompute every map from the model's own q and k with ``attn_core.attention`` in float64
    and compare with the float32 weights of the forward pass.

    Tolerance: ``oracle.attention_map_tolerance`` with u = 2⁻²⁴ (float32) and scale 1/√hs, the
    largest over the layers, computed from this trace; a wrong mask or scale is off by O(0.1)."""
    diffs, tol = [], 8 * UNIT_ROUNDOFF["float32"]
    for layer in trace.layers:
        q, k = layer.q.to(torch.float64), layer.k.to(torch.float64)
        T, hs = q.shape[-2], q.shape[-1]
        ref = attention(q, k, k, causal_mask(T, T, "top_left")).weights  # v unused for the maps
        diffs.append(float((ref - layer.weights.to(torch.float64)).abs().max()))
        tol = max(tol, attention_map_tolerance(q, k, hs**-0.5, UNIT_ROUNDOFF["float32"]))
    return MapCheck(max_abs_diff=max(diffs), tol=tol, per_layer=diffs)
