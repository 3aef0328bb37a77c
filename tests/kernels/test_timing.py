"""attn_core.kernels.timing on the CPU: the interleaved median and the profiled probe.

Oracles: a log of the calls made (order and count), time.sleep's guarantee that a call lasts at
least its argument, a known allocation (10⁶ float32 = 4,000,000 bytes), torch's own SDPA op names
(the math backend forced with torch.nn.attention.sdpa_kernel), and peaks summed by hand."""

from __future__ import annotations

import time
import warnings
from types import SimpleNamespace

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from attn_core.kernels import timing


def test_rounds_rotate_and_every_function_gets_a_warm_up_and_each_round():
    log: list[str] = []
    fns = {name: (lambda n=name: log.append(n)) for name in ("a", "b", "c")}
    times = timing.median_ms_cpu(fns, rounds=4)
    assert log[:3] == ["a", "b", "c"]  # the warm-up, in order
    rounds = [log[3 + 3 * r : 6 + 3 * r] for r in range(4)]
    assert rounds == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
    assert set(times) == {"a", "b", "c"} and all(t >= 0 for t in times.values())


def test_a_median_is_at_least_the_time_a_call_sleeps():
    times = timing.median_ms_cpu({"short": lambda: time.sleep(0.002), "long": lambda: time.sleep(0.02)}, 3)
    assert times["short"] >= 2.0 and times["long"] >= 20.0


def test_the_probe_sees_an_allocation_and_the_kernel_that_ran():
    probe = timing.probe(lambda: torch.empty(10**6, dtype=torch.float32).fill_(1.0), "cpu")
    assert probe.backend is None  # no attention ran
    assert probe.peak_bytes >= 4 * 10**6
    q = torch.randn(1, 2, 16, 8)
    with sdpa_kernel(SDPBackend.MATH):
        math_probe = timing.probe(lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q), "cpu")
    assert math_probe.backend == "math"


def test_warnings_are_kept_once_each():
    def noisy():
        for _ in range(3):
            warnings.warn("backend refused: head_dim", UserWarning, stacklevel=1)

    assert timing.probe(noisy, "cpu").warnings == ("backend refused: head_dim",)


def test_the_peak_is_the_running_sum_in_end_time_order():
    def event(end, delta):
        return SimpleNamespace(time_range=SimpleNamespace(end=end), self_cpu_memory_usage=delta)

    # by end time: +100, −50 (50 live), +200 (250), −250 (0): peak 250, whatever order they come in
    events = [event(3, 200), event(1, 100), event(4, -250), event(2, -50)]
    assert timing._profiled_peak(events) == 250
