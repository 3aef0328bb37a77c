"""Drills for the cost cards: parameters (9), FLOPs and the crossover (11), score memory (12),
the KV cache (13) and what GQA saves (14). Each answer comes from the cost model's own function,
on a model shape built from a Hugging Face-style config of the drawn numbers."""

from __future__ import annotations

import json

import numpy as np

from attn_core.cost.config_reader import from_hf_config
from attn_core.cost.flops import crossover_seq_len
from attn_core.cost.params import attention_params
from attn_core.cost.score_memory import naive_score_bytes
from attn_core.cost.serving import kv_cache_bytes_per_token
from attn_core.practice.page_links import FLOPS, KV, PASTED, SCORES
from attn_core.practice.question import CardDrill, Difficulty, Question, Worked, asks, fmt

DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1}


def _config(layers: int, d: int, heads: int, kv_heads: int, d_ff: int) -> dict:
    """A minimal Llama-style config.json (gated SwiGLU MLP)."""
    return {
        "model_type": "llama",
        "num_hidden_layers": layers,
        "hidden_size": d,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": d // heads,
        "intermediate_size": d_ff,
        "hidden_act": "silu",
        "vocab_size": 32000,
        "rms_norm_eps": 1e-5,
    }


def _kv(n: int) -> str:
    """ "1 KV head", "8 KV heads": how a prompt or a slip names the KV-head count."""
    return f"{n} KV head" if n == 1 else f"{n} KV heads"


def _shape(config: dict):
    return from_hf_config(config, name="drill model")


def _cost_params(config: dict, T: int = 4096, dtype: str = "fp16") -> dict[str, str]:
    """The Cost page's inputs by name: this config pasted, at T tokens in ``dtype``."""
    return {"src": PASTED, "paste": json.dumps(config), "T": str(T), "dtype": dtype}


# -- card 13: KV cache per token -----------------------------------------------------------------
@asks("13", "KV-cache size", unit="KiB", hint="a number of KiB, e.g. 512 (you may also type 0.5 MiB)")
def _kv_question(layers: int, heads: int, kv_heads: int, d_h: int, dtype: str) -> Worked:
    config = _config(layers, heads * d_h, heads, kv_heads, 4 * heads * d_h)
    b = DTYPE_BYTES[dtype]
    per_token = kv_cache_bytes_per_token(_shape(config), b)
    return Worked(
        prompt=(
            f"A model has {layers} layers, {heads} query heads and {_kv(kv_heads)} of width {d_h}, and keeps "
            f"its cache in {dtype}. How many KiB of KV cache does one token take?"
        ),
        answer=per_token / 2**10,
        steps=(
            "Each layer stores one key and one value per KV head per token: 2 · L · H_kv · d_h numbers of b bytes.",
            f"2 × {layers} × {kv_heads} × {d_h} × {b} B = {per_token:,} B = {fmt(per_token / 2**10)} KiB "
            "(1 KiB = 1,024 B).",
            "Query heads do not enter: with GQA several query heads read one cached key and value.",
        ),
        slips={
            f"used the {heads} query heads instead of the {_kv(kv_heads)}": 2
            * layers
            * heads
            * d_h
            * b
            / 2**10,
            "stored keys only (forgot the factor 2)": per_token / 2 / 2**10,
            "counted bits, not bytes": per_token * 8 / 2**10,
            "used KB (1,000 B) instead of KiB": per_token / 1e3,
        },
        link=KV.link(_cost_params(config, dtype=dtype)),
    )


