"""The verify package's layer pieces, each against an oracle of its own:

- attn_core.verify.layers: which keys each attention kind lets a query see, run through
  `attend`, against attention written out here in float64 with the mask built from the definitions
  (full: j ≤ i; sliding W: i − W < j ≤ i; chunked C: same chunk and j ≤ i), GQA by n // (h / H_kv);
- attn_core.verify.linear: the causal conv against torch's conv1d on a left-padded input,
  prompt and then one token at a time, and the state's bytes by hand;
- attn_core.verify.deltanet and attn_core.verify.mamba2: the state each keeps per
  sequence has the shapes and dtypes of the cache transformers' own Qwen3-Next and Nemotron-H fill.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
import transformers
from torch import nn

from attn_core.cost.config_reader import from_hf_config
from attn_core.verify import deltanet, linear, mamba2
from attn_core.verify.layers import ATTENTION_KEYS, attend

F64 = torch.float64


def reference(q, k, v, allowed):
    """softmax(q kᵀ/√d) v over allowed (L, S) keys, head n reading KV head n // (h / H_kv)."""
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    return torch.softmax(s.masked_fill(~allowed, float("-inf")), -1) @ v


RULES = {
    "full": lambda i, j: j <= i,
    "sliding": lambda i, j: (j <= i) & (j > i - 4),
    "chunked": lambda i, j: (j <= i) & (j // 5 == i // 5),
}


# (q_len, kv_len) as the verify run asks: a prompt from an empty cache (q_len = kv_len) or one
# decode step (q_len = 1); a window or chunk also on a part of a longer prompt (its explicit mask).
CASES = [(kind, q, s) for kind in RULES for q, s in ((12, 12), (1, 12), (1, 10), (4, 4))]
CASES += [("sliding", 3, 12), ("chunked", 3, 12)]


@pytest.mark.parametrize(("kind", "q_len", "kv_len"), CASES)
def test_each_kind_sees_the_keys_its_definition_allows(kind, q_len, kv_len):
    shape = SimpleNamespace(sliding_window=4, attention_chunk_size=5)
    g = torch.Generator().manual_seed(q_len * 100 + kv_len)
    q = torch.randn(2, 4, q_len, 8, generator=g, dtype=F64)
    k, v = (torch.randn(2, 2, kv_len, 8, generator=g, dtype=F64) for _ in range(2))
    i = torch.arange(kv_len - q_len, kv_len)[:, None]  # the queries are the last q_len positions
    j = torch.arange(kv_len)[None, :]
    want = reference(q, k, v, RULES[kind](i, j))
    got = attend(q, k, v, ATTENTION_KEYS[kind](shape, q_len, kv_len))
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_the_causal_conv_is_conv1d_on_the_left_padded_input_prompt_then_tokens():
    C, K, B, T = 6, 4, 2, 9
    conv = nn.Conv1d(C, C, K, groups=C, padding=K - 1, dtype=F64)
    x = torch.randn(B, C, T, generator=torch.Generator().manual_seed(0), dtype=F64)
    want = F.silu(F.conv1d(F.pad(x, (K - 1, 0)), conv.weight, conv.bias, groups=C))
    fallbacks = linear.qwen3_next()
    state = linear.LinearState.zeros(C, K, (1,), B, F64, "cpu")
    with torch.no_grad():
        prompt = linear.causal_conv(fallbacks, conv, x[..., :5], state, fresh=True)
        steps = [
            linear.causal_conv(fallbacks, conv, x[..., t : t + 1], state, fresh=False) for t in range(5, T)
        ]
    torch.testing.assert_close(torch.cat([prompt, *steps], -1), want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(state.conv, x[..., -K:])  # the last K inputs
    assert state.nbytes == B * C * K * 8 + B * 1 * 4  # the conv window at F64, the recurrent state in fp32


def cache_of(model_class, config, layer: int):
    torch.manual_seed(0)
    model = model_class(config).eval()
    with torch.no_grad():
        kv = model(torch.tensor([[1, 2, 3, 4, 5]]), use_cache=True).past_key_values
    return kv.get_conv_state(layer), kv.get_recurrent_state(layer)


def test_a_gated_deltanet_keeps_the_state_qwen3_next_keeps():
    sizes = dict(
        num_hidden_layers=2,
        hidden_size=64,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        intermediate_size=96,
        vocab_size=100,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=8,
        linear_value_head_dim=16,
        linear_conv_kernel_dim=4,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        full_attention_interval=2,
    )
    conv, rec = cache_of(transformers.Qwen3NextForCausalLM, transformers.Qwen3NextConfig(**sizes), 0)
    shape = from_hf_config({"model_type": "qwen3_next", **sizes}, name="tiny")
    ours = deltanet.delta_state(shape.state_mixer, 1, conv.dtype, "cpu")
    assert ours.conv.shape == conv.shape and ours.conv.dtype == conv.dtype
    assert ours.recurrent.shape == rec.shape and ours.recurrent.dtype == rec.dtype == torch.float32


def test_a_mamba2_layer_keeps_the_state_nemotron_h_keeps():
    sizes = {
        "hidden_size": 64,
        "hybrid_override_pattern": "M-*",
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "intermediate_size": 96,
        "mamba_num_heads": 4,
        "mamba_head_dim": 16,
        "n_groups": 2,
        "ssm_state_size": 16,
        "conv_kernel": 4,
        "chunk_size": 16,
        "vocab_size": 100,
    }
    conv, rec = cache_of(transformers.NemotronHForCausalLM, transformers.NemotronHConfig(**sizes), 0)
    shape = from_hf_config({"model_type": "nemotron_h", **sizes}, name="tiny")
    ours = mamba2.mamba2_state(shape.state_mixer, 1, conv.dtype, "cpu")
    assert ours.conv.shape == conv.shape and ours.conv.dtype == conv.dtype
    assert ours.recurrent.shape == rec.shape and ours.recurrent.dtype == rec.dtype == torch.float32
