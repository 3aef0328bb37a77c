"""The work of one engine step, counted from the lab's per-phase counts (`attn_core.cost.phases`)
and read from tables so a simulation can count thousands of steps fast.

A step runs a prefill chunk of p tokens of one or more prompts (each chunk after c0 tokens already
cached) and one decode token for each of b sequences at context c_i. Its work, as a `PhaseCount`:

    tokens = p + b                                         (rows of every product over the weights)
    F_w    = (p + b) · f_w          f_w: one token's products (`phases.decode_count` at B = 1)
    F_a    = Σ_chunks [A(c0 + p) − A(c0)] + Σ_i a(c_i)    A: causal prefill pairs, a: one decode token
    W      = W(p + b)                 the active weights, with the experts p + b tokens touch
    cache  = Σ_chunks [K(c0 + p) − K(c0) + K(c0)] + Σ_i K(c_i)   K(c): one sequence's cache at c tokens
                                      (a chunk writes its tokens and reads what came before)

Tables hold A, a, K over 0 … max_context; sums over sequences are numpy gathers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attn_core.cost.config_reader import ModelShape
from attn_core.cost.flops import prefill_flops
from attn_core.cost.inputs import Precision
from attn_core.cost.params import decode_weight_bytes, expert_params
from attn_core.cost.phases import PhaseCount, _weight_products, decode_count, expert_flops
from attn_core.cost.serving import (
    decode_weight_bytes_expected,
    experts_touched_expected,
    kv_cache_bytes,
    state_bytes,
)


@dataclass(frozen=True)
class StepTables:
    """Per-token and per-context counts of one model at one precision (see the module docstring).
    Arrays are indexed by tokens cached, 0 … max_context."""

    shape: ModelShape
    precision: Precision
    product_flops_per_token: float  # f_w
    expert_flops_per_token: float  # f_e ⊆ f_w
    prefill_attention: np.ndarray  # A(T): causal pairs' FLOPs of a T-token prefill (naive MLA)
    decode_attention: np.ndarray  # a(c): one decode token's attention FLOPs at c cached (absorbed MLA)
    prefill_core: np.ndarray  # a hybrid's recurrent core over a T-token prefill
    decode_core: float  # one decode token's recurrent core
    cache: np.ndarray  # K(c): one sequence's cache bytes at c tokens (windows honoured)
    state_per_sequence: int  # a hybrid's fixed state per sequence, bytes
    weights_one: int  # W(1): the active weights one token reads
    row_bytes: int  # each further token's own embedding rows (an untied table: one row per token)
    expert_bytes: float  # one routed expert's bytes (0 for a dense model)

    @property
    def max_context(self) -> int:
        return len(self.cache) - 1

    def weight_bytes(self, tokens: int | np.ndarray) -> float | np.ndarray:
        """W(n) = W(1) + (n − 1) × a token's embedding rows + MoE layers × (experts n tokens touch
        − k) × one expert's bytes (`params.decode_weight_bytes` at B = n, n ≤ the vocabulary)."""
        m = self.shape.moe
        dense_model = m is None or not self.shape.n_moe_layers
        if dense_model and isinstance(tokens, int | float):  # the simulator's hot path: no numpy
            return self.weights_one + (max(tokens, 1) - 1) * self.row_bytes
        n = np.maximum(tokens, 1)
        dense = self.weights_one + (n - 1) * self.row_bytes
        if dense_model:
            return np.asarray(dense, dtype=float)
        extra = experts_touched_expected(m.n_experts, m.top_k, n) - m.top_k
        return dense + self.shape.n_moe_layers * extra * self.expert_bytes


def build_tables(shape: ModelShape, precision: Precision, max_context: int) -> StepTables:
    """Count once what every step needs, for contexts 0 … max_context (≥ 1)."""
    T = np.arange(1, max_context + 2, dtype=np.float64)  # 1 … max_context + 1
    f = prefill_flops(shape, T, 1, causal=True)
    zero = np.zeros(1)
    A = np.concatenate([zero, np.asarray(f.attention, dtype=float) + 0 * T])
    A_abs = np.concatenate([zero, np.asarray(f.attention_absorbed, dtype=float) + 0 * T])
    core = np.concatenate([zero, np.asarray(f.state_core, dtype=float) + 0 * T])
    one = decode_count(shape, 1, 1, precision)
    c = np.arange(0, max_context + 1, dtype=np.float64)
    K = np.asarray(kv_cache_bytes(shape, c, 1, precision.b_kv), dtype=float) + 0 * c
    m = shape.moe
    b_w, b_e = precision.b_weight, precision.b_expert
    return StepTables(
        shape=shape,
        precision=precision,
        product_flops_per_token=float(_weight_products(prefill_flops(shape, 1, 1, causal=True))),
        expert_flops_per_token=float(expert_flops(shape, 1)),
        prefill_attention=A[: max_context + 1],
        decode_attention=np.diff(A_abs),  # a(c) = A_abs(c + 1) − A_abs(c), c = 0 … max_context
        prefill_core=core[: max_context + 1],
        decode_core=float(one.core_flops),
        cache=K,
        state_per_sequence=int(state_bytes(shape, 1, precision.b_kv, precision.b_state)),
        weights_one=int(decode_weight_bytes_expected(shape, 1, b_w, b_e)),
        row_bytes=int(decode_weight_bytes(shape, 2, b_w, b_e) - decode_weight_bytes(shape, 1, b_w, b_e)),
        expert_bytes=0.0 if m is None else float(expert_params(shape, m.expert_d_ff, m.expert_bias) * b_e),
    )


def expert_rows(shape: ModelShape, tokens: float) -> float:
    """Mean rows of each touched routed expert's product: k·n / experts touched (0 when dense)."""
    m = shape.moe
    if m is None or not shape.n_moe_layers or tokens <= 0:
        return 0.0
    return m.top_k * tokens / experts_touched_expected(m.n_experts, m.top_k, tokens)


@dataclass(frozen=True)
class StepBatch:
    """What one step runs: prefill chunks (start c0 and length p each) and decode contexts c_i."""

    chunk_start: np.ndarray  # (n_chunks,) tokens already cached before each chunk
    chunk_len: np.ndarray  # (n_chunks,) tokens each chunk prefills
    decode_context: np.ndarray  # (b,) tokens cached for each decoding sequence


def count_step(tables: StepTables, batch: StepBatch) -> PhaseCount:
    """The step's work as one `PhaseCount` (module docstring); contexts must be ≤ max_context."""
    s, p, c = batch.chunk_start, batch.chunk_len, batch.decode_context
    n_chunk, n_decode = int(p.sum()), len(c)
    tokens = n_chunk + n_decode
    K = tables.cache
    attention = float(tables.prefill_attention[s + p].sum() - tables.prefill_attention[s].sum())
    attention += float(tables.decode_attention[c].sum())
    core = float(tables.prefill_core[s + p].sum() - tables.prefill_core[s].sum())
    core += tables.decode_core * n_decode
    cache = float(K[s + p].sum()) + float(K[c].sum())  # chunks: written + read before; decode: read
    sequences = len(p) + n_decode
    return PhaseCount(
        tokens=tokens,
        product_flops=tables.product_flops_per_token * tokens,
        expert_flops=tables.expert_flops_per_token * tokens,
        expert_rows=expert_rows(tables.shape, tokens),
        attention_flops=attention,
        core_flops=core,
        weight_bytes=float(tables.weight_bytes(tokens)) if tokens else 0.0,
        cache_bytes=cache,
        state_bytes=tables.state_per_sequence * sequences,
    )
