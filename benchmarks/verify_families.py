"""``python -m attn_core verify`` on new families, built by transformers itself: the cost model's
bound and calibrated estimate against the measured prefill and decode step (RESULTS.md, the
section on verify running transformers' own layers).

Each model's config is written to a temporary file and the CLI is run on it as a user would;
the JSON's figures are printed as one markdown row each, with the load average before and after.

    python benchmarks/verify_families.py [--seq-len 64] [--decode-steps 4] [--only NAME]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from attn_core.anatomy.build import completed_config
from attn_core.cost.config_reader import load_preset_config

# label → (config.json dict, extra CLI flags); a class-defaults config written out in full, as
# transformers completes it (``save_pretrained`` would). 'mlp_kind' is set where the formulas refuse to
# guess a model type's MLP (the build is gated in all three: transformers' modules say so).
FAMILIES = {
    "gemma-4-e2b (preset)": (
        load_preset_config("gemma-4-e2b") | {"mlp_kind": "gated"},
        ["--dtype", "bf16", "--memory-gib", "6"],
    ),
    "qwen3.5 (qwen3_5_text, class defaults)": (
        completed_config({"model_type": "qwen3_5_text"}),
        ["--dtype", "bf16", "--memory-gib", "9"],
    ),
    "olmo-3 (olmo3, class defaults)": (
        completed_config({"model_type": "olmo3"}) | {"mlp_kind": "gated"},
        ["--dtype", "bf16", "--memory-gib", "5"],
    ),
}


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--decode-steps", type=int, default=4)
    p.add_argument("--only", default=None)
    args = p.parse_args()
    print(
        "| model | built | params built | phase | bound | estimate | measured | error | peak planned / measured | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, (config, flags) in FAMILIES.items():
        if args.only and args.only not in label:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path, out = Path(tmp) / "config.json", Path(tmp) / "out.json"
            path.write_text(json.dumps(config))
            before = loadavg()
            cmd = [
                sys.executable,
                "-m",
                "attn_core",
                "verify",
                "--config",
                str(path),
                "--seq-len",
                str(args.seq_len),
                "--decode-steps",
                str(args.decode_steps),
                "--json",
                str(out),
                *flags,
            ]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                print(f"| {label} | refused | | | | | | | | {before} | {run.stderr.strip().splitlines()[-1]}")
                continue
            d = json.loads(out.read_text())
            built = f"{d['built_by']}: layers {d['layer_indices_built']} of {d['model_layers']}, {d['dtype']}"
            peaks = f"{d['planned_peak_bytes'] / 2**30:.2f} / {d['measured_peak_bytes'] / 2**30:.2f} GiB"
            for phase in ("prefill", "decode_step"):
                ph = d[phase]
                print(
                    f"| {label} | {built} | {d['params_built']:,} | {phase} | {ph['bound_ms']:.2f} ms | "
                    f"{ph['estimate_ms']:.2f} ms | {ph['measured_ms']:.2f} ms | {ph['error_pct']:+.1f}% | {peaks} | "
                    f"{before} → {loadavg()} |"
                )
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
