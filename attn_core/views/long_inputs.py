"""The inputs of the long-sequence view: the model, the text, and the budget that bounds a run.

- a model: ``demo()`` (the Hugging Face page's seeded demo with 4,096 rotary positions),
  ``from_hf(loaded)``, ``from_trained(model, name)`` → ``LongModel`` (the model and its shape);
- text in: ``sample_input(m, n)`` is what to put in the input box (prose from assets/text for a
  model with a tokenizer, letters for the trained model, ids otherwise); ``read_input(m, text,
  n)`` → ``LongInput``, the first n tokens and a label per position;
- the budget: ``Budget(max_bytes, max_seconds, slowdown)``; ``estimate(m, L, budget)`` →
  ``Estimate`` of the peak memory and time of a run on L tokens, with ``fits`` and the sentence a
  page shows; ``longest_input(m, budget)``: the budget decides the longest input, not a fixed
  token cap; ``measured_budget()``: the default budget with this server's measured slowdown
  (``calibrate``, timed at first use and kept for a few minutes); ``default_length(m, budget)``:
  the length a page opens on, whose estimate fills only part of the seconds (a margin).

``attn_core.views.long_heads`` re-exports all of it; the pages import that module only.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cache
from pathlib import Path

import torch

from attn_core.hf.demo import build_demo
from attn_core.hf.loading import Loaded
from attn_core.hf.token_ids import check_ids, model_positions, read_ids
from attn_core.tile_maps import COMPUTE_BLOCK, TILE, LayerQK, tile_maps
from attn_core.tile_plan import plan_tiles
from attn_core.trained.model import TinyTransformer
from attn_core.trained.tasks import LETTERS, decode, encode

MAX_LONG_TOKENS = 4096  # the longest input any budget may allow
MiB = 2**20
SAMPLE = Path(__file__).resolve().parents[2] / "assets" / "text" / "pride_and_prejudice_ch1-3.txt"
DEMO_LABEL = "the tiny random Mistral-style demo model (GQA 4:2, rotary, sliding window 8), 4,096 positions"
KEEP_CAPTURES_BYTES = 16 * MiB  # q and k kept for ``region`` when they fit; else it re-runs the forward

# The cost model of ``estimate``, per layer: forward FLOPs / FORWARD_FLOPS + LAYER_OVERHEAD_S +
# tiles × (Hq·block² · MAP_S_PER_SCORE + MAP_S_PER_TILE). Fitted on this server's CPU (2 threads,
# float32) to the forward and the tile maps timed apart on GPT-2-small's shape (12 heads) and
# SmolLM2-135M (9 query heads on 3 KV heads) at 1,024 and 4,096 tokens, then rounded up so the
# estimate stays above them (benchmarks/RESULTS.md, "The long read's estimate, refitted"). Grouped
# heads need no term of their own: the maps' bmm runs over all Hq query rows of a KV group.
FORWARD_FLOPS = 180e9  # FLOP/s of the forward (GEMMs and fused SDPA); fitted 204–233 at 4,096 tokens
LAYER_OVERHEAD_S = 0.02  # per layer: the maps' accumulators and scores (fitted 0.015 s) and eager ops
MAP_S_PER_SCORE = 2.5e-9  # tile maps: seconds per score visited (both passes); fitted 2.2e-9
MAP_S_PER_TILE = 1.2e-3  # tile maps: per compute tile visited (masks, bins, Python); fitted 1.05e-3
ACTIVATION_WIDTHS = 8  # live activations of a forward: ≈ this many (L, d_model) tensors + 2 of (L, d_ff)
# The resident peak exceeds the bytes allocated: glibc keeps freed heap pages between the forward's
# large transient tensors (measured 1.0–2.1× the allocations at 1k–4k tokens, RESULTS.md).
ALLOCATOR_SLACK, ALLOCATOR_FLOOR = 1.5, 32 * MiB


class Kind(StrEnum):
    HF = "hf"
    TRAINED = "trained"


@dataclass(frozen=True)
class LongModel:
    """A model the view can read, with the shape its cost model needs."""

    kind: Kind
    model: torch.nn.Module
    tokenizer: object | None  # None: token ids (HF) or the trained model's letters
    name: str
    context: int  # its positions, at most MAX_LONG_TOKENS
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_model: int
    d_ff: int  # MLP width (0: attention-only)
    layer_params: int  # weights of one layer: its forward costs 2 FLOPs per weight per token
    vocab_size: int


def from_hf(loaded: Loaded) -> LongModel:
    """A loaded Hugging Face causal LM (``loading.load``, the shipped model or the demo)."""
    model, c = loaded.model, loaded.model.config
    heads = c.num_attention_heads
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // heads
    body = model.base_model
    embeddings = {
        id(p) for mod in body.modules() if isinstance(mod, torch.nn.Embedding) for p in mod.parameters()
    }
    weights = sum(p.numel() for p in body.parameters() if id(p) not in embeddings)
    d_ff = getattr(c, "intermediate_size", None) or getattr(c, "n_inner", None) or 4 * c.hidden_size
    return LongModel(
        Kind.HF,
        model,
        loaded.tokenizer,
        loaded.name,
        min(model_positions(c) or MAX_LONG_TOKENS, MAX_LONG_TOKENS),
        c.num_hidden_layers,
        heads,
        getattr(c, "num_key_value_heads", None) or heads,
        head_dim,
        c.hidden_size,
        d_ff,
        weights // c.num_hidden_layers,
        c.vocab_size,
    )


def from_trained(model: TinyTransformer, name: str) -> LongModel:
    """The tiny trained transformer: its context is its block size (at most 128 positions)."""
    c = model.config
    d_ff = 4 * c.n_embd if c.mlp else 0
    per_layer = 4 * c.n_embd**2 + 2 * c.n_embd * d_ff
    return LongModel(
        Kind.TRAINED,
        model,
        None,
        name,
        min(c.block_size, MAX_LONG_TOKENS),
        c.n_layer,
        c.n_head,
        c.n_head,
        c.head_size,
        c.n_embd,
        d_ff,
        per_layer,
        c.vocab_size,
    )


@cache
def demo() -> LongModel:
    """The Hugging Face page's seeded demo model (same weights) with 4,096 rotary positions."""
    return from_hf(build_demo(MAX_LONG_TOKENS, DEMO_LABEL))


