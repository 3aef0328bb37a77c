"""The fitted step model's operator times against Vidur's measured H100 and A100 medians
(microsoft/vidur @ 7d47513, MIT; assets/published/vidur/): median measured ÷ predicted by GPU, op
class and token range, and the all-reduces by GPUs and message size. Prints a markdown table for
benchmarks/RESULTS.md. Run: PYTHONPATH=$PWD python benchmarks/vidur_operators.py"""

from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np

from attn_core.serving.fitted import load_fitted
from attn_core.serving.operator_check import CLASSES, all_ratios, all_reduce_ratios

TOKEN_BANDS = ((1, 64), (65, 511), (512, 4096), (4097, 32768))
SIZE_BANDS = ((0, 2**16), (2**16, 2**20), (2**20, 2**23), (2**23, 2**27))


def _q(v: list[float]) -> str:
    lo, mid, hi = np.percentile(v, [10, 50, 90])
    return f"{mid:.2f} ({lo:.2f}–{hi:.2f})"


def main() -> int:
    c = load_fitted().coefficients
    rows = all_ratios(c)
    ops: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        if r.op_class == "all-reduce":
            continue
        band = next(b for b in TOKEN_BANDS if b[0] <= r.tokens <= b[1])
        ops[(r.gpu, r.op_class, band)].append(r.ratio)
    print("| GPU | op class | tokens | rows | measured ÷ predicted: median (10th–90th) |")
    print("|---|---|---|---|---|")
    for gpu in ("h100", "a100"):
        for cls in (*CLASSES, "layer"):
            for band in TOKEN_BANDS:
                v = ops[(gpu, cls, band)]
                if v:
                    print(f"| {gpu.upper()} | {cls} | {band[0]:,}–{band[1]:,} | {len(v)} | {_q(v)} |")
    print()
    print("| GPU node | GPUs | message | rows | measured ÷ predicted: median (10th–90th) |")
    print("|---|---|---|---|---|")
    for gpu in ("h100", "a100"):
        ar = all_reduce_ratios(gpu, c)
        for t in (2, 4, 8):
            for lo, hi in SIZE_BANDS:
                v = [r.ratio for r in ar if r.tp == t and lo <= r.size_bytes < hi]
                if v:
                    print(
                        f"| {gpu.upper()} DGX | {t} | {lo / 2**20:g}–{hi / 2**20:g} MiB | {len(v)} | {_q(v)} |"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
