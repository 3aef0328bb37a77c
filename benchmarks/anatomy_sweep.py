"""Every causal-LM model type the installed transformers maps, at its class defaults, through the
model-derived path and the formulas' check: how many are built and sized, how many the formulas
agree with, differ from (naming the parts) or do not cover, and how many transformers itself
cannot build (with its reason). The suite runs a seeded sample of this (tests/anatomy/test_anatomy.py).

    .venv/bin/python benchmarks/anatomy_sweep.py [--out sweep.json]

Figures: RESULTS.md, "Model-derived sizing"."""

from __future__ import annotations

import argparse
import collections
import json
import time
from pathlib import Path

from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

from attn_core.anatomy.compare import compare_config

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    print(f"load average before: {Path('/proc/loadavg').read_text().split()[:3]}")
    rows, tally, start = [], collections.Counter(), time.perf_counter()
    for model_type in sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES):
        t = time.perf_counter()
        c = compare_config({"model_type": model_type})
        if c.anatomy is None:
            state, detail = "transformers cannot build it", c.refused
        elif c.analytic_error:
            state, detail = "the formulas do not cover it", c.analytic_error
        elif c.misreads:
            state, detail = "the formulas differ (flagged)", "; ".join(d.what for d in c.misreads)
        else:
            state, detail = "the formulas agree", ""
        a = c.anatomy
        tally["… FLOPs counted from the model"] += bool(a and a.flops is not None)
        tally["… FLOPs differ by a counting convention (noted)"] += any(d.convention for d in c.differences)
        tally["… FLOPs among the differences flagged"] += any(d.unit == "FLOPs" for d in c.misreads)
        unread = a is not None and a.cache_unread
        tally[state] += 1
        tally["cache not read (neither the meta forward nor a reduced copy runs)"] += bool(unread)
        tally["no cache (the forward keeps none)"] += bool(a and a.cache_absent)
        tally["cache read from a reduced copy on the CPU"] += bool(
            a and (a.cache_read_by or "").startswith("a reduced")
        )
        rows.append(
            {
                "model_type": model_type,
                "state": state,
                "detail": detail,
                "seconds": time.perf_counter() - t,
                "cache_unread": unread or None,
                "cache_absent": a and a.cache_absent,
                "cache_read_by": a and a.cache_read_by,
            }
        )
        print(f"{model_type:<28}{rows[-1]['seconds']:>6.2f} s  {state}  {detail[:120]}")
    print(f"\n{len(rows)} types in {time.perf_counter() - start:.0f} s")
    for state, n in tally.most_common():
        print(f"  {n:>4}  {state}")
    print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
