"""Layers that differ from one another within one model, read from a Gemma 4 (``gemma4_text``) config.

Gemma 4 varies its layers in four ways the closed forms count, each by rule (never per layer):
- wider global heads: its full-attention layers have d_h = ``global_head_dim`` (512 by default,
  twice the sliding layers' 256) and, with ``attention_k_eq_v``, ``num_global_key_value_heads``
  KV heads and no W_V (V is taken from W_K's output, normed apart); transformers writes these as a
  ``per_layer_config`` that overrides ``head_dim`` / ``num_key_value_heads`` on the full layers;
- KV sharing: the last ``num_kv_shared_layers`` layers reuse the K and V of the last earlier layer
  of their kind: they hold W_Q, W_O and a query norm only, and keep no cache of their own;
- a double-wide MLP (2·d_ff) on those sharing layers when ``use_double_wide_mlp`` is set;
- per-layer embeddings (PLE): a second table of ``vocab_size_per_layer_input`` rows, each
  L·p wide (p = ``hidden_size_per_layer_input``), plus a d → L·p projection of the token's
  embedding and a p-wide norm; in each layer a d → p gate, a p → d projection and a d-wide norm.

A config that varies its layers in a way not listed here (a per_layer_config key other than the
two above, an override on a sliding layer, the MoE block) is refused with the key named; the
model-derived figures (`attn_core.anatomy`) size it instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attn_core.cost.config_keys import ConfigError, read_bool, read_int, whole
from attn_core.cost.layers import Every, LayerKinds, LayerSet

GLOBAL_HEAD_DIM_DEFAULT = 512  # Gemma4TextConfig's global_head_dim when the config leaves it out
PLE_WIDTH_DEFAULT = 256  # hidden_size_per_layer_input
PLE_VOCAB_DEFAULT = 262_144  # vocab_size_per_layer_input
OVERRIDABLE = ("head_dim", "num_key_value_heads")


@dataclass(frozen=True)
class PerLayerEmbeddings:
    """Gemma 4's per-layer embeddings (PLE): p = ``width`` numbers per layer per token."""

    width: int  # p, hidden_size_per_layer_input
    vocab: int  # rows of the per-layer table, vocab_size_per_layer_input

    def table(self, n_layers: int) -> int:
        """The packed table: vocab × L·p weights (a token indexes one row of it)."""
        return self.vocab * n_layers * self.width

    def projections(self, d_model: int, n_layers: int) -> int:
        """d·L·p (the model-level projection of the token's embedding) + L · 2·d·p (each layer's
        d → p gate and p → d projection)."""
        return d_model * n_layers * self.width + n_layers * 2 * d_model * self.width


def gemma4_layer_kinds(config: Mapping[str, Any], n_layers: int, kinds: LayerKinds | None) -> LayerKinds:
    """Gemma 4's layer kinds: the config's ``layer_types``, or by default every 6th layer full (5:1);
    the last layer is always full (transformers forces it)."""
    if kinds is None or config.get("layer_types") is None:
        return LayerKinds(n_layers, "sliding", "full", LayerSet(Every(6, 5), added=frozenset({n_layers - 1})))
    if kinds.listed is not None and kinds.listed[-1] != "full":
        return LayerKinds(n_layers, listed=(*kinds.listed[:-1], "full"))
    return kinds


def _global_overrides(
    config: Mapping[str, Any], kinds: LayerKinds, n_layers: int
) -> tuple[int | None, int | None]:
    """(d_h, H_kv) of the full layers, from ``per_layer_config`` or ``global_head_dim`` and
    ``num_global_key_value_heads`` (the latter only with ``attention_k_eq_v``, as the class reads it)."""
    table = config.get("per_layer_config")
    if table is None:
        head = read_int(config, ("global_head_dim",), "global head width", default=GLOBAL_HEAD_DIM_DEFAULT)
        kv = config.get("num_global_key_value_heads")
        if kv is not None and config.get("attention_k_eq_v", False) is not False:
            kv = read_int(config, ("num_global_key_value_heads",), "global KV-head count")
        else:
            kv = None
        return head, kv
    if not isinstance(table, Mapping) or len(table) > n_layers:
        raise ConfigError("config key 'per_layer_config' must map layer indices to overrides")
    seen: dict[str, set] = {k: set() for k in OVERRIDABLE}
    layers = set()
    for key, overrides in table.items():
        try:
            i = int(key)
        except (TypeError, ValueError):
            raise ConfigError(
                f"config key 'per_layer_config' has {str(key)[:40]!r}: not a layer index"
            ) from None
        if not 0 <= i < n_layers or not isinstance(overrides, Mapping):
            raise ConfigError(
                f"config key 'per_layer_config' has layer {i}: not one of the {n_layers:,} layers"
            )
        other = next((k for k in overrides if k not in OVERRIDABLE), None)
        if other is not None:
            raise ConfigError(
                f"config key 'per_layer_config' overrides {str(other)[:40]!r} on layer {i}: the formulas read "
                "per-layer head_dim and num_key_value_heads only"
            )
        if kinds[i] != "full":
            raise ConfigError(
                f"config key 'per_layer_config' overrides layer {i}, a {kinds[i]} layer: the formulas read "
                "Gemma 4's overrides on its full-attention layers only"
            )
        layers.add(i)
        for k in OVERRIDABLE:
            seen[k].add(overrides.get(k))
    n_full = kinds.counts().get("full", 0)
    if not layers:
        return None, None
    if len(layers) != n_full or any(len(v) > 1 for v in seen.values()):
        raise ConfigError(
            "config key 'per_layer_config' must give every full-attention layer the same overrides "
            "(Gemma 4's global layers); the formulas do not read other per-layer patterns"
        )
    (head,), (kv,) = seen["head_dim"], seen["num_key_value_heads"]
    head = None if head is None else whole("per_layer_config: head_dim", head)
    kv = None if kv is None else whole("per_layer_config: num_key_value_heads", kv)
    return head, kv


def read_gemma4(config: Mapping[str, Any], n_layers: int, kinds: LayerKinds, head_dim: int) -> dict[str, Any]:
    """The `ModelShape` fields of Gemma 4's per-layer variation (see the module docstring)."""
    if config.get("enable_moe_block"):
        raise ConfigError(
            "config key 'enable_moe_block': Gemma 4's MoE block beside its MLP is not one the formulas read"
        )
    head, kv = _global_overrides(config, kinds, n_layers)
    shared = read_int(config, ("num_kv_shared_layers",), "KV-shared layers", default=0, minimum=0)
    width = config.get("hidden_size_per_layer_input", PLE_WIDTH_DEFAULT)
    ple = None
    if width:  # 0 or null: no per-layer embeddings (the class's own test)
        ple = PerLayerEmbeddings(
            width=whole("hidden_size_per_layer_input", width),
            vocab=read_int(
                config, ("vocab_size_per_layer_input",), "per-layer vocabulary", default=PLE_VOCAB_DEFAULT
            ),
        )
    return {
        "global_head_dim": None if head in (None, head_dim) else head,
        "global_kv_heads": kv,
        "global_value_is_key": read_bool(config, ("attention_k_eq_v",), False),
        "kv_shared_layers": shared,
        "double_wide_shared_mlp": read_bool(config, ("use_double_wide_mlp",), False) and shared > 0,
        "per_layer_embeddings": ple,
    }