# ----------------------------------------------------------------------------------------------
# Text in
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LongInput:
    idx: torch.Tensor  # (1, L) token ids
    tokens: list[str]  # a label per position
    dropped: int  # tokens of the text past the n asked for, not read


@cache
def sample_text() -> str:
    """The long-text sample shipped in assets/text (Pride and Prejudice, chapters 1–3, 1813;
    public domain: assets/text/README.md)."""
    return SAMPLE.read_text(encoding="utf-8")


def sample_input(m: LongModel, n: int | None = None) -> str:
    """What to put in the input box for the first ``n`` tokens (default: the model's context):
    the sample prose for a model with a tokenizer; for the trained model its letters, lower-cased,
    after "^"; else one id per character of the prose (code point mod the vocabulary size)."""
    n = min(n or m.context, m.context)
    prose = sample_text()
    if m.tokenizer is not None:
        return prose  # read_input keeps the first n tokens
    if m.kind is Kind.TRAINED:
        return "^" + re.sub(f"[^{LETTERS}]", "", prose.lower())[: n - 1]  # "^" is BOS
    return " ".join(str(ord(ch) % m.vocab_size) for ch in prose[:n])


def read_input(m: LongModel, text: str, n: int | None = None) -> LongInput:
    """The first ``n`` tokens of ``text`` (all by default): the model's tokenizer, the trained
    model's letters, or typed token ids. ValueError naming the problem (empty, an unknown
    character or id, more tokens than the model's positions)."""
    if m.tokenizer is not None:
        ids = list(m.tokenizer(text)["input_ids"])
    elif m.kind is Kind.TRAINED:
        ids = encode(text.strip())
    else:
        ids = read_ids(text)
    kept = ids if n is None else ids[: max(n, 0)]
    idx = check_ids(kept, m.vocab_size, m.context, cap=MAX_LONG_TOKENS)
    if m.tokenizer is not None:
        tokens = [m.tokenizer.decode([i]) for i in kept]
    elif m.kind is Kind.TRAINED:
        tokens = decode(kept)
    else:
        tokens = [str(i) for i in kept]
    return LongInput(idx, tokens, len(ids) - len(kept))


