"""attn_core.verify.probe: the clock it reads, the weights' coldness in its products, and the
roofline bound and estimate it makes from counts and probed rates.

Oracles: time.sleep (a sleeping thread spends no CPU time, yet the wall clock moves); the bytes
each product's weights wait behind, read from the ops torch dispatches; and the bound and estimate
worked out here from hand-made counts and rates."""

from __future__ import annotations

import time

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from attn_core.cost.config_reader import from_hf_config
from attn_core.verify import probe as probe_module
from attn_core.verify.counts import AttentionCall, Gemm, PhaseCounts
from attn_core.verify.peak import COLD_BYTES, COMPUTE_ROWS
from attn_core.verify.probe import PROBE_ROUNDS, Probe, bound_ms, estimate_ms, probe_gemm, time_call
from tests.cost.test_gemma4 import TINY


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_on_one_cpu_thread_a_sleep_costs_no_time_but_wall_time(one_thread):
    cpu_s, wall_s = time_call(lambda: time.sleep(0.05), "cpu")
    assert wall_s >= 0.05 and cpu_s < 0.01  # other processes' slices do not inflate the clock
    spin_cpu, _ = time_call(lambda: sum(range(300_000)), "cpu")
    assert spin_cpu > 0  # work does count


class Traffic(TorchDispatchMode):
    """Every product's weight (its storage) and the bytes of memory every op wrote before it."""

    def __init__(self):
        super().__init__()
        self.ops: list[tuple[int | None, int]] = []  # (the product's weight storage, or None; bytes)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket is torch.ops.aten.mm:
            w = args[1]  # the weight, multiplied transposed: (k × n) view of an (n × k) matrix
            self.ops.append((w.untyped_storage().data_ptr(), w.numel() * w.element_size()))
        elif func.overloadpacket is torch.ops.aten.copy_:
            self.ops.append((None, args[0].numel() * args[0].element_size()))
        return out


def reuse_distances(ops: list[tuple[int | None, int]]) -> list[int]:
    """For each product after its weight's first use: the bytes touched since that weight's last
    use, this use's weight included (the length of the cycle that brings it back)."""
    last: dict[int, int] = {}
    out = []
    for i, (weight, _) in enumerate(ops):
        if weight is None:
            continue
        if weight in last:
            out.append(sum(nbytes for _, nbytes in ops[last[weight] + 1 : i + 1]))
        last[weight] = i
    return out


@pytest.mark.parametrize("m", [1, COMPUTE_ROWS - 1, COMPUTE_ROWS, 100])
def test_every_timed_product_finds_its_weights_cold(monkeypatch, one_thread, m):
    """In a forward each weight is read once, all the other layers' weights passing through the
    cache between two passes: so from one of the probe's uses of a weight to the next, at least
    COLD_BYTES must be touched, at every row count (few rows: cycled copies; many: a flush).
    A hot probe at 64 rows put Gemma 4's prefill estimate 45% under its run (RESULTS.md)."""
    monkeypatch.setitem(COLD_BYTES, "cpu", 1 << 20)
    k, n = 128, 256  # 128 KiB of fp32 weights: 8 copies, or one and a 1 MiB flush
    with Traffic() as traffic:
        probe_gemm(m, k, n, torch.float32, "cpu")
    distances = reuse_distances(traffic.ops)
    assert len(distances) >= PROBE_ROUNDS  # the warm-up's use and every timed call's
    assert min(distances) >= COLD_BYTES["cpu"]


def counts() -> PhaseCounts:
    gemms = (Gemm(64, 128, 256, count=3), Gemm(2.5, 128, 512, count=4.0))
    calls = (AttentionCall("full", 16, 16, 2), AttentionCall("gdn", 16, 16, 1))
    return PhaseCounts(flops=2 * 10**9, bytes=10**9, bytes_expected=10**9, gemms=gemms, attention=calls)


def probe() -> Probe:
    return Probe(
        "cpu",
        "fp32",
        matmul_flop_per_s=1e12,
        bandwidth_bytes_per_s=1e11,
        gemm_flop_per_s={(64, 128, 256): 1e10, (2, 128, 512): 2e9},
        attention_s={("full", 16, 16): 1e-3, ("gdn", 16, 16): 4e-3},
    )


def test_the_bound_is_the_slower_of_compute_and_memory():
    assert bound_ms(counts(), probe()) == pytest.approx(1e3 * max(2e9 / 1e12, 1e9 / 1e11))  # 10 ms


def test_the_estimate_sums_products_at_their_rates_and_the_mixer_calls():
    gemm_s = 2 * 64 * 128 * 256 * 3 / 1e10 + 2 * 2.5 * 128 * 512 * 4 / 2e9  # 2.5 rows probed as 2
    assert estimate_ms(counts(), probe()) == pytest.approx(1e3 * (gemm_s + 2 * 1e-3 + 4e-3))


def test_the_json_separates_attention_from_linear_cores():
    out = probe().to_json()
    assert [c["kind"] for c in out["attention_ms"]] == ["full"]
    assert out["state_core_ms"] == [{"kind": "gdn", "q_len": 16, "kv_len": 16, "ms": pytest.approx(4.0)}]


@pytest.mark.parametrize(("kind", "kv_heads", "head_dim"), [("sliding", 2, 16), ("full", 1, 32)])
def test_the_attention_probe_runs_each_kind_at_its_own_heads(monkeypatch, kind, kv_heads, head_dim):
    """Gemma 4's global (full) layers have wider heads and here fewer KV heads than its sliding
    ones: each kind's kernel is probed at its own q (B, h, T, d_h) and K, V (B, H_kv, S, d_h)."""
    config = TINY | {"attention_k_eq_v": True, "num_global_key_value_heads": 1}
    shape = from_hf_config(config)
    seen = []
    monkeypatch.setattr(
        probe_module, "attend", lambda q, k, v, keys: seen.append((q.shape, k.shape, v.shape))
    )
    probe_module.probe_attention(shape, AttentionCall(kind, 3, 7), 2, torch.float32, "cpu")
    assert set(seen) == {((2, 4, 3, head_dim), (2, kv_heads, 7, head_dim), (2, kv_heads, 7, head_dim))}
