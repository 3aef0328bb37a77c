"""The cost model: what attention costs for a real model, numpy only (never torch). It imports
nothing else of attn_core, so ``python -m attn_core cost …`` stays fast. Its modules, by job:

Inputs and caps
- `inputs`: the what-if as three frozen objects, validated once — Hardware, Precision, Workload.
- `limits`: every cap in one place (2²⁴ for T and any size read from a config; batch, GPUs, N).
- `dtypes`: bytes per number (activation and cache dtypes, quantized weight formats) and token
  counts as exact ints or float64 sweeps.
- `gpus`: the GPU presets (memory as the device reports it and as the vendor labels it).
- `units`: numbers with their units (GiB vs GB, FLOPs, seconds, counts).

Reading a config
- `shapes`: a `ModelShape` from a preset or a Hugging Face config.json (the key aliases read,
  uploads and pastes parsed).
- `model_shape`: the `ModelShape` dataclass, validated on construction, every derived quantity.
- `config_keys`: reading one key safely (aliases, whole numbers, `ConfigError` naming the key).
- `model_types`: what a model_type implies (class defaults, text_config, refused types, quantization).
- `type_facts`: what transformers' build of each model_type shows (MLP kind, biases, norms, …), recorded.
- `layer_config`: each layer's kind and the linear-attention / state-space mixer, from the config.
- `experts`: mixture of experts (layout, top-k, shared experts, which layers hold experts).
- `mla`: multi-head latent attention (ranks and head widths).
- `layers`: layer patterns as rules and lists, counted without visiting every layer.
- `mixers`: Gated DeltaNet, KDA, Mamba and Mamba-2: parameters, FLOPs, state per sequence.

Costs
- `params`: parameters total and active, and their bytes at a weight dtype (card 9).
- `flops`: FLOPs per layer and for the whole model, the crossover T* (card 11).
- `score_memory`: score memory, naive vs online softmax (card 12).
- `serving`: the KV cache, a hybrid's fixed state, sequences that fit (cards 13, 14).
- `ledger`: the ledger by layer kind, and a hybrid's memory against T beside its all-attention twin.
- `phases`: the one count of each phase's work (prefill of P, a decode step at P): FLOPs by part, bytes.
- `roofline`: the one pricing of a count (`time_phase`): the bound, the estimate at η, the time at a
  kernel bench run's attained rates.
- `whole_model`: parameters with published counts, and the time bounds (TTFT, decode, end to end).
- `report`: one what-if, everything at once (`cost_report`), the MHA/GQA/MQA variants and sweeps over T.
- `cli`: the command line (``python -m attn_core cost|models|gpus``).
"""

