"""The same load on the same model with four attentions side by side (`variants.VARIANTS`): the cache
per token sets how many sequences a replica holds, so the batch a step runs, so the GPUs the load
needs (`plan.plan` for each)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from attn_core.cost.params import weight_bytes
from attn_core.cost.serving import kv_cache_bytes_per_token, state_bytes_per_sequence
from attn_core.serving.plan import Plan, Target, plan
from attn_core.serving.variants import VARIANTS, attention_variant


@dataclass(frozen=True)
class VariantPlan:
    """One attention's cache, weights and the deployment its load needs."""

    variant: str
    kv_bytes_per_token: int  # every caching layer's K and V (or latent) for one token
    state_bytes_per_sequence: int  # a hybrid's fixed state
    weight_bytes: int
    max_concurrency: int | None  # sequences of in + out tokens one replica holds (at the plan's TP)
    plan: Plan


def side_by_side(target: Target) -> list[VariantPlan]:
    """`plan` for the target's model as MHA, GQA, MLA and a linear hybrid (same widths and depth)."""
    p = target.precision
    rows = []
    for v in VARIANTS:
        shape = attention_variant(target.shape, v)
        chosen = plan(dataclasses.replace(target, shape=shape))
        rows.append(
            VariantPlan(
                variant=v,
                kv_bytes_per_token=kv_cache_bytes_per_token(shape, p.b_kv),
                state_bytes_per_sequence=state_bytes_per_sequence(shape, p.b_kv, p.b_state),
                weight_bytes=weight_bytes(shape, p.b_weight, p.b_expert),
                max_concurrency=None if chosen.result is None else chosen.result.max_concurrency,
                plan=chosen,
            )
        )
    return rows
