"""One what-if, everything at once (the CLI's and the page's single call), and the page's tables and
sweeps: MHA/GQA/MQA variants and cost curves over T."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.dtypes import _tokens, weight_bytes_per_param
from attn_core.cost.flops import (
    LayerFlops,
    PrefillFlops,
    crossover_seq_len,
    layer_flops,
    prefill_flops,
    score_bytes_naive,
    score_bytes_online,
)
from attn_core.cost.inputs import DEFAULT_PRECISION, Hardware, Precision, Workload
from attn_core.cost.params import AttentionParams, attention_params, mtp_layer_params, weight_bytes
from attn_core.cost.serving import (
    ServingCapacity,
    decode_intensity,
    experts_touched_expected,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    serving_capacity,
    state_bytes,
    state_bytes_per_sequence,
)
from attn_core.cost.whole_model import (
    PETABYTE,
    DecodeBound,
    Parameters,
    Timing,
    decode_lower_bound,
    decode_with_cache,
    parameters,
    timing,
)

FLOPS_CONVENTION = "matrix products only, 2 FLOPs per multiply-add; norms, softmax and rotary excluded"


# -- One what-if, everything at once (the CLI's and the page's single call) ------------------
@dataclass(frozen=True)
class CostReport:
    """Every cost of one configuration; ``to_json()`` is the CLI's ``--json`` contract."""

    model: ModelShape
    workload: Workload  # the inputs, as built (inputs.py): the one home of T, B, the dtypes and the GPU
    precision: Precision
    kv_cache_bytes_per_token: int
    kv_cache_bytes: int
    attention_params: AttentionParams
    flops: LayerFlops
    crossover_seq_len: float | None
    score_bytes_naive_per_layer: int
    score_bytes_online_per_layer: int
    weight_bytes: int
    decode_intensity: float
    serving: ServingCapacity | None = None  # memory as the device reports it
    decode: DecodeBound | None = None
    serving_card13: ServingCapacity | None = None  # cards 13/14's convention: vendor GB (80·10⁹ B)
    params: Parameters | None = None
    prefill: PrefillFlops | None = None  # the whole model, forward, B prompts of T tokens
    timing: Timing | None = None  # with a GPU: TTFT, decode and end-to-end bounds
    state_bytes: int = 0  # the fixed state of every linear/state layer, all B sequences
    state_bytes_per_sequence: int = 0
    hardware: Hardware | None = None

    # The inputs, read through from the objects that validated them.
    seq_len = property(lambda self: self.workload.seq_len)
    batch = property(lambda self: self.workload.batch)
    causal = property(lambda self: self.workload.causal)
    dtype = property(lambda self: self.precision.activations)  # activations and scores
    weight_dtype = property(lambda self: self.precision.weights)  # may be int4 with group scales, MXFP4
    expert_dtype = property(lambda self: self.precision.experts)
    kv_dtype = property(lambda self: self.precision.kv)
    # a hybrid's recurrent states; its conv states stay at kv_dtype
    state_dtype = property(lambda self: self.precision.state)
    gpu = property(lambda self: None if self.hardware is None else self.hardware.gpu)
    n_gpus = property(lambda self: 1 if self.hardware is None else self.hardware.n_gpus)

    @property
    def kv_cache_over_a_petabyte(self) -> bool:
        """An absurd request: it still answers, and says so."""
        return self.kv_cache_bytes > PETABYTE

    @property
    def beyond_max_context(self) -> bool:
        """T exceeds the context the model was trained for (the numbers still hold as arithmetic)."""
        return self.model.max_context is not None and self.seq_len > self.model.max_context

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-ready dict: ints stay exact ints, T* is an int when integral, null if never."""
        T_star = self.crossover_seq_len
        if T_star is not None and float(T_star).is_integer():
            T_star = int(T_star)
        out: dict[str, Any] = {
            "model": self.model.name,
            "seq_len": self.seq_len,
            "batch": self.batch,
            "dtype": self.dtype,
            "kv_dtype": self.kv_dtype,
            "causal": self.causal,
            "kv_cache_bytes_per_token": self.kv_cache_bytes_per_token,
            "kv_cache_bytes": self.kv_cache_bytes,
            "state_dtype": self.state_dtype,
            "state_bytes": self.state_bytes,
            "state_bytes_per_sequence": self.state_bytes_per_sequence,
            "experts_touched_per_layer_expected": self.experts_touched_expected,
            "attention_params_per_layer": self.attention_params.total,
            "flops_per_layer": {
                "projections": self.flops.projections,
                "attention": self.flops.attention,
                "mlp": self.flops.mlp,
                "total": self.flops.total,
            },
            "attention_flop_share": self.flops.attention_share,
            "crossover_seq_len": T_star,
            "score_bytes_naive_per_layer": self.score_bytes_naive_per_layer,
            "score_bytes_online_per_layer": self.score_bytes_online_per_layer,
            "weight_bytes": self.weight_bytes,
            "decode_attention_intensity_flop_per_byte": self.decode_intensity,
            "beyond_max_context": self.beyond_max_context,
            "kv_cache_over_a_petabyte": self.kv_cache_over_a_petabyte,
        }
        out |= self._whole_json()
        if self.gpu is not None and self.serving is not None and self.decode is not None:
            out.update(
                gpu=self.gpu.name,
                n_gpus=self.n_gpus,
                max_sequences=self.serving.max_sequences,
                max_sequences_is_upper_bound=True,
                gpu_memory_bytes=self.serving.memory_bytes,
                max_sequences_card13_convention=self.serving_card13.max_sequences,
                gpu_memory_bytes_card13_convention=self.serving_card13.memory_bytes,
                decode_ms_per_token_lower_bound=1e3 * self.decode.seconds_per_step,
                decode_ms_per_token_card13=1e3 * self.decode.card13_seconds_per_step,
                decode_tokens_per_s_upper_bound=self.decode.tokens_per_s,
                decode_ms_per_step_floor=1e3 * self.decode.seconds_per_step,
                decode_tokens_per_s_floor_ceiling=self.decode.tokens_per_s,
                decode_ms_per_step_uniform_routing=1e3 * self.decode.expected_seconds_per_step,
                decode_tokens_per_s_uniform_routing_ceiling=self.decode.expected_tokens_per_s,
                decode_weight_bytes_floor=self.decode.weight_bytes,
                decode_weight_bytes_uniform_routing=self.decode.expected_weight_bytes,
                ridge_flop_per_byte=self.gpu.ridge_flop_per_byte,
            )
        return out

    @property
    def experts_touched_expected(self) -> float | None:
        """E·(1 − (1 − k/E)^B) routed experts per MoE layer per decode step (None: dense)."""
        m = self.model.moe
        if m is None or not self.model.n_moe_layers:
            return None
        return experts_touched_expected(m.n_experts, m.top_k, self.batch)

    def _whole_json(self) -> dict[str, Any]:
        """The whole-model keys: parameters, prefill FLOPs, and with a GPU the TTFT/decode/end-to-end bounds."""
        p, f = self.params.count, self.prefill
        out: dict[str, Any] = {
            "weight_dtype": self.weight_dtype,
            "bits_per_weight": 8 * weight_bytes_per_param(self.weight_dtype),
            "expert_dtype": self.expert_dtype,
            "bits_per_expert_weight": 8 * weight_bytes_per_param(self.expert_dtype),
            "params": p.total,
            "active_params": p.active,
            "active_params_without_embeddings": p.active_without_embeddings,
            "published_params": None if self.params.published is None else self.params.published[0],
            "published_active_params": None if self.params.published is None else self.params.published[1],
            "nextn_layers_left_out": self.params.nextn_layers_left_out,
            "mtp_params_per_layer": mtp_layer_params(self.model)
            if self.params.nextn_layers_left_out
            else None,
            "mtp_in_params": False,  # beside the main model, as transformers builds it: not in "params"
            "attention_kind": self.model.attention_kind,
            "layer_types": dict(self.model.kind_counts),
            "state_params": p.state_mixers,
            "quantization_config": self.model.quantization,
            "prefill_flops": f.total,
            "prefill_flops_breakdown": {
                "projections": f.projections,
                "attention": f.attention,
                "attention_mla_absorbed": f.attention_absorbed,
                "mlp": f.mlp,
                "lm_head": f.lm_head,
                "state_projections": f.state_projections,
                "state_core": f.state_core,
            },
            "flops_convention": FLOPS_CONVENTION,
        }
        t = self.timing
        if t is not None:
            out |= {
                "efficiency": t.efficiency,
                "times_are": "estimates (bound / efficiency)" if t.is_estimate else "lower bounds",
                "ttft_ms_lower_bound": 1e3 * t.ttft_bound_s,
                "decode_ms_lower_bound": 1e3 * t.decode_step_bound_s,
                "ttft_bound_by": t.ttft_bound,
                "compute_dtype": t.prefill_time.roofline.compute,  # its dense peak prices the FLOPs
                "compute_flops_per_s_per_gpu": t.prefill_time.roofline.flops_per_s / self.n_gpus,
                "decode_bound_by": t.decode_time.bound_by,
                "prompt_len": t.prompt_len,
                "gen_len": t.gen_len,
                "end_to_end_ms_lower_bound": 1e3 * t.total_bound_s,
                "end_to_end_tokens_per_s_upper_bound": t.batch * t.gen_len / t.total_bound_s
                if t.gen_len
                else 0.0,
            }
            if t.is_estimate:
                out |= {
                    "ttft_ms_estimate": 1e3 * t.ttft_s,
                    "decode_ms_estimate": 1e3 * t.decode_step_s,
                    "end_to_end_ms_estimate": 1e3 * t.total_s,
                    "end_to_end_tokens_per_s_estimate": t.tokens_per_s,
                }
        return out


def cost_report(
    shape: ModelShape,
    workload: Workload,
    precision: Precision = DEFAULT_PRECISION,
    hardware: Hardware | None = None,
    preset: str | None = None,
) -> CostReport:
    """All of cards 9, 11–14 for one model at one T (scalar T only; use the functions above
    for sweeps), and the whole model's answers. A hybrid's fixed state: conv states at the cache
    dtype, recurrent states at ``precision.state`` (transformers keeps them in fp32). With hardware:
    the fits answers, TTFT at the workload's prompt and its generated tokens divided by its
    efficiency, and the decode bound as a floor and under uniform routing. ``preset`` names the
    preset, for its published parameter count."""
    T, batch, causal = workload.seq_len, workload.batch, workload.causal
    b, b_kv, b_w = precision.b, precision.b_kv, precision.b_weight
    b_e, b_s = precision.b_expert, precision.b_state
    gpu = None if hardware is None else hardware.gpu
    w = weight_bytes(shape, b_w, b_e)
    serving = decode = card13 = times = None
    if gpu is not None:
        serving = serving_capacity(shape, hardware, T, precision, weights=w)
        card13 = serving_capacity(shape, hardware, T, precision, weights=w, memory="vendor")
        decode = decode_lower_bound(shape, workload, precision, hardware)
        times = timing(shape, workload, precision, hardware)
    return CostReport(
        model=shape,
        kv_cache_bytes_per_token=kv_cache_bytes_per_token(shape, b_kv),
        kv_cache_bytes=kv_cache_bytes(shape, T, batch, b_kv),
        # the layer the per-layer figures describe (the last one: Gemma 4's is full, maybe KV-sharing)
        attention_params=attention_params(
            shape, kind=shape.representative_layer[0], shared=shape.kv_shared_layers > 0
        ),
        flops=layer_flops(shape, T, batch, causal),
        crossover_seq_len=crossover_seq_len(shape, causal),
        score_bytes_naive_per_layer=score_bytes_naive(shape, T, batch, b),
        score_bytes_online_per_layer=score_bytes_online(shape, T, batch),
        weight_bytes=w,
        decode_intensity=decode_intensity(shape, b_kv),
        serving=serving,
        decode=decode,
        serving_card13=card13,
        params=parameters(shape, preset),
        prefill=prefill_flops(shape, T, batch, causal),
        timing=times,
        state_bytes=state_bytes(shape, batch, b_kv, b_s),
        state_bytes_per_sequence=state_bytes_per_sequence(shape, b_kv, b_s),
        workload=workload,
        precision=precision,
        hardware=hardware,
    )


# -- Tables and sweeps for the cost page -----------------------------------------------------
@dataclass(frozen=True)
class KVHeadVariant:
    """One row of the MHA / GQA / MQA comparison for the same model (card 14)."""

    n_kv_heads: int
    kind: str  # "MHA", "GQA" or "MQA"
    kv_bytes_per_token: int
    kv_bytes_per_sequence: int
    cache_ratio_to_mha: float  # h / H_kv: how many times smaller than MHA's cache
    attention_params_per_layer: int
    decode_intensity: float  # FLOP per byte of decode attention
    max_sequences: int | None  # with the model's own weights held fixed (cache-only what-if)
    max_sequences_card14: int | None  # the same under card 14's vendor GB (80·10⁹ B per GPU)
    decode_ms_lower_bound: float | None


def kv_head_variants(
    shape: ModelShape,
    workload: Workload,
    precision: Precision = DEFAULT_PRECISION,
    hardware: Hardware | None = None,
) -> list[KVHeadVariant]:
    """The same model with H_kv = h (MHA), its own H_kv, a middle GQA group and 1 (MQA).

    Query heads, FLOPs and — to isolate the cache — the weight bytes stay those of the model
    as configured, as in card 14's serving comparison (16 GQA vs 2 MHA sequences)."""
    T, batch = workload.seq_len, workload.batch
    weight_bytes_per_param, kv_bytes_per_value = precision.b_weight, precision.b_kv
    gpu = None if hardware is None else hardware.gpu
    h = shape.n_heads
    divisors = [g for g in range(1, h + 1) if h % g == 0]
    middle = divisors[len(divisors) // 2]  # a representative GQA group count
    counts = sorted({h, shape.n_kv_heads, middle, 1}, reverse=True)
    weights = weight_bytes(shape, weight_bytes_per_param, precision.b_expert)
    own = None if gpu is None else decode_lower_bound(shape, workload, precision, hardware)
    rows = []
    for n_kv in counts:
        variant = shape.with_kv_heads(n_kv)
        serving = decode = card14 = None
        if gpu is not None:
            serving = serving_capacity(variant, hardware, T, precision, weights=weights)
            card14 = serving_capacity(variant, hardware, T, precision, weights=weights, memory="vendor")
            # the model's own decode floor (weights at their dtypes, a hybrid's fixed state) with
            # only the cache changed: the row at the model's own H_kv is the headline's step
            decode = decode_with_cache(own, kv_cache_bytes(variant, T, batch, kv_bytes_per_value))
        rows.append(
            KVHeadVariant(
                n_kv_heads=n_kv,
                kind=variant.attention_kind,
                kv_bytes_per_token=kv_cache_bytes_per_token(variant, kv_bytes_per_value),
                kv_bytes_per_sequence=kv_cache_bytes(variant, T, 1, kv_bytes_per_value),
                cache_ratio_to_mha=h / n_kv,
                attention_params_per_layer=attention_params(variant).total,
                decode_intensity=decode_intensity(variant, kv_bytes_per_value),
                max_sequences=None if serving is None else serving.max_sequences,
                max_sequences_card14=None if card14 is None else card14.max_sequences,
                decode_ms_lower_bound=None if decode is None else 1e3 * decode,
            )
        )
    return rows


def sweep_grid(T: int, points: int = 121, extra: tuple[float | None, ...] = ()) -> np.ndarray:
    """Log-spaced whole T from 1 to 4·max(T, extra…), with T and the extra points included
    (so a chart's markers sit exactly on its curve). At most points + len(extra) + 1 values."""
    top = 4 * max([T, *[int(x) for x in extra if x is not None]])
    grid = np.unique(np.geomspace(1, top, points).round())
    marks = [T, *[round(x) for x in extra if x is not None and x >= 1]]
    return np.unique(np.r_[grid, marks]).astype(np.float64)


@dataclass(frozen=True)
class CostSweep:
    """Costs over a grid of T (arrays, float64), for the page's charts and CSV downloads."""

    seq_len: np.ndarray
    full: LayerFlops
    causal: LayerFlops
    kv_cache_bytes: np.ndarray  # all B sequences
    score_bytes_naive_per_layer: np.ndarray
    score_bytes_online_per_layer: np.ndarray

    def columns(self, group: str | None = None) -> dict[str, np.ndarray]:
        """Named columns (units in the names) for a DataFrame / CSV: all of them, or one group
        ('flops', 'kv' or 'scores') after the T column."""
        groups = {
            "flops": {
                "projections (FLOP)": self.full.projections,
                "attention, all pairs (FLOP)": self.full.attention,
                "attention, causal pairs (FLOP)": self.causal.attention,
                "mlp (FLOP)": self.full.mlp,
                "attention share, all pairs": self.full.attention_share,
                "attention share, causal": self.causal.attention_share,
            },
            "kv": {"KV cache (B)": self.kv_cache_bytes},
            "scores": {
                "scores naive per layer (B)": self.score_bytes_naive_per_layer,
                "scores online per layer (B)": self.score_bytes_online_per_layer,
            },
        }
        if group is not None and group not in groups:
            raise ValueError(f"group must be one of {', '.join(groups)}, not {group!r}")
        chosen = groups.values() if group is None else [groups[group]]
        out = {"T (tokens)": self.seq_len}
        for cols in chosen:
            out |= cols
        return out


def cost_sweep(
    shape: ModelShape, T: Any, batch: int = 1, bytes_per_value: int = 2, kv_bytes_per_value: int = 2
) -> CostSweep:
    """Every T-dependent cost over an array of T, vectorized (10,000 points: about a millisecond)."""
    T = _tokens(np.atleast_1d(np.asarray(T)), minimum=1)
    return CostSweep(
        seq_len=T,
        full=layer_flops(shape, T, batch, causal=False),
        causal=layer_flops(shape, T, batch, causal=True),
        kv_cache_bytes=kv_cache_bytes(shape, T, batch, kv_bytes_per_value),
        score_bytes_naive_per_layer=score_bytes_naive(shape, T, batch, bytes_per_value),
        score_bytes_online_per_layer=score_bytes_online(shape, T, batch),
    )