from attn_core.cost.config_keys import MAX_INT
from attn_core.cost.dtypes import DTYPE_BYTES, WEIGHT_BITS, bytes_per_value, weight_bytes_per_param
from attn_core.cost.experts import EXPERT_KEYS, MoE
from attn_core.cost.flops import (
    LayerFlops,
    PrefillFlops,
    attention_pairs,
    crossover_seq_len,
    doubling_ratio,
    layer_flops,
    pair_flops,
    prefill_flops,
    score_bytes_naive,
    score_bytes_online,
)
from attn_core.cost.gpus import GPU, GPUS_FILE, custom_gpu, list_gpus, load_gpu
from attn_core.cost.ledger import LedgerRow, attention_twin, layer_ledger
from attn_core.cost.mla import MLA
from attn_core.cost.params import (
    AttentionParams,
    ParamCount,
    attention_params,
    decode_weight_bytes,
    model_params,
    weight_bytes,
)
from attn_core.cost.report import (
    CostReport,
    CostSweep,
    KVHeadVariant,
    cost_report,
    cost_sweep,
    kv_head_variants,
    sweep_grid,
)
from attn_core.cost.score_memory import (
    LSE_BYTES,
    MAX_T,
    MemoryBill,
    memory_bill,
    memory_sweep,
    naive_score_bytes,
    online_state_bytes,
    recompute_flops,
)
from attn_core.cost.serving import (
    ServingCapacity,
    cached_tokens,
    decode_intensity,
    decode_weight_bytes_expected,
    experts_touched_expected,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    serving_capacity,
    state_bytes,
    state_bytes_per_sequence,
)
from attn_core.cost.shapes import (
    ACT_KEYS,
    CONTEXT_KEYS,
    FF_KEYS,
    GATED_ACTIVATIONS,
    HEAD_DIM_KEYS,
    HEAD_KEYS,
    KV_HEAD_KEYS,
    LAYER_KEYS,
    MAX_CONFIG_BYTES,
    MODELS_DIR,
    VOCAB_KEYS,
    WIDTH_KEYS,
    ConfigError,
    ModelShape,
    from_hf_config,
    list_presets,
    load_preset,
    load_preset_config,
    parse_config_bytes,
    parse_config_text,
)
from attn_core.cost.units import (
    BINARY_UNITS,
    COUNT_SUFFIXES,
    DECIMAL_BYTE_UNITS,
    FLOP_UNITS,
    format_bytes,
    format_bytes_binary,
    format_bytes_decimal,
    format_count,
    format_count_short,
    format_flops,
    format_percent,
    format_rate,
    format_seconds,
)
from attn_core.cost.whole_model import DecodeBound, decode_lower_bound

__all__ = [
    "ACT_KEYS",
    "BINARY_UNITS",
    "CONTEXT_KEYS",
    "COUNT_SUFFIXES",
    "DECIMAL_BYTE_UNITS",
    "DTYPE_BYTES",
    "EXPERT_KEYS",
    "FF_KEYS",
    "FLOP_UNITS",
    "GATED_ACTIVATIONS",
    "GPU",
    "GPUS_FILE",
    "HEAD_DIM_KEYS",
    "HEAD_KEYS",
    "KV_HEAD_KEYS",
    "LAYER_KEYS",
    "LSE_BYTES",
    "MAX_CONFIG_BYTES",
    "MAX_INT",
    "MAX_T",
    "MLA",
    "MODELS_DIR",
    "VOCAB_KEYS",
    "WEIGHT_BITS",
    "WIDTH_KEYS",
    "AttentionParams",
    "ConfigError",
    "CostReport",
    "CostSweep",
    "DecodeBound",
    "KVHeadVariant",
    "LayerFlops",
    "LedgerRow",
    "MemoryBill",
    "MoE",
    "ModelShape",
    "ParamCount",
    "PrefillFlops",
    "ServingCapacity",
    "attention_pairs",
    "attention_params",
    "attention_twin",
    "bytes_per_value",
    "cached_tokens",
    "cost_report",
    "cost_sweep",
    "crossover_seq_len",
    "custom_gpu",
    "decode_intensity",
    "decode_lower_bound",
    "decode_weight_bytes",
    "decode_weight_bytes_expected",
    "doubling_ratio",
    "experts_touched_expected",
    "format_bytes",
    "format_bytes_binary",
    "format_bytes_decimal",
    "format_count",
    "format_count_short",
    "format_flops",
    "format_percent",
    "format_rate",
    "format_seconds",
    "from_hf_config",
    "kv_cache_bytes",
    "kv_cache_bytes_per_token",
    "kv_head_variants",
    "layer_flops",
    "layer_ledger",
    "list_gpus",
    "list_presets",
    "load_gpu",
    "load_preset",
    "load_preset_config",
    "memory_bill",
    "memory_sweep",
    "model_params",
    "naive_score_bytes",
    "online_state_bytes",
    "pair_flops",
    "parse_config_bytes",
    "parse_config_text",
    "prefill_flops",
    "recompute_flops",
    "score_bytes_naive",
    "score_bytes_online",
    "serving_capacity",
    "state_bytes",
    "state_bytes_per_sequence",
    "sweep_grid",
    "weight_bytes",
    "weight_bytes_per_param",
]