def kv_cache_per_token(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    layers = int(rng.choice([16, 24, 32, 40, 48, 60, 80] if difficulty is not Difficulty.EASY else [32, 48]))
    heads = int(rng.choice([16, 32, 64]))
    kv_heads = int(rng.choice([h for h in (1, 2, 4, 8, 16) if h < heads]))
    d_h = int(rng.choice([64, 96, 128] if difficulty is Difficulty.HARD else [128]))
    dtype = str(rng.choice(list(DTYPE_BYTES) if difficulty is not Difficulty.EASY else ["fp16"]))
    return _kv_question(layers, heads, kv_heads, d_h, dtype)


# -- card 14: what GQA saves ----------------------------------------------------------------------
@asks("14", "MQA/GQA: what sharing saves", hint="a factor, e.g. 8")
def _gqa_question(layers: int, heads: int, kv_heads: int, d_h: int) -> Worked:
    mha = kv_cache_bytes_per_token(_shape(_config(layers, heads * d_h, heads, heads, 4 * heads * d_h)))
    gqa_config = _config(layers, heads * d_h, heads, kv_heads, 4 * heads * d_h)
    gqa = kv_cache_bytes_per_token(_shape(gqa_config))
    return Worked(
        prompt=(
            f"A {layers}-layer model with {heads} heads of width {d_h} is served with multi-head attention. "
            f"Retrained with grouped-query attention over {_kv(kv_heads)}, by what factor does its KV "
            "cache shrink?"
        ),
        answer=mha / gqa,
        steps=(
            "The cache holds 2 · L · H_kv · d_h · b bytes per token; only H_kv changes.",
            f"MHA: H_kv = {heads} → {mha:,} B; GQA: H_kv = {kv_heads} → {gqa:,} B per token (fp16).",
            f"Factor h/H_kv = {heads}/{kv_heads} = {fmt(mha / gqa)}: also how many query heads share each "
            "cached head, and by how much decode's arithmetic intensity rises.",
        ),
        slips={
            "inverted the ratio (H_kv/h)": gqa / mha,
            "divided by the KV-head count alone": float(kv_heads),
        },
        link=KV.link(_cost_params(gqa_config)),
    )


def gqa_saving(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    heads = int(rng.choice([8, 16, 32, 40, 64]))
    kv_heads = int(rng.choice([h for h in (1, 2, 4, 5, 8) if heads % h == 0 and h < heads]))
    return _gqa_question(int(rng.choice([24, 32, 80])), heads, kv_heads, 128)


# -- card 9: attention parameters ---------------------------------------------------------------
@asks("9", "Multi-head parameter count", rel_tol=1e-3, hint="a count; 67,108,864 or 67.1M both work")
def _params_question(d: int, heads: int, kv_heads: int) -> Worked:
    config = _config(32, d, heads, kv_heads, 4 * d)
    count = attention_params(_shape(config), bias=False).weights
    d_h = d // heads
    return Worked(
        prompt=(
            f"One attention layer: model width d = {d:,}, {heads} query heads and {_kv(kv_heads)} of width "
            f"{d_h}, no biases. How many weights do W_Q, W_K, W_V and W_O hold together?"
        ),
        answer=float(count),
        steps=(
            "W_Q and W_O are d × (h·d_h); W_K and W_V are d × (H_kv·d_h). The head count only reshapes them.",
            f"2 × {d:,} × {heads * d_h:,} + 2 × {d:,} × {kv_heads * d_h:,} = {count:,}.",
        ),
        slips={
            "4d², ignoring the shared KV heads": float(4 * d * d),
            "forgot the output projection W_O": float(count - d * heads * d_h),
            "counted per head, not per layer": float(count / heads),
        },
        link=FLOPS.link(_cost_params(config)),
    )


def attention_weights(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    heads = int(rng.choice([8, 16, 32, 64]))
    d = heads * int(rng.choice([64, 128]))
    kv = heads if difficulty is Difficulty.EASY else int(rng.choice([k for k in (1, 2, 4, 8) if k <= heads]))
    return _params_question(d, heads, kv)


# -- card 11: the crossover ----------------------------------------------------------------------
@asks("11", "Attention FLOPs and the crossover", hint="a number of tokens, e.g. 24,704")
def _crossover_question(d: int, heads: int, d_ff: int) -> Worked:
    config = _config(32, d, heads, heads, d_ff)
    shape = _shape(config)
    T_star = crossover_seq_len(shape)
    return Worked(
        prompt=(
            f"A multi-head model with width d = {d:,}, {heads} heads and a gated (SwiGLU) MLP of width {d_ff:,}. "
            "At what sequence length T* do the attention-score FLOPs (QKᵀ and PV over all T² pairs) equal the "
            "projections plus the MLP?"
        ),
        answer=float(T_star),
        steps=(
            "Per layer and token: projections 8d², gated MLP 6·d·d_ff; per token the score work is 4·d·T.",
            f"4·d·T* = 8d² + 6·d·d_ff → T* = 2d + 1.5·d_ff = 2 × {d:,} + 1.5 × {d_ff:,} = {fmt(T_star)}.",
            "Below T* the weights dominate (d² terms), above it the pairs (T² terms).",
        ),
        slips={
            "counted only the causal half of the pairs": float(crossover_seq_len(shape, causal=True)),
            "used a two-matrix MLP (4·d·d_ff)": float(
                crossover_seq_len(_shape({**config, "mlp_kind": "plain"}))
            ),
            "left the MLP out": float(2 * d),
        },
        link=FLOPS.link(_cost_params(config)),
    )


def crossover(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    heads = int(rng.choice([16, 32, 40, 64]))
    d = heads * 128
    d_ff = (
        int(rng.choice([2, 3, 4])) * d
        if difficulty is Difficulty.EASY
        else 256 * int(rng.integers(d // 128, d // 32))
    )
    return _crossover_question(d, heads, d_ff)


# -- card 12: naive score memory ------------------------------------------------------------------
@asks("12", "Attention memory: naive vs online", unit="GiB", hint="a number of GiB, e.g. 32 (or 32768 MiB)")
def _scores_question(T: int, dtype: str) -> Worked:
    b = DTYPE_BYTES[dtype]
    naive = naive_score_bytes(T, 1, b)
    return Worked(
        prompt=(
            f"A naive kernel materialises the T × T weights of each head. At T = {T:,} tokens in {dtype}, how many "
            "GiB does that take for one head of one layer?"
        ),
        answer=naive / 2**30,
        steps=(
            "T² weights of b bytes each, per head, per layer (and per sequence in the batch).",
            f"{T:,}² × {b} B = {naive:,} B = {fmt(naive / 2**30)} GiB (1 GiB = 2³⁰ B).",
            "The online softmax keeps one logsumexp per row instead: T × 4 B.",
        ),
        slips={
            "counted entries, not bytes": T * T / 2**30,
            "used GB (10⁹ B) and called it GiB": naive / 1e9,
            "linear in T (T · b)": T * b / 2**30,
        },
        link=SCORES.link(_cost_params(_config(32, 4096, 32, 8, 14336), T=T, dtype=dtype)),
    )


def score_memory(rng: np.random.Generator, difficulty: Difficulty) -> Question:
    T = (
        2 ** int(rng.integers(12, 18))
        if difficulty is not Difficulty.HARD
        else 1000 * int(rng.integers(4, 200))
    )
    return _scores_question(T, str(rng.choice(["fp16", "bf16", "fp32"])))


DRILLS = (
    CardDrill("9", "Multi-head parameter count", attention_weights, lambda: _params_question(4096, 32, 32)),
    CardDrill(
        "11", "Attention FLOPs and the crossover", crossover, lambda: _crossover_question(4096, 32, 11008)
    ),
    CardDrill(
        "12", "Attention memory: naive vs online", score_memory, lambda: _scores_question(131072, "fp16")
    ),
    CardDrill("13", "KV-cache size", kv_cache_per_token, lambda: _kv_question(32, 32, 32, 128, "fp16")),
    CardDrill("14", "MQA/GQA: what sharing saves", gqa_saving, lambda: _gqa_question(80, 64, 8, 128)),
)
