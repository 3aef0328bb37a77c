"""The one count of each phase's work, for every time the lab prices (`roofline.time_phase`): the
prefill of B prompts of P tokens and a decode step of B sequences with P tokens cached, each as
FLOPs by part and bytes by what is moved.

- FLOPs (`flops.prefill_flops`, matrix products only, 2 per multiply-add): the products over the
  weights F_w (projections, MLP or the top-k experts, the output head, a hybrid's maps; of them the
  routed experts' F_e), attention's pairs F_a (causal pairs; MLA naive in prefill, absorbed in
  decode, the form each runs in) and a hybrid's recurrent core F_c (chunked in prefill, one
  recurrent step in decode).
- Bytes, each read or written once: the active weights W (top-k experts per MoE layer, the fewest
  any batch can touch; an untied embedding table only for the rows looked up), the KV cache
  written (prefill, P tokens) or read (decode) and a hybrid's fixed state.

A decode step's new token costs prefill(P + 1) − prefill(P) of attention, and one token's products.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.dtypes import Tokens
from attn_core.cost.flops import PrefillFlops, prefill_flops
from attn_core.cost.inputs import Precision, Workload
from attn_core.cost.params import decode_weight_bytes, expert_params, weight_bytes
from attn_core.cost.serving import (
    decode_weight_bytes_expected,
    experts_touched_expected,
    kv_cache_bytes,
    state_bytes,
)


@dataclass(frozen=True)
class PhaseCount:
    """One phase of B sequences: FLOPs by part, bytes by what is moved (see the module docstring).
    The FLOPs and cache fields are arrays over the tokens cached when a phase is counted at many."""

    tokens: int  # rows each product over the weights has: B·P in prefill, B in decode
    product_flops: Tokens  # F_w: projections, MLP or active experts, output head, a hybrid's maps
    expert_flops: Tokens  # F_e ⊆ F_w: the routed experts' share
    expert_rows: float  # rows of each routed expert's product: k·tokens / experts touched
    attention_flops: Tokens  # F_a: the pairs each layer's pattern allows
    core_flops: Tokens  # F_c: a hybrid's recurrent core
    weight_bytes: int  # W: the weights read
    cache_bytes: Tokens  # the KV cache written (prefill) or read (decode)
    state_bytes: int  # a hybrid's fixed state, written or read

    @property
    def flops(self) -> Tokens:
        return self.product_flops + self.attention_flops + self.core_flops

    @property
    def mixing_bytes(self) -> Tokens:
        """M: the cache and the fixed state."""
        return self.cache_bytes + self.state_bytes

    @property
    def bytes(self) -> Tokens:
        return self.weight_bytes + self.mixing_bytes


@dataclass(frozen=True)
class WorkCount:
    """A workload's phases: the prefill, the first decode step, all N decode steps (arrays over
    P … P + N − 1 cached; None when N = 0), and the first step read two other ways."""

    prefill_flops: PrefillFlops  # the prefill's FLOPs by part, as the tables show them
    prefill: PhaseCount
    decode: PhaseCount  # P tokens cached, top-k experts per MoE layer (the floor)
    decode_steps: PhaseCount | None
    decode_uniform: PhaseCount  # the experts B sequences touch under uniform routing
    decode_every_weight: PhaseCount  # every weight, as card 13 counts (the whole table, all experts)


def expert_flops(shape: ModelShape, tokens: Tokens) -> Tokens:
    """F_e: the routed experts' share of the products, 2·k·(one expert's matrix weights) per token
    per MoE layer (0 for a dense model)."""
    m = shape.moe
    if m is None or not shape.n_moe_layers:
        return 0
    return 2 * m.top_k * expert_params(shape, m.expert_d_ff) * shape.n_moe_layers * tokens


def expert_rows(shape: ModelShape, tokens: int) -> float:
    """Rows of each touched routed expert's product: k·tokens / E·(1 − (1 − k/E)^tokens) (0 when dense)."""
    m = shape.moe
    if m is None or not shape.n_moe_layers:
        return 0.0
    return m.top_k * tokens / experts_touched_expected(m.n_experts, m.top_k, tokens)


def _weight_products(f: PrefillFlops) -> Tokens:
    """F_w of a count: every product over the weights."""
    return f.projections + f.mlp + f.lm_head + f.state_projections + f.per_layer_inputs


def decode_count(shape: ModelShape, context: Tokens, batch: int, precision: Precision) -> PhaseCount:
    """One decode step of B sequences with ``context`` tokens cached (a number or an array)."""
    one = prefill_flops(shape, 1, batch, causal=True)
    after, before = (prefill_flops(shape, c, batch, causal=True) for c in (context + 1, context))
    m = shape.state_mixer
    F_c = shape.n_state_layers * m.core_flops(1, decode=True) * batch if shape.n_state_layers else 0
    b_w, b_e, b_kv = precision.b_weight, precision.b_expert, precision.b_kv
    return PhaseCount(
        tokens=batch,
        product_flops=_weight_products(one),
        expert_flops=expert_flops(shape, batch),
        expert_rows=expert_rows(shape, batch),
        attention_flops=after.attention_absorbed - before.attention_absorbed,
        core_flops=F_c,
        weight_bytes=decode_weight_bytes(shape, batch, b_w, b_e),
        cache_bytes=kv_cache_bytes(shape, context, batch, b_kv),
        state_bytes=state_bytes(shape, batch, b_kv, precision.b_state),
    )


def prefill_count(shape: ModelShape, prompt: int, batch: int, precision: Precision) -> PhaseCount:
    """B prompts of P tokens: causal pairs, the weights read once, the cache and state written."""
    f = prefill_flops(shape, prompt, batch, causal=True)
    b_w, b_e, b_kv = precision.b_weight, precision.b_expert, precision.b_kv
    return PhaseCount(
        tokens=batch * prompt,
        product_flops=_weight_products(f),
        expert_flops=expert_flops(shape, batch * prompt),
        expert_rows=expert_rows(shape, batch * prompt),
        attention_flops=f.attention,
        core_flops=f.state_core,
        weight_bytes=decode_weight_bytes(shape, batch * prompt, b_w, b_e),
        cache_bytes=kv_cache_bytes(shape, prompt, batch, b_kv),
        state_bytes=state_bytes(shape, batch, b_kv, precision.b_state),
    )


def count_work(shape: ModelShape, workload: Workload, precision: Precision) -> WorkCount:
    """Every phase of the workload (P = its prompt, N its generated tokens, B its batch) at the
    precision's dtypes: the one count every time bound, estimate and calibrated time prices."""
    P, N, B = workload.prompt, workload.gen_len, workload.batch
    b_w, b_e = precision.b_weight, precision.b_expert
    first = decode_count(shape, P, B, precision)
    steps = decode_count(shape, np.arange(P, P + N, dtype=np.float64), B, precision) if N else None
    return WorkCount(
        prefill_flops=prefill_flops(shape, P, B, causal=True),
        prefill=prefill_count(shape, P, B, precision),
        decode=first,
        decode_steps=steps,
        decode_uniform=dataclasses.replace(
            first, weight_bytes=decode_weight_bytes_expected(shape, B, b_w, b_e)
        ),
        decode_every_weight=dataclasses.replace(first, weight_bytes=weight_bytes(shape, b_w, b_e)),
    )
