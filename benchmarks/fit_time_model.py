"""Fit the serving step-time coefficients on the published runs not held out, score every row left
out with its whole source, and write assets/derived/time_model.json (read by `python -m attn_core
serve`). Run: PYTHONPATH=$PWD python benchmarks/fit_time_model.py [--sweeps 3] [--out PATH]."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from attn_core.serving.fit import fit_report, report_json
from attn_core.serving.replay import load_replays
from attn_core.serving.fitted import FITTED_FILE

COMMAND = "PYTHONPATH=$PWD python benchmarks/fit_time_model.py"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sweeps", type=int, default=3, help="coordinate-descent sweeps (grid narrows each)")
    ap.add_argument("--out", type=Path, default=FITTED_FILE)
    args = ap.parse_args(argv)
    t0 = time.process_time()
    replays, skipped = load_replays()
    rep = fit_report(replays, skipped, args.sweeps)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report_json(rep, COMMAND), indent=1) + "\n")
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
    lo, hi = math.exp(rep.log_low), math.exp(rep.log_high)
    print(f"80% interval on times: ×{lo:.3f} … ×{hi:.3f}; covers {rep.coverage:.0%} of left-out rows")
    print(f"wrote {args.out} in {time.process_time() - t0:.1f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
