"""attn_core.verify.counts: what the cost model counts for a built model's prefill and
decode step, against transformers' own Llama run under torch's FlopCounterMode.

Oracles: the matrix-product FLOPs torch counts (aten.mm / addmm) running transformers'
LlamaModel and Gemma 4 (no output head, as the counts) over B × T tokens; its layers' parameters
counted on the meta device; the KV cache worked out here as 2 · L · H_kv · d_h · b per token; the
cost model's product FLOPs (`phases`) less the head, 2·d·V per token from the config; Gemma 4's
per-layer maps and wide heads counted by hand from its dimensions."""

from __future__ import annotations

import pytest
import torch
from conftest import hf_model
from torch.utils.flop_counter import FlopCounterMode
from transformers import AutoConfig, AutoModel

from attn_core.cost.config_reader import ModelShape, from_hf_config
from attn_core.cost.inputs import Precision
from attn_core.cost.phases import decode_count, prefill_count
from attn_core.verify.counts import Gemm, decode_counts, prefill_counts
from attn_core.verify.examples import HYBRID, LLAMA, MIXTRAL
from attn_core.verify.peak import matrix_sides
from attn_core.verify.plan import VerifyRequest, plan_build
from tests.cost.test_gemma4 import TINY

SIZES = dict(
    num_hidden_layers=2,
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=96,
    vocab_size=50,
)
L, D, HKV, DH = 2, 64, 2, 16


def torch_mm_flops(batch: int, tokens: int, config: dict | None = None) -> int:
    """The matrix-product FLOPs torch counts running transformers' base model of ``config``
    (the tiny Llama by default; no head, as the counts), attention in SDPA's own op."""
    config = {"model_type": "llama", **SIZES} if config is None else config
    cfg = AutoConfig.for_model(**config)
    model = AutoModel.from_config(cfg, attn_implementation="sdpa").eval()
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(torch.zeros(batch, tokens, dtype=torch.long))
    counts = counter.get_flop_counts()["Global"]
    return sum(n for op, n in counts.items() if str(op).split(".")[1] in ("mm", "addmm", "bmm"))


def layer_params() -> int:
    model = hf_model({"model_type": "llama", **SIZES}, base=True)
    return sum(p.numel() for p in model.layers.parameters())


@pytest.mark.parametrize(("batch", "T"), [(1, 16), (3, 7)])
def test_prefill_products_are_the_matrix_products_torch_counts(batch, T):
    shape = from_hf_config({"model_type": "llama", **SIZES}, name="tiny llama")
    counts = prefill_counts(shape, T, batch, 2)
    assert sum(g.flops for g in counts.gemms) == torch_mm_flops(batch, T)
    assert [(a.kind, a.q_len, a.kv_len, a.count) for a in counts.attention] == [("full", T, T, L)]
    kv = 2 * L * HKV * DH * 2 * T * batch  # written once
    assert counts.bytes == counts.bytes_expected == layer_params() * 2 + kv


def test_a_decode_step_reads_the_weights_and_the_cache_for_one_new_token():
    shape = from_hf_config({"model_type": "llama", **SIZES}, name="tiny llama")
    batch, context = 2, 31
    step = decode_counts(shape, context, batch, 2)
    assert sum(g.flops for g in step.gemms) == torch_mm_flops(batch, 1)  # one token per sequence
    assert [(a.q_len, a.kv_len) for a in step.attention] == [(1, context + 1)]
    assert step.bytes == layer_params() * 2 + 2 * L * HKV * DH * 2 * context * batch
    more = decode_counts(shape, context + 10, batch, 2)
    # per layer and sequence, one more key costs 4·h·d_h FLOPs (q·k and p·v, 2 FLOPs a multiply-add)
    assert more.flops - step.flops == 10 * 4 * 4 * DH * L * batch


