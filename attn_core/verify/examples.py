"""Tiny config.json dicts of each kind a check builds, and the probe sizes for them: the one home
of the models the verify tests and benchmarks/verify_bounds.py start from (a case that needs a
larger or hostile variant writes it as ``CONFIG | {changes}`` beside its reason).

Each is a config transformers builds (its ``model_type``), at a width a check runs in seconds
on one CPU thread. No weights: a check builds them at random.
"""

from __future__ import annotations

# A dense Llama: 2 layers, GQA (4 query heads, 2 KV heads), a gated MLP.
LLAMA = {
    "model_type": "llama",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 96,
    "vocab_size": 100,
}
# Mixtral with 200,000 routed experts of width 8: a check builds at most MAX_EXPERTS of them.
MIXTRAL = {
    "model_type": "mixtral",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 8,
    "num_local_experts": 200_000,
    "num_experts_per_tok": 2,
    "vocab_size": 100,
}
# Qwen3-Next in small: Gated DeltaNet in 3 of 4 layers, gated attention with partial rotary, MoE.
HYBRID = {
    "model_type": "qwen3_next",
    "num_hidden_layers": 4,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "shared_expert_intermediate_size": 48,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 16,
    "linear_conv_kernel_dim": 4,
    "full_attention_interval": 4,
    "partial_rotary_factor": 0.25,
    "vocab_size": 100,
}
# Nemotron-H in small: one block per layer, Mamba-2 ('M'), MLP ('-') and attention ('*'); chunks of 16.
NEMOTRON = {
    "model_type": "nemotron_h",
    "hidden_size": 64,
    "hybrid_override_pattern": "M-M*-",
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
# 64 layers of 1,024 heads: the audit's case whose time, not memory, is over a page's limit.
MANY_HEADS = LLAMA | {
    "num_hidden_layers": 64,
    "hidden_size": 2048,
    "num_attention_heads": 1024,
    "num_key_value_heads": 8,
    "intermediate_size": 64,
}

# The probe's buffers for layers this small (`peak.PEAK_N`, …, per device "cpu"): its logic is
# the same, its arrays small enough that the run's own terms dominate the planned peak.
SMALL_PROBE = {"PEAK_N": 128, "COLD_BYTES": 1 << 20, "STREAM_BYTES": 8 << 20}
