"""Hand computations of the time bounds from a model's dimensions (its config.json read as plain
JSON), independent of attn_core: a dense GQA model (Llama 3 8B), a mixture of experts with MLA
(DeepSeek-V3) and a hybrid of full attention and Gated DeltaNet (Qwen3-Next-80B-A3B).

For B prompts of P tokens at b bytes a number (bf16: every weight, the cache and the state):
- TTFT = max(prefill FLOPs / peak, (weights read once + cache of P tokens + state) / bandwidth);
- a decode step with P tokens cached = max(FLOPs of one token / peak, (weights + cache + state) / bandwidth).
FLOPs: 2 per multiply-add of every product over the weights (the routed experts' top-k), the pairs
a causal pass allows (4·h·d_h each; MLA naive in prefill, absorbed in decode), Gated DeltaNet's core.
Weights read: the active ones (top-k experts) and, of an untied input table, only the rows looked up."""

from __future__ import annotations

import json
from pathlib import Path

MODELS = Path(__file__).resolve().parents[1] / "assets" / "models"
DELTA_CHUNK = 64  # Gated DeltaNet's chunk in its chunked prefill (fla's chunk_gated_delta_rule)


def config(name: str) -> dict:
    return json.loads((MODELS / f"{name}.json").read_text())


def _llama(c: dict) -> dict:
    d, L, h, kv = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"]
    dh = d // h
    d_ff = c["intermediate_size"]
    per_layer = d * h * dh + 2 * d * kv * dh + h * dh * d + 3 * d * d_ff
    return {
        "products": L * per_layer,  # matrix weights one token multiplies, without the head
        "other": L * 2 * d + d,  # norms: read, not multiplied
        "pair_prefill": L * 4 * h * dh,
        "pair_decode": L * 4 * h * dh,
        "cache_per_token": 2 * L * kv * dh,  # numbers
        "state": 0,
        "core_prefill": lambda P: 0,
        "core_decode": 0,
    }


def _deepseek(c: dict) -> dict:
    d, L, h = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"]
    q_r, kv_r, rope, nope, v = (
        c[k] for k in ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
    )
    dense, E, k, e_ff = (
        c["first_k_dense_replace"],
        c["n_routed_experts"],
        c["num_experts_per_tok"],
        c["moe_intermediate_size"],
    )
    attention = d * q_r + q_r * h * (nope + rope) + d * (kv_r + rope) + kv_r * h * (nope + v) + h * v * d
    moe = d * E + k * 3 * d * e_ff + c["n_shared_experts"] * 3 * d * e_ff  # router, top-k, shared
    return {
        "products": L * attention + dense * 3 * d * c["intermediate_size"] + (L - dense) * moe,
        # two norms a layer, the q and kv latent norms, the routers' score-correction bias (noaux_tc), the final
        "other": L * (2 * d + q_r + kv_r) + (L - dense) * E + d,
        "pair_prefill": L * 2 * h * (nope + rope + v),  # naive: per-head K and V expanded
        "pair_decode": L * 2 * h * (2 * kv_r + rope),  # absorbed: scores and values over the latent
        "cache_per_token": L * (kv_r + rope),
        "state": 0,
        "core_prefill": lambda P: 0,
        "core_decode": 0,
    }


def _qwen3_next(c: dict) -> dict:
    d, L, h, kv, dh = (
        c[k]
        for k in (
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
        )
    )
    Hk, Hv, dk, dv, K = (
        c[k]
        for k in (
            "linear_num_key_heads",
            "linear_num_value_heads",
            "linear_key_head_dim",
            "linear_value_head_dim",
            "linear_conv_kernel_dim",
        )
    )
    full = L // c["full_attention_interval"]  # every 4th layer
    gdn = L - full
    E, k, e_ff, s_ff = (
        c["num_experts"],
        c["num_experts_per_tok"],
        c["moe_intermediate_size"],
        c["shared_expert_intermediate_size"],
    )
    attention = d * 2 * h * dh + 2 * d * kv * dh + h * dh * d  # the query map carries the output gate
    delta = d * (2 * Hk * dk + 2 * Hv * dv) + d * 2 * Hv + Hv * dv * d  # q, k, v, z; β and a; out
    conv = 2 * Hk * dk + Hv * dv
    moe = d * E + k * 3 * d * e_ff + 3 * d * s_ff + d  # router, top-k, shared expert and its gate

    def core_prefill(P: int) -> int:
        chunks, last = divmod(P, DELTA_CHUNK)
        pairs = chunks * DELTA_CHUNK**2 + last**2  # whole C × C blocks, masked after (as fla's kernels)
        return gdn * Hv * (6 * dk * dv * P + 2 * (3 * dk + 2 * dv) * pairs)

    return {
        "products": full * attention + gdn * delta + L * moe,
        "other": full * 2 * dh
        + gdn * (conv * K + 2 * Hv + dv)
        + L * 2 * d
        + d,  # q/k norms; conv, A, dt, norm
        "pair_prefill": full * 4 * h * dh,
        "pair_decode": full * 4 * h * dh,
        "cache_per_token": 2 * full * kv * dh,
        "state": gdn * (conv * K + Hv * dk * dv),  # numbers per sequence
        "core_prefill": core_prefill,
        "core_decode": gdn * Hv * 6 * dk * dv,
    }


DIMENSIONS = {"llama-3-8b": _llama, "deepseek-v3": _deepseek, "qwen3-next-80b-a3b": _qwen3_next}


def bounds(name: str, P: int, B: int, b: int, peak: float, bandwidth: float) -> dict[str, float]:
    """{"ttft", "decode"} in seconds, and the bytes and FLOPs behind them, for the model named."""
    c = config(name)
    m = DIMENSIONS[name](c)
    d, V = c["hidden_size"], c["vocab_size"]
    head = d * V  # untied in all three
    cache = m["cache_per_token"] * P * B * b
    state = m["state"] * B * b

    def weights(rows: int) -> int:
        return (m["products"] + m["other"] + head + min(rows, V) * d) * b

    prefill_flops = 2 * (m["products"] + head) * P * B + m["pair_prefill"] * P * (P + 1) // 2 * B
    prefill_flops += m["core_prefill"](P) * B
    decode_flops = 2 * (m["products"] + head) * B + m["pair_decode"] * (P + 1) * B + m["core_decode"] * B
    prefill_bytes, decode_bytes = weights(B * P) + cache + state, weights(B) + cache + state
    return {
        "ttft": max(prefill_flops / peak, prefill_bytes / bandwidth),
        "decode": max(decode_flops / peak, decode_bytes / bandwidth),
        "prefill_flops": prefill_flops,
        "decode_bytes": decode_bytes,
    }