# ----------------------------------------------------------------------------------------------
# The budget
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    """What one visitor's run may take: peak extra memory and wall-clock seconds. ``slowdown``:
    how much slower this server runs than the fitted constants assume (``calibrate``; 1: as fitted);
    the estimate's seconds are multiplied by it."""

    max_bytes: int = 1024 * MiB
    max_seconds: float = 30.0
    slowdown: float = 1.0


DEFAULT_BUDGET = Budget()


@dataclass(frozen=True)
class Estimate:
    tokens: int
    layers: int
    bytes: int  # peak memory beyond the loaded model (estimate)
    seconds: float  # wall clock on this server (estimate)
    budget: Budget
    keeps_captures: bool  # q and k of every layer stay with the view (region without a forward)

    @property
    def fits(self) -> bool:
        return self.bytes <= self.budget.max_bytes and self.seconds <= self.budget.max_seconds

    @property
    def message(self) -> str:
        b = self.budget
        speed = (
            f" at this server's measured speed (×{b.slowdown:.1f} the fitted time)" if b.slowdown != 1 else ""
        )
        text = (
            f"this input: {self.tokens:,} tokens, {self.bytes / MiB:,.1f} MiB, ~{self.seconds:,.1f} s{speed}; "
            f"budget: {b.max_bytes / MiB:,.0f} MiB, {b.max_seconds:,.0f} s"
        )
        return text if self.fits else f"{text}. Over the budget: read fewer tokens."


class OverBudget(ValueError):
    """The input would take more memory or time than the budget allows."""


