"""The model's shape for the cost pages: one frozen dataclass, validated on construction, with
every derived quantity (group size, attention kind, widths, layer counts by kind) computed in one
place. `attn_core.cost.config_reader` builds it from a preset or a Hugging Face ``config.json`` dict.

Names follow the cards: L layers, d = d_model, h query heads, H_kv key/value heads, d_h head
width, d_ff feed-forward width (cards 9, 11, 13, 14). H_kv = h is multi-head attention (MHA),
1 < H_kv < h grouped-query (GQA), H_kv = 1 multi-query (MQA); query head n reads KV head
n // (h / H_kv).
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from attn_core.cost.config_keys import MAX_INT, ConfigError
from attn_core.cost.experts import MoE
from attn_core.cost.layer_config import ATTENTION_KINDS, FFN_ONLY_KINDS, LAYER_KINDS, LayerKind
from attn_core.cost.layer_variants import PerLayerEmbeddings
from attn_core.cost.layers import NONE, LayerKinds
from attn_core.cost.mixers import STATE_KIND_NAMES, STATE_KINDS, StateMixer
from attn_core.cost.mla import MLA

MlpKind = Literal["gated", "plain"]
NormKind = Literal["rms", "layer"]


class LayerGroup(NamedTuple):
    """Layers alike in their cost: their kind, whether they hold experts, whether they reuse an
    earlier layer's K and V (Gemma 4). The key of `ModelShape.layer_groups`."""

    kind: LayerKind
    moe: bool
    shared: bool


