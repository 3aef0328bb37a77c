"""Long inputs on the shipped pretrained model: SmolLM2-135M-Instruct read tile by tile.

Loads SmolLM2 (``attn_core.hf.shipped``, timed), states the longest input the page's default
budget allows (``long_heads.longest_input``) and the estimate at 1,024 / 2,048 / 4,096 tokens of
the shipped sample text, then reads the text with ``long_heads.long_view`` under a budget wide
enough to run each length, timing it (wall clock) and recording the process's peak resident set
growth (VmHWM after a reset, minus the resident set before). float32, batch 1, this CPU.

Usage: PYTHONPATH=$PWD .venv/bin/python benchmarks/smollm2_long.py [--L 1024 4096] [--layers 2]
"""

from __future__ import annotations

import argparse
import os
import time

from attn_core.views import hf_heads as explore
from attn_core.views import long_heads as lh

MiB = 2**20


def _rss(field: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--L", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument(
        "--layers", type=int, default=None, help="read only the first layers (all by default)"
    )
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    start = time.perf_counter()
    loaded = explore.load(explore.SHIPPED)
    print(f"SmolLM2 loaded in {time.perf_counter() - start:.1f} s, {loaded.n_params:,} parameters")
    m = lh.from_hf(loaded)
    print(f"default budget {lh.DEFAULT_BUDGET}: longest input {lh.longest_input(m):,} tokens")
    wide = lh.Budget(max_bytes=8 * 1024 * MiB, max_seconds=3600)
    for L in args.L:
        inp = lh.read_input(m, lh.sample_text(), L)
        tile = lh.TILE if L >= 16 * lh.TILE else max(1, L // 16)
        est = lh.estimate(m, L, tile=tile, layers=args.layers)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM
        before = _rss("VmRSS")
        t0 = time.perf_counter()
        view = lh.long_view(m, inp, wide, tile=tile, layers=args.layers)
        seconds = time.perf_counter() - t0
        peak = _rss("VmHWM") - before
        print(
            f"L={L}: estimate {est.bytes / MiB:,.0f} MiB ~{est.seconds:,.1f} s (fits default budget: {est.fits}); "
            f"measured {seconds:,.1f} s, peak +{peak / MiB:,.0f} MiB; {len(view.layers)} layers; "
            f"load average {os.getloadavg()[0]:.2f}"
        )


if __name__ == "__main__":
    main()
