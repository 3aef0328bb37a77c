"""attn_core: scaled dot-product attention, derived, computed and checked.

Imports torch/numpy only — never streamlit or plotly. Mask convention: True = may attend.
"""

from attn_core.attention import AttentionResult, attention, default_scale, logsumexp, stable_softmax
from attn_core.backward import BackwardResult, attention_backward
from attn_core.conventions import ConventionsReport, compare_conventions, convert
from attn_core.costs import CostReport, cost_report, crossover_seq_len, kv_cache_bytes, layer_flops
from attn_core.equivariance import BosShare, PermutationReport, bos_share, permutation_test
from attn_core.finite_diff import FiniteDifferences, finite_differences
from attn_core.gpus import GPU, list_gpus, load_gpu
from attn_core.jacobian import gershgorin_bound, jacobian_spectrum, softmax_jacobian, softmax_jvp
from attn_core.leakage import (
    CachedBlockReport,
    DecodeReport,
    PerturbationReport,
    cached_block,
    decode_with_kv_cache,
    perturbation_experiment,
)
from attn_core.mask_gallery import MaskView, gallery_mask
from attn_core.masks import allowed_fraction, causal_mask, padding_mask, sliding_window_mask
from attn_core.memory import MemoryBill, memory_bill
from attn_core.models import ConfigError, ModelShape, from_hf_config, list_presets, load_preset
from attn_core.online import (
    MergeResult,
    OnlineResult,
    OnlineTrace,
    PartialState,
    merge_partials,
    online_attention,
    online_softmax_trace,
)
from attn_core.precision import PrecisionRow, precision_study

__all__ = [
    "GPU",
    "AttentionResult",
    "BackwardResult",
    "BosShare",
    "CachedBlockReport",
    "ConfigError",
    "ConventionsReport",
    "CostReport",
    "DecodeReport",
    "FiniteDifferences",
    "MaskView",
    "MemoryBill",
    "MergeResult",
    "ModelShape",
    "OnlineResult",
    "OnlineTrace",
    "PartialState",
    "PermutationReport",
    "PerturbationReport",
    "PrecisionRow",
    "allowed_fraction",
    "attention",
    "attention_backward",
    "bos_share",
    "cached_block",
    "causal_mask",
    "compare_conventions",
    "convert",
    "cost_report",
    "crossover_seq_len",
    "decode_with_kv_cache",
    "default_scale",
    "finite_differences",
    "from_hf_config",
    "gallery_mask",
    "gershgorin_bound",
    "jacobian_spectrum",
    "kv_cache_bytes",
    "layer_flops",
    "list_gpus",
    "list_presets",
    "load_gpu",
    "load_preset",
    "logsumexp",
    "memory_bill",
    "merge_partials",
    "online_attention",
    "online_softmax_trace",
    "padding_mask",
    "permutation_test",
    "perturbation_experiment",
    "precision_study",
    "sliding_window_mask",
    "softmax_jacobian",
    "softmax_jvp",
    "stable_softmax",
]