@dataclass(frozen=True)
class ModelShape:
    """Everything the cost formulas need about a decoder-only transformer.

    Derived quantities (group size, attention kind, widths) are properties below — the one
    place they are computed. Build with ``from_hf_config`` or ``load_preset``; validation in
    ``__post_init__`` rejects shapes no formula can size.
    """

    name: str
    n_layers: int  # L
    d_model: int  # d
    n_heads: int  # h, query heads
    n_kv_heads: int  # H_kv, key/value heads (= h for MHA, 1 for MQA)
    head_dim: int  # d_h = d_k = d_v
    d_ff: int  # feed-forward hidden width
    mlp_kind: MlpKind  # "gated": 3 matrices d×d_ff (SwiGLU); "plain": 2 matrices
    vocab_size: int
    attention_bias: bool = False  # biases on the Q, K and V projections (and on O unless output_bias says no)
    output_bias: bool | None = None  # bias on the O projection; None: the same as attention_bias
    mlp_bias: bool = False  # biases on the feed-forward matrices
    norm_kind: NormKind = "rms"  # RMSNorm: d weights; LayerNorm: d weights + d biases
    tie_embeddings: bool = False  # output head shares the token-embedding matrix
    learned_positions: bool = False  # absolute position table of max_context × d weights
    sliding_window: int | None = None  # each query sees at most this many keys (incl. itself)
    max_context: int | None = None  # trained context length (positions), if the config says
    source: str = ""  # where the numbers came from
    layer_types: LayerKinds | None = None  # per layer, by rule or list; None: all alike (see layer_kinds)
    attention_chunk_size: int | None = None  # chunked layers attend within chunks of this many tokens
    moe: MoE | None = None  # mixture-of-experts MLP (experts.MoE); None: one dense MLP per layer
    mla: MLA | None = None  # multi-head latent attention (mla.MLA); None: per-head K and V
    attention_sinks: bool = False  # one learned sink logit per query head per layer (gpt-oss)
    qk_norm: bool = False  # a d_h-wide norm on queries and keys (Qwen3, Gemma 3)
    norms_per_layer: int = 2  # pre-attention and pre-MLP; Gemma 2/3 add two post-norms
    quantization: str | None = None  # the config's quantization_config: reported, never applied
    nextn_layers_left_out: int = 0  # MTP layers the config declares (config_keys.MTP_KEYS): beside the model
    state_mixer: StateMixer | None = None  # the linear-attention / state-space layers' mixer (mixers.py)
    state_dtype: str | None = None  # the recurrent state's dtype where the config states it (mixers.py)
    attention_output_gate: bool = False  # gated attention: W_Q is d × 2h·d_h, half of it a sigmoid gate
    one_mixer_per_layer: bool = False  # Nemotron-H: a layer is one block (M, *, - or E), not mixer + MLP
    rotary_dim: int | None = None  # rotary turns the first this many of each head's d_h (None: all); no FLOPs
    # Gemma 4's per-layer variation (`attn_core.cost.layer_variants`):
    global_head_dim: int | None = None  # full-attention layers' d_h where it differs from head_dim (512)
    global_kv_heads: int | None = None  # full-attention layers' H_kv where it differs from n_kv_heads
    global_value_is_key: bool = False  # full layers' V comes from W_K's output: no W_V (attention_k_eq_v)
    kv_shared_layers: int = (
        0  # the last this many layers reuse an earlier layer's K and V: no W_K, W_V, cache
    )
    double_wide_shared_mlp: bool = False  # the KV-sharing layers' MLP is 2·d_ff wide
    per_layer_embeddings: PerLayerEmbeddings | None = None  # a p-wide embedding per layer, gated in
    # layers attending to another sequence's K and V (an image's): no cache that grows with T
    cross_attention_layers: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for field in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab_size"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_INT:
                raise ConfigError(f"{field} must be a positive integer, got {value!r}")
        if self.n_kv_heads > self.n_heads or self.n_heads % self.n_kv_heads:
            raise ConfigError(
                f"{self.n_heads} query heads cannot share {self.n_kv_heads} KV heads: "
                "the query-head count must be a multiple of the KV-head count"
            )
        if self.mlp_kind not in ("gated", "plain"):
            raise ConfigError(f"mlp_kind must be 'gated' or 'plain', got {self.mlp_kind!r}")
        if self.norm_kind not in ("rms", "layer"):
            raise ConfigError(f"norm_kind must be 'rms' or 'layer', got {self.norm_kind!r}")
        for field in ("sliding_window", "max_context"):
            value = getattr(self, field)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(f"{field} must be a positive integer or absent, got {value!r}")
        if self.rotary_dim is not None and (
            isinstance(self.rotary_dim, bool) or not isinstance(self.rotary_dim, int)
            or not 1 <= self.rotary_dim <= self.head_dim
        ):  # fmt: skip
            raise ConfigError(f"rotary_dim must be from 1 to d_h = {self.head_dim}, got {self.rotary_dim!r}")
        for field in ("global_head_dim", "global_kv_heads"):
            value = getattr(self, field)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_INT
            ):
                raise ConfigError(f"{field} must be a positive integer or absent, got {value!r}")
        if self.global_kv_heads is not None and self.n_heads % self.global_kv_heads:
            raise ConfigError(
                f"{self.n_heads} query heads cannot share {self.global_kv_heads} global KV heads: "
                "the query-head count must be a multiple of the KV-head count"
            )
        if (
            isinstance(self.kv_shared_layers, bool)
            or not isinstance(self.kv_shared_layers, int)
            or not (0 <= self.kv_shared_layers < self.n_layers)
        ):
            raise ConfigError(
                f"kv_shared_layers must be from 0 to L − 1 = {self.n_layers - 1:,}, got {self.kv_shared_layers!r}"
            )
        if self.kv_shared_layers and (self.moe is not None or self.mla is not None):
            raise ConfigError(
                "KV sharing (num_kv_shared_layers) is read for dense models with per-head K and V only"
            )
        if self.learned_positions and self.max_context is None:
            raise ConfigError("learned position embeddings need a max context (n_positions)")
        self._check_layer_types()

    def _check_layer_types(self) -> None:
        kinds = self.layer_types
        if kinds is None:
            return
        counts = kinds.counts()
        if kinds.n_layers != self.n_layers or any(k not in LAYER_KINDS for k in counts):
            raise ConfigError(
                f"layer_types must give one of {LAYER_KINDS} for each of the {self.n_layers:,} layers"
            )
        if "sliding" in counts and self.sliding_window is None:
            raise ConfigError("layer_types has sliding layers but the config has no 'sliding_window'")
        if "chunked" in counts and self.attention_chunk_size is None:
            raise ConfigError("layer_types has chunked layers but the config has no 'attention_chunk_size'")
        if not any(kind in ATTENTION_KINDS for kind in counts):
            raise ConfigError(
                "layer_types has no attention layer: this calculator sizes models with at least one"
            )
        shared = kinds.counts_from(self.n_layers - self.kv_shared_layers)
        if self.kv_shared_layers and not set(shared) <= set(counts - shared):
            raise ConfigError(
                f"the last {self.kv_shared_layers:,} layers reuse the K and V of an earlier layer of their kind, "
                "but some kind among them has no earlier layer (num_kv_shared_layers)"
            )
        for kind in counts:
            if kind in STATE_KINDS and (self.state_mixer is None or self.state_mixer.kind != kind):
                raise ConfigError(f"layer_types has {STATE_KIND_NAMES[kind]} layers but no mixer sizes them")
            if kind in FFN_ONLY_KINDS and not self.one_mixer_per_layer:
                raise ConfigError(
                    f"layer_types has {kind!r} layers, which only a one-block-per-layer pattern has"
                )

    # -- derived quantities, all in one place ------------------------------------------------
    @property
    def group_size(self) -> int:
        """G = h / H_kv query heads per KV head (card 14)."""
        return self.n_heads // self.n_kv_heads

    @property
    def layer_kinds(self) -> LayerKinds:
        """Each layer's attention pattern: 'full', 'sliding' (the last W keys) or 'chunked'
        (keys of the query's own chunk). Without layer_types: all sliding if there is a window.
        Index it (``layer_kinds[i]``) or count it; never loop over L (`attn_core.cost.layers`)."""
        if self.layer_types is not None:
            return self.layer_types
        return LayerKinds.uniform(self.n_layers, "sliding" if self.sliding_window else "full")

    @functools.cached_property
    def kind_counts(self) -> dict[LayerKind, int]:
        """Layers per attention kind, e.g. {'sliding': 52, 'full': 10} for Gemma 3 27B."""
        return dict(self.layer_kinds.counts())

    @functools.cached_property
    def layer_census(self) -> dict[tuple[LayerKind, bool], int]:
        """Layers per (attention kind, MoE layer or not): the groups every whole-model sum runs over."""
        return dict(self.layer_kinds.census(self.moe.moe_layers if self.moe is not None else NONE))

    @functools.cached_property
    def shared_kv_counts(self) -> dict[LayerKind, int]:
        """Attention layers per kind that reuse an earlier layer's K and V (the last
        ``kv_shared_layers``): they compute queries only and keep no cache of their own."""
        if not self.kv_shared_layers:
            return {}
        tail = self.layer_kinds.counts_from(self.n_layers - self.kv_shared_layers)
        return {k: n for k, n in tail.items() if k in ATTENTION_KINDS}

    @functools.cached_property
    def caching_counts(self) -> dict[LayerKind, int]:
        """Attention layers per kind that keep K and V of their own: each one's cache grows with T.
        Not a KV-sharing layer, nor a cross-attention layer (its keys are the image's, fixed)."""
        cross = Counter(self.layer_kinds[i] for i in self.cross_attention_layers)
        out = {
            k: n - self.shared_kv_counts.get(k, 0) - cross[k]
            for k, n in self.kind_counts.items()
            if k in ATTENTION_KINDS
        }
        return {k: n for k, n in out.items() if n}

    def head_dim_of(self, kind: str | None = None) -> int:
        """d_h of a layer of this kind: Gemma 4's global (full) layers have wider heads."""
        return self.global_head_dim if kind == "full" and self.global_head_dim else self.head_dim

    def kv_heads_of(self, kind: str | None = None) -> int:
        """H_kv of a layer of this kind (Gemma 4 may give its global layers fewer)."""
        return self.global_kv_heads if kind == "full" and self.global_kv_heads else self.n_kv_heads

    def value_is_key(self, kind: str | None = None) -> bool:
        """Does a layer of this kind take V from W_K's output (no W_V of its own)?"""
        return self.global_value_is_key and kind == "full"

    @functools.cached_property
    def layer_groups(self) -> dict[LayerGroup, int]:
        """Layers per (kind, MoE layer or not, KV-shared or not): `layer_census` split where
        Gemma 4's KV-sharing layers (never MoE layers) differ from the rest of their kind."""
        out = {LayerGroup(kind, moe, False): n for (kind, moe), n in self.layer_census.items()}
        for kind, n in self.shared_kv_counts.items():
            out[LayerGroup(kind, False, False)] -= n
            out[LayerGroup(kind, False, True)] = n
        return {g: n for g, n in out.items() if n}

    def is_shared_layer(self, layer: int) -> bool:
        """Does this layer reuse an earlier layer's K and V (the last ``kv_shared_layers``)?"""
        return layer >= self.n_layers - self.kv_shared_layers

    @property
    def n_moe_layers(self) -> int:
        return sum(n for (_, moe), n in self.layer_census.items() if moe)

    @staticmethod
    def is_attention(kind: str) -> bool:
        """Full, sliding or chunked attention: the layers whose cache grows with T."""
        return kind in ATTENTION_KINDS

    def has_mlp(self, kind: str) -> bool:
        """Does a layer of this kind hold a feed-forward part (dense or MoE)? Every layer does,
        except in Nemotron-H's pattern, where only '-' (mlp) and 'E' (moe) layers do."""
        return not self.one_mixer_per_layer or kind in FFN_ONLY_KINDS

    @property
    def n_attention_layers(self) -> int:
        """Layers of full, sliding or chunked attention (all L in a transformer)."""
        return sum(n for kind, n in self.kind_counts.items() if kind in ATTENTION_KINDS)

    @property
    def n_state_layers(self) -> int:
        """Linear-attention and state-space layers: a fixed state per sequence, no growing cache."""
        return sum(n for kind, n in self.kind_counts.items() if kind in STATE_KINDS)

    @property
    def n_mlp_layers(self) -> int:
        """Layers with a feed-forward part, dense or MoE."""
        return sum(n for kind, n in self.kind_counts.items() if self.has_mlp(kind))

    @property
    def is_hybrid(self) -> bool:
        return self.n_state_layers > 0

    @property
    def representative_layer(self) -> tuple[LayerKind, bool]:
        """(kind, MoE) of the layer the per-layer figures describe: the last layer if it is an
        attention layer (every transformer), else the attention group with the most layers."""
        last = self.layer_kinds[self.n_layers - 1]
        if last in ATTENTION_KINDS:
            return last, self.is_moe_layer(self.n_layers - 1)
        groups = [(n, moe, kind) for (kind, moe), n in self.layer_census.items() if kind in ATTENTION_KINDS]
        if not groups:
            return last, self.is_moe_layer(self.n_layers - 1)
        _, moe, kind = max(groups)
        if self.one_mixer_per_layer:  # its attention block has no MLP; say whether the model has experts
            moe = self.n_moe_layers > 0
        return kind, moe

    @property
    def uniform_window(self) -> int | None:
        """The window when EVERY layer slides (Mistral), else None: the per-layer formulas of
        cards 11 and 13 apply a window only when all layers share it."""
        return self.sliding_window if set(self.kind_counts) == {"sliding"} else None

    def is_moe_layer(self, layer: int) -> bool:
        return self.moe is not None and layer in self.moe.moe_layers

    @property
    def attention_kind(self) -> str:
        """'MLA' (a cached latent), 'MHA' (H_kv = h), 'MQA' (H_kv = 1) or 'GQA' (in between)."""
        if self.mla is not None:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    @property
    def q_width(self) -> int:
        """h·d_h, the width of all query heads side by side (= d in every preset)."""
        return self.n_heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """H_kv·d_h, the width of all key (or value) heads side by side."""
        return self.n_kv_heads * self.head_dim

    @property
    def mlp_matrices(self) -> int:
        """Number of d × d_ff matrices in the feed-forward network: 3 gated, 2 plain."""
        return 3 if self.mlp_kind == "gated" else 2

    def with_kv_heads(self, n_kv_heads: int) -> ModelShape:
        """The same model with H_kv changed (MHA: h, MQA: 1) — for what-if comparisons."""
        return dataclasses.replace(self, n_kv_heads=n_kv_heads, name=f"{self.name} (H_kv={n_kv_heads})")

    def summary(self) -> dict[str, Any]:
        """The shape as a flat dict of plain values (for tables and JSON)."""
        row = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        row["layer_types"] = dict(self.kind_counts)
        row["per_layer_embeddings"] = (
            None if self.per_layer_embeddings is None else dataclasses.asdict(self.per_layer_embeddings)
        )
        row["mla"] = None if self.mla is None else dataclasses.asdict(self.mla)
        row["state_mixer"] = None if self.state_mixer is None else dataclasses.asdict(self.state_mixer)
        if self.moe is not None:  # the MoE layers as a count, not as the rule that places them
            fields = dataclasses.fields(self.moe)
            row["moe"] = {f.name: getattr(self.moe, f.name) for f in fields} | {
                "moe_layers": self.n_moe_layers
            }
        row.update(attention_kind=self.attention_kind, group_size=self.group_size)
        return row