def estimate(
    m: LongModel, L: int, budget: Budget = DEFAULT_BUDGET, *, tile: int = TILE, layers: int | None = None
) -> Estimate:
    """Peak memory and time of ``long_view`` on L tokens: the forward (its activations and one
    layer's q and k with their copies) plus the tile maps (one compute tile of scratch, the view's
    maps and per-row values), timed by the constants above times ``budget.slowdown``. Every layer
    is costed as causal (an upper bound for sliding-window layers)."""
    n_layers = min(layers or m.n_layers, m.n_layers)
    Hq, Hkv, d, f32 = m.n_heads, m.n_kv_heads, m.head_dim, 4
    block = tile * max(1, COMPUTE_BLOCK // tile)
    plan = plan_tiles(L, L, (), block, block, causal=True)
    tiles_run = sum(map(sum, plan.runs))
    n = -(-L // tile)
    qk_layer = (Hq + Hkv) * L * d * f32
    keeps = n_layers * qk_layer <= KEEP_CAPTURES_BYTES
    # the trained model's own attention forms its (n_head, T, T) weights (T ≤ 128); the HF capture none
    own_maps = 3 * Hq * L * L * f32 if m.kind is Kind.TRAINED else 0
    forward = L * (ACTIVATION_WIDTHS * m.d_model + 2 * m.d_ff) * f32 + own_maps + 2 * qk_layer
    scratch = 4 * Hq * block * block * f32 + 2 * block * block * 8  # S, P, products; distances, bins
    kept = n_layers * ((2 * Hq * n * n + 6 * Hq * L) * f32 + (qk_layer if keeps else 0))
    flops = 2 * L * m.layer_params + 2 * L * L * d * Hq  # one layer's GEMMs; causal QKᵀ and PV
    seconds = (
        budget.slowdown
        * n_layers
        * (
            flops / FORWARD_FLOPS
            + LAYER_OVERHEAD_S
            + tiles_run * (Hq * block * block * MAP_S_PER_SCORE + MAP_S_PER_TILE)
        )
    )
    resident = ALLOCATOR_SLACK * (forward + scratch + kept) + ALLOCATOR_FLOOR
    return Estimate(L, n_layers, int(resident), seconds, budget, keeps)


def longest_input(m: LongModel, budget: Budget = DEFAULT_BUDGET, *, tile: int = TILE) -> int:
    """The most tokens (≤ the model's context) whose estimate fits the budget; 0 if none."""
    lo, hi = 0, m.context
    while lo < hi:  # fits is monotone in L
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if estimate(m, mid, budget, tile=tile).fits else (lo, mid - 1)
    return lo


# ----------------------------------------------------------------------------------------------
# This server's speed
# ----------------------------------------------------------------------------------------------

DEFAULT_SHARE = 0.5  # the length a page opens on is estimated at most half the budget's seconds
CALIBRATION_KEEP_S = 300.0  # a measured slowdown is reused this long, then measured again
CALIBRATION_RUNS = 3  # the slowdown is the least of this many timed runs (a spike in one never sticks)
# the calibration workload: one GEMM of a layer's MLP shape and one layer's tile maps, small
CAL_L, CAL_D_MODEL, CAL_D_FF, CAL_HQ, CAL_HKV, CAL_HEAD_DIM, CAL_GEMMS = 256, 576, 1536, 4, 2, 64, 4
_measured: tuple[float, float] | None = None  # (slowdown, when measured: time.monotonic())
_measuring = threading.Lock()


def _calibration_run() -> tuple[float, float]:
    """(measured, predicted) seconds of a small read-like workload: ``CAL_GEMMS`` GEMMs of a
    (CAL_L, d_model) × (d_model, d_ff) product and the tile maps of one (Hq, CAL_L, d) layer,
    predicted by the cost model's constants exactly as ``estimate`` would cost them."""
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(CAL_L, CAL_D_MODEL, generator=g), torch.randn(CAL_D_MODEL, CAL_D_FF, generator=g)
    qk = LayerQK(
        torch.randn(CAL_HQ, CAL_L, CAL_HEAD_DIM, generator=g),
        torch.randn(CAL_HKV, CAL_L, CAL_HEAD_DIM, generator=g),
        CAL_HEAD_DIM**-0.5,
    )
    block = TILE * max(1, COMPUTE_BLOCK // TILE)
    tiles_run = sum(map(sum, plan_tiles(CAL_L, CAL_L, (), block, block, causal=True).runs))
    predicted = CAL_GEMMS * 2 * CAL_L * CAL_D_MODEL * CAL_D_FF / FORWARD_FLOPS + tiles_run * (
        CAL_HQ * block * block * MAP_S_PER_SCORE + MAP_S_PER_TILE
    )
    start = time.perf_counter()
    with torch.no_grad():
        for _ in range(CAL_GEMMS):
            x @ w
        tile_maps(qk, TILE)
    return time.perf_counter() - start, predicted


def calibrate() -> float:
    """This server's slowdown against the cost model's constants (at least 1: the constants were
    fitted on a quiet machine and rounded up): the least over ``CALIBRATION_RUNS`` of a small
    workload's measured over predicted seconds, in the calling thread (its torch thread count and
    the server's load as they are). Timed at first use (tens of milliseconds) and kept for
    ``CALIBRATION_KEEP_S``; concurrent callers share one measurement."""
    global _measured
    with _measuring:
        now = time.monotonic()
        if _measured is None or now - _measured[1] > CALIBRATION_KEEP_S:
            _calibration_run()  # warm-up: first-call allocations are not the machine's speed
            ratios = [m / p for m, p in (_calibration_run() for _ in range(CALIBRATION_RUNS))]
            _measured = (max(1.0, min(ratios)), now)
        return _measured[0]


def measured_budget(budget: Budget | None = None) -> Budget:
    """``budget`` (the default one when None) with this server's measured slowdown."""
    return replace(budget or DEFAULT_BUDGET, slowdown=calibrate())


def default_length(m: LongModel, budget: Budget, share: float = DEFAULT_SHARE, *, tile: int = TILE) -> int:
    """The length a page opens on: the most tokens whose estimate takes at most ``share`` of the
    budget's seconds (a margin for a server busier than when it was measured), at least 1 when
    any length fits."""
    margin = replace(budget, max_seconds=budget.max_seconds * share)
    return max(longest_input(m, margin, tile=tile), min(1, longest_input(m, budget, tile=tile)))
