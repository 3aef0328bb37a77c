"""The step-time model: its bound is the roofline's max(FLOPs / peak, bytes / bandwidth) worked by
hand, never above the estimate, on dense, MoE, MLA and hybrid presets and tensor-parallel degrees;
the busiest-expert share against a seeded multinomial."""

import numpy as np
import pytest

from attn_core.cost.config_reader import load_preset
from attn_core.cost.gpus import load_gpu
from attn_core.cost.inputs import Precision
from attn_core.serving.step_time import Engine, TimeModelCoefficients, bound_s, busiest_share, estimate_s
from attn_core.serving.step_work import StepBatch, build_tables, count_step

CASES = [  # (preset, GPU, TP, EP)
    ("llama-3-8b", "h100-sxm", 1, 1),
    ("llama-2-70b", "a100-80gb", 4, 1),
    ("mixtral-8x7b", "h100-sxm", 2, 2),
    ("deepseek-v3", "h200", 8, 8),
    ("qwen3-next-80b-a3b", "h100-sxm", 2, 1),
    ("gemma-3-27b", "h100-sxm", 1, 1),
]


@pytest.mark.parametrize("preset,gpu,tp,ep", CASES)
def test_bound_by_hand_and_never_above_the_estimate(preset, gpu, tp, ep):
    g = load_gpu(gpu)
    coeffs = TimeModelCoefficients(
        compute_fraction=1.0,
        half_rows=0.0,
        bandwidth_fraction=1.0,
        layer_overhead_s=0.0,
        collective_latency_s=0.0,
    )
    engines = [
        Engine(load_preset(preset), g, Precision("bf16"), tp, ep=ep, coefficients=c)
        for c in (TimeModelCoefficients(), coeffs)
    ]
    tables = build_tables(engines[0].shape, Precision("bf16"), 5000)
    rng = np.random.default_rng(0)
    for _ in range(20):
        n_chunk, b = rng.integers(0, 3), rng.integers(0, 300)
        start = rng.integers(0, 4000, n_chunk)
        batch = StepBatch(start, rng.integers(1, 5000 - start), rng.integers(0, 5000, b))
        count = count_step(tables, batch)
        if count.tokens == 0:
            continue
        by_hand = max(count.flops / (tp * g.bf16_flops_per_s), count.bytes / (tp * g.bandwidth_bytes_per_s))
        for e in engines:  # even the ideal coefficients keep the estimate at or above the bound
            assert bound_s(e, count) == pytest.approx(by_hand, rel=1e-12)
            assert bound_s(e, count) <= estimate_s(e, count) * (1 + 1e-12)


@pytest.mark.parametrize("draws,bins", [(64, 8), (2048, 256), (8, 256), (16384, 8)])
def test_busiest_share_near_a_seeded_multinomial(draws, bins):
    rng = np.random.default_rng(1)
    loads = rng.multinomial(draws, np.full(bins, 1 / bins), size=2000)
    measured = loads.max(1).mean() / (draws / bins)
    # The normal-max approximation μ + σ√(2 ln G) is known to overshoot for large G (the Gumbel
    # correction is −σ·ln ln G / (2√(2 ln G))) and to be crude when μ < 1: 35% either way.
    assert busiest_share(draws, bins) == pytest.approx(measured, rel=0.35)
    assert busiest_share(draws, 1) == 1.0


@pytest.mark.parametrize("preset,gpu,tp,ep", CASES[:3])
def test_an_eager_engine_pays_the_hosts_launches_once_per_layer_per_step(preset, gpu, tp, ep):
    """An eager step is the graph-captured step plus L · τ_launch, whatever the step holds."""
    c = TimeModelCoefficients(launch_overhead_s=40e-6)
    kw = dict(tp=tp, ep=ep, coefficients=c)
    shape, prec = load_preset(preset), Precision("bf16")
    graphs = Engine(shape, load_gpu(gpu), prec, cuda_graphs=True, **kw)
    eager = Engine(shape, load_gpu(gpu), prec, cuda_graphs=False, **kw)
    tables = build_tables(shape, prec, 4096)
    empty = np.zeros(0, dtype=np.int64)
    decode = StepBatch(empty, empty, np.array([100, 300]))
    prefill = StepBatch(np.array([0]), np.array([512]), empty)
    for batch in (decode, prefill):
        count = count_step(tables, batch)
        extra = estimate_s(eager, count) - estimate_s(graphs, count)
        assert extra == pytest.approx(shape.n_layers * 40e-6, rel=1e-9)
