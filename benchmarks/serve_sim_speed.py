"""How fast `attn_core.serving.simulate` runs: 10,000 requests of Llama 3 8B on one H100 under
max load, a closed loop and Poisson arrivals at a light and a heavy rate. Prints CPU seconds (this
process only; the 2-core machine is shared, so wall time is noisier) and steps simulated.
Run: PYTHONPATH=$PWD python benchmarks/serve_sim_speed.py [--requests 10000]."""

from __future__ import annotations

import argparse
import os
import time

from attn_core.cost.config_reader import load_preset
from attn_core.cost.gpus import load_gpu
from attn_core.cost.inputs import Precision
from attn_core.serving.load import Load
from attn_core.serving.simulate import Deployment, simulate
from attn_core.serving.step_time import Engine

CASES = {
    "max load, 512 in / 128 out": dict(in_len=512, out_len=128, mode="max"),
    "closed loop C=64, 1000 / 200": dict(in_len=1000, out_len=200, mode="concurrency", concurrency=64),
    "Poisson 50 req/s, 512 / 128": dict(in_len=512, out_len=128, mode="rate", rate=50.0),
    "Poisson 20 req/s, 512 / 128": dict(in_len=512, out_len=128, mode="rate", rate=20.0),
    "Poisson 10 req/s, 1000 / 200, lengths ±50%": dict(
        in_len=1000, out_len=200, mode="rate", rate=10.0, spread=0.5
    ),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=10_000)
    k = ap.parse_args().requests
    d = Deployment(Engine(load_preset("llama-3-8b"), load_gpu("h100-sxm"), Precision("bf16")))
    print(f"load average {os.getloadavg()[0]:.1f}")
    for name, kw in CASES.items():
        t0, w0 = time.process_time(), time.perf_counter()
        r = simulate(d, Load(requests=k, **kw))
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        print(
            f"{name:<44} {cpu:6.2f} s CPU {wall:6.2f} s wall  {r.steps:>7,} steps  "
            f"{r.output_tokens_per_s:>8,.0f} out tok/s  TPOT p50 {r.tpot.p50 * 1e3:.2f} ms"
        )
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
