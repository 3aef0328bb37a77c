"""The model-derived path per preset: time to build each preset on the meta device and read its
cache (a fresh process per preset, so torch's and transformers' import is counted in each), and
the recorded check every preset carries (``assets/derived/presets.json``, read by the CLI and the
Cost page without torch), with what the formulas read (the config as transformers completes it, the
facts of its build), so the preset path reads the same without torch.

    .venv/bin/python scripts/derive_presets.py            # times + rewrites the records
    .venv/bin/python scripts/derive_presets.py --no-write # times only

Figures: RESULTS.md, "Model-derived sizing"."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from attn_core.cost.config_reader import list_built_presets, list_presets, load_preset_config
from attn_core.cost.derived_records import RECORDS_FILE, config_key

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, time
t0 = time.perf_counter()
from attn_core.anatomy.compare import compare_config
from attn_core.cost.config_reader import load_preset_config

name = sys.argv[1]
t1 = time.perf_counter()
c = compare_config(load_preset_config(name))  # the formulas read the config as transformers completes it
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "derive_s": t2 - t1, "check": c.to_json()}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("presets", nargs="*")
    args = ap.parse_args()
    names = args.presets or list_presets() + list_built_presets()
    records = json.loads(RECORDS_FILE.read_text()) if RECORDS_FILE.is_file() else {}
    print(f"load average before: {Path('/proc/loadavg').read_text().split()[:3]}")
    print(f"{'preset':<24}{'wall s':>8}{'import s':>10}{'derive s':>10}  check")
    for name in names:
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD, name], capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - start
        if out.returncode:
            print(f"{name:<24} failed: {out.stderr.strip().splitlines()[-1]}")
            continue
        res = json.loads(out.stdout.strip().splitlines()[-1])
        check = res["check"]
        state = (
            "agrees"
            if check["agrees"]
            else "refused"
            if check["model_derived"] is None
            else (
                "the formulas do not cover it"
                if check["analytic_error"]
                else f"differs: {', '.join(d['what'] for d in check['differences'])}"
            )
        )
        print(f"{name:<24}{wall:>8.2f}{res['import_s']:>10.2f}{res['derive_s']:>10.2f}  {state}")
        records[name] = {"config_key": config_key(load_preset_config(name))} | check
    print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")
    if not args.no_write:
        RECORDS_FILE.write_text(json.dumps(dict(sorted(records.items())), indent=1) + "\n")
        print(f"wrote {RECORDS_FILE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
