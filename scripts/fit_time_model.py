"""Fit the serving step-time coefficients, score every published row left out with its whole source,
and write assets/derived/time_model.json (read by `python -m attn_core serve`).

The GEMM and per-layer coefficients come from Vidur's profiled layers and the all-reduce's from its
profiled all-reduces (microsoft/vidur, MIT; `serving.operator_check.vidur_layer_coefficients`);
only the eager engines' launch cost and the 8-bit GEMMs' efficiency are fitted on the published
rows not held out (`serving.fit.RUN_FIELDS`). --fit-all fits every coefficient on the rows instead,
for comparison. Prints the per-source leave-one-source-out table for benchmarks/RESULTS.md.
Run: PYTHONPATH=$PWD python scripts/fit_time_model.py [--sweeps 3] [--out PATH] [--fit-all]"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from attn_core.serving.fit import FIT_FIELDS, RUN_FIELDS, fit_report, report_json
from attn_core.serving.fitted import FITTED_FILE
from attn_core.serving.operator_check import vidur_layer_coefficients
from attn_core.serving.replay import load_replays

COMMAND = "PYTHONPATH=$PWD python scripts/fit_time_model.py"


def print_sources(rep) -> None:
    """Per source: rows, median |left-out error| (as a factor − 1 on times) and the share of its
    left-out errors inside the 80% interval."""
    print("| source | rows | median \\|LOSO error\\| | inside the 80% interval |")
    print("|---|---|---|---|")
    sources = sorted({r["source"] for r in rep.rows})
    for s in [*sources, "all"]:
        e = np.array([r["log_error_left_out"] for r in rep.rows if s in ("all", r["source"])])
        inside = np.mean((e >= rep.log_low) & (e <= rep.log_high))
        print(f"| {s} | {len(e)} | {math.expm1(np.median(np.abs(e))):.1%} | {inside:.0%} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sweeps", type=int, default=3, help="coordinate-descent sweeps (grid narrows each)")
    ap.add_argument("--out", type=Path, default=FITTED_FILE)
    ap.add_argument("--fit-all", action="store_true", help="fit every coefficient on the rows")
    args = ap.parse_args(argv)
    t0 = time.process_time()
    replays, skipped = load_replays()
    start = vidur_layer_coefficients()
    fields = FIT_FIELDS if args.fit_all else RUN_FIELDS
    rep = fit_report(replays, skipped, args.sweeps, start, fields)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = report_json(rep, COMMAND + (" --fit-all" if args.fit_all else ""))
    doc["fitted_on_runs"] = list(fields)
    doc["from_vidur"] = [f for f in FIT_FIELDS if f not in fields]
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(
        f"{len(replays)} rows replayed ({sum(r.held_out for r in replays)} held out), {len(skipped)} skipped"
    )
    for k, v in rep.coefficients.to_json().items():
        print(f"  {k:<22}{v:.4g}")
    print(f"{'row':<32}{'source':<14}{'measured':>10}{'predicted':>11}  {'err':>6}  {'LOSO':>6}")
    for r in rep.rows:
        flag = " (held out)" if r["held_out"] else ""
        print(
            f"{r['id']:<32}{r['source'][:13]:<14}{r['measured']:>10.4g}{r['predicted']:>11.4g}  "
            f"{r['log_error']:>+6.3f}  {r['log_error_left_out']:>+6.3f}{flag}"
        )
    print_sources(rep)
    lo, hi = math.exp(rep.log_low), math.exp(rep.log_high)
    print(f"80% interval on times: ×{lo:.3f} … ×{hi:.3f}; covers {rep.coverage:.0%} of left-out rows")
    print(f"wrote {args.out} in {time.process_time() - t0:.1f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
