"""attn_core.verify.counts: what the cost model counts for a built model's prefill and
decode step, against transformers' own Llama run under torch's FlopCounterMode.

Oracles: the matrix-product FLOPs torch counts (aten.mm / addmm) running transformers'
LlamaModel (no output head, as the counts) over B × T tokens; its layers' parameters counted on
the meta device; the KV cache worked out here as 2 · L · H_kv · d_h · b per token."""

from __future__ import annotations

import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

from attn_core.cost.shapes import from_hf_config
from attn_core.verify.counts import decode_counts, prefill_counts

SIZES = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=96, vocab_size=50)  # fmt: skip
L, D, HKV, DH = 2, 64, 2, 16


def torch_mm_flops(batch: int, tokens: int) -> int:
    config = transformers.LlamaConfig(**SIZES, attn_implementation="sdpa")
    model = transformers.LlamaModel(config).eval()
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(torch.zeros(batch, tokens, dtype=torch.long))
    counts = counter.get_flop_counts()["Global"]
    return sum(n for op, n in counts.items() if str(op).split(".")[1] in ("mm", "addmm", "bmm"))


def layer_params() -> int:
    with torch.device("meta"):
        model = transformers.LlamaModel(transformers.LlamaConfig(**SIZES))
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