# -- The estimate's products are the cost model's count -----------------------------------------
# Built as verify plans them (transformers' build of the first layers that fit); the count's product
# FLOPs are `phases`' F_w less the output head, 2·d·V per token (verify builds no head).
GEMMA4_VARIANTS = {
    "gemma4": TINY,
    "gemma4, kv shared, double-wide MLP": TINY | {"num_kv_shared_layers": 4, "use_double_wide_mlp": True},
    "gemma4, global KV heads, V = K": TINY | {"attention_k_eq_v": True, "num_global_key_value_heads": 1},
}
FAMILIES = {"llama": LLAMA, "mixtral": MIXTRAL, "qwen3_next": HYBRID, **GEMMA4_VARIANTS}


def _built(config: dict) -> ModelShape:
    shape = from_hf_config(config, name=config["model_type"])
    return plan_build(shape, VerifyRequest(seq_len=16, decode_steps=2), config).shape


@pytest.mark.parametrize("name", list(FAMILIES))
@pytest.mark.parametrize(("batch", "T"), [(1, 16), (3, 7)])
def test_the_estimates_products_are_the_cost_models_product_flops(name, batch, T):
    config = FAMILIES[name]
    shape = _built(config)
    head = 2 * config["hidden_size"] * config["vocab_size"]  # per token
    precision = Precision("fp32")
    prefill = prefill_count(shape, T, batch, precision).product_flops - head * batch * T
    decode = decode_count(shape, T, batch, precision).product_flops - head * batch
    # routed experts: k·N rows spread over the expected touched experts, a float product
    assert sum(g.flops for g in prefill_counts(shape, T, batch, 4).gemms) == pytest.approx(prefill, rel=1e-12)
    assert sum(g.flops for g in decode_counts(shape, T, batch, 4).gemms) == pytest.approx(decode, rel=1e-12)


def test_gemma4s_per_layer_maps_and_wide_heads_by_hand():
    """TINY: d = 64, 8 layers alternating sliding (d_h 16) and full (d_h 32), h = 4, H_kv = 2,
    p = 8 per-layer inputs, a gated MLP of 96."""
    shape = _built(TINY)
    assert shape.n_layers == 8
    N = 2 * 5  # B · T
    gemms = prefill_counts(shape, 5, 2, 4).gemms
    ple = [Gemm(N, 64, 8 * 8), Gemm(N, 64, 8, 8), Gemm(N, 8, 64, 8)]  # d → L·p; each layer d → p, p → d
    full = [Gemm(N, 64, 4 * 32 + 2 * 2 * 32, 4), Gemm(N, 4 * 32, 64, 4)]  # QKV, O at 32-wide heads
    sliding = [Gemm(N, 64, 4 * 16 + 2 * 2 * 16, 4), Gemm(N, 4 * 16, 64, 4)]
    mlp = [Gemm(N, 64, 2 * 96, 4), Gemm(N, 96, 64, 4)]
    assert sorted(gemms, key=repr) == sorted(ple + full + sliding + 2 * mlp, key=repr)
    by_hand = (
        2
        * N
        * (
            64 * 64
            + 8 * (2 * 64 * 8)
            + 4 * (64 * 256 + 128 * 64)
            + 4 * (64 * 128 + 64 * 64)
            + 8 * (64 * 192 + 96 * 64)
        )
    )
    assert sum(g.flops for g in gemms) == by_hand


@pytest.mark.parametrize("name", list(GEMMA4_VARIANTS))
def test_gemma4s_products_are_the_matrix_products_torch_counts(name):
    """Every layer of transformers' own Gemma 4 (its wide global heads, per-layer input maps, KV
    sharing, V = K) runs the products the estimate prices; a decode step's products are one token's."""
    config = GEMMA4_VARIANTS[name]
    shape = _built(config)
    assert sum(g.flops for g in prefill_counts(shape, 5, 2, 4).gemms) == torch_mm_flops(2, 5, config)
    assert sum(g.flops for g in decode_counts(shape, 5, 2, 4).gemms) == torch_mm_flops(2, 1, config)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_planned_probe_holds_every_weight_it_times(name):
    """The probe's planned peak (`peak.probe_bytes`) holds one weight of d × the widest side: every
    product the estimate times (wide heads, double-wide MLP, the per-layer map) fits it."""
    shape = _built(FAMILIES[name])
    largest = shape.d_model * max(matrix_sides(shape))
    assert all(g.k * g.n <= largest for g in prefill_counts(shape, 16, 2, 4).gemms)
