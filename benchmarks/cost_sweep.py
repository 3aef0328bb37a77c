"""How long a 10,000-point sweep over T takes in attn_core.cost (the goal: milliseconds).

Times, per preset, the vectorized calls a cost page makes for one chart set: FLOPs (full and
causal), KV-cache bytes, score memory (naive and online), serving capacity and the
whole model's prefill FLOPs, every layer's window or chunk honoured, over T = 1…N.
Prints the median of R repeats per preset and overall.

Usage: .venv/bin/python benchmarks/cost_sweep.py [--points N] [--repeats R]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from attn_core.cost.config_reader import list_presets, load_preset
from attn_core.cost.flops import layer_flops, prefill_flops, score_bytes_naive, score_bytes_online
from attn_core.cost.gpus import load_gpu
from attn_core.cost.inputs import Hardware
from attn_core.cost.serving import kv_cache_bytes, serving_capacity


def sweep_once(name: str, T: np.ndarray) -> None:
    shape, gpu = load_preset(name), load_gpu("a100-80gb")
    layer_flops(shape, T).attention_share  # noqa: B018 - the page reads it
    layer_flops(shape, T, causal=True).attention_share  # noqa: B018
    kv_cache_bytes(shape, T)
    score_bytes_naive(shape, T)
    score_bytes_online(shape, T)
    serving_capacity(shape, Hardware(gpu), T)
    prefill_flops(shape, T, causal=True).total  # noqa: B018 - every layer's pattern


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    T = np.unique(np.geomspace(1, 1 << 20, args.points).round())  # log-spaced, like the charts
    T = np.r_[T, np.arange(1, args.points - len(T) + 1) + (1 << 20)]  # pad to exactly N points
    print(f"{len(T):,} points, median of {args.repeats} repeats")
    for name in list_presets():
        sweep_once(name, T)  # warm-up
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            sweep_once(name, T)
            times.append(time.perf_counter() - start)
        print(f"  {name:20} {statistics.median(times) * 1e3:7.2f} ms")


if __name__ == "__main__":
    main()
