"""attn_core: scaled dot-product attention, derived, computed and checked.

The rooms, each with one job (its ``__init__`` or module docstring says which; docs/layout.md
is the map, and ``tests/test_layers.py`` holds its import rules):

- the math, one derivation per module: ``attention``, ``masks``, ``backward``, ``online``,
  ``tile_plan``, ``tile_maps``, ``jacobian``, ``finite_diff``, ``stats``, ``toy``; ``heads``: the head metrics
  shared by ``trained/`` and ``hf/``; ``oracle``: the independent references and every tolerance
  with its argument; ``limits`` and ``dtypes``: the caps and the dtype table. Torch and numpy only.
- ``slips/``: the common mistakes, one registry per family. ``experiments/``: the studies the
  pages show (leakage, conventions, equivariance, precision). ``theory/``: the scaling and
  one-head cards, closed forms and seeded simulations. These import the math.
- ``cost/``: the cost model (config reading, layer patterns by rule, FLOPs, memory, serving,
  time bounds, the CLI); numpy only, and nothing else of ``attn_core``.
- ``kernels/``: the kernel bench (``python -m attn_core bench``, the Kernels page); torch, Triton
  when present. ``verify/``: the cost model against a real run on this machine; torch.
- ``anatomy/``: any model transformers can build, built on the meta device and read part by part.
- ``practice/``: a drill per card. ``trained/``: the tiny transformer trained live. ``hf/``: a
  Hugging Face model's attention, recomputed.
- ``views/``: one module per page, everything that page shows computed in one call; may import
  every room above, and nothing imports it but itself.

Never imports streamlit or plotly. Mask convention everywhere: True = may attend.

The public names below load on first use (PEP 562), so that ``python -m attn_core cost …``
never pays for importing torch.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        ["AttentionResult", "attention", "default_scale", "logsumexp", "stable_softmax"], "attention"
    ),
    **dict.fromkeys(["allowed_fraction", "causal_mask", "padding_mask", "sliding_window_mask"], "masks"),
    **dict.fromkeys(["BackwardResult", "attention_backward"], "backward"),
    **dict.fromkeys(
        [
            "MergeResult",
            "OnlineResult",
            "OnlineTrace",
            "PartialState",
            "merge_partials",
            "online_attention",
            "online_softmax_trace",
        ],
        "online",
    ),
    **dict.fromkeys(["LayerQK", "TileMaps", "tile_maps"], "tile_maps"),
    **dict.fromkeys(["gershgorin_bound", "jacobian_spectrum", "softmax_jacobian", "softmax_jvp"], "jacobian"),
    **dict.fromkeys(["FiniteDifferences", "finite_differences"], "finite_diff"),
    **dict.fromkeys(["ConventionsReport", "compare_conventions", "convert"], "experiments.conventions"),
    **dict.fromkeys(
        ["BosShare", "PermutationReport", "bos_share", "permutation_test"], "experiments.equivariance"
    ),
    **dict.fromkeys(
        ["CachedBlockReport", "DecodeReport", "cached_block", "decode_with_kv_cache"], "experiments.decoding"
    ),
    **dict.fromkeys(["PerturbationReport", "perturbation_experiment"], "experiments.perturbation"),
    **dict.fromkeys(["PrecisionRow", "precision_study"], "experiments.precision"),
    **dict.fromkeys(["MaskView", "gallery_mask"], "views.mask_gallery"),
    **dict.fromkeys(["SweepConfig", "run_sweep"], "kernels.runner"),
    # the cost model: numpy only
    **dict.fromkeys(
        [
            "AttentionParams",
            "CostReport",
            "attention_params",
            "cost_report",
            "crossover_seq_len",
            "layer_flops",
            "model_params",
        ],
        "cost",
    ),
    **dict.fromkeys(["kv_cache_bytes", "kv_cache_bytes_per_token", "serving_capacity"], "cost"),
    **dict.fromkeys(["GPU", "list_gpus", "load_gpu"], "cost"),
    **dict.fromkeys(["MemoryBill", "memory_bill", "naive_score_bytes"], "cost"),
    **dict.fromkeys(["ConfigError", "ModelShape", "from_hf_config", "list_presets", "load_preset"], "cost"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'attn_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"attn_core.{module}"), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """Importing ``attn_core.attention`` binds that submodule to the package's ``attention``
    attribute, which would hide the function ``attention`` once anything imported the module. A
    public name keeps meaning the function; the submodule stays reachable through sys.modules."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
