"""The cost model's calibrated estimate against real runs on this machine: ``verify`` for a dense
GQA model, a mixture of experts and two hybrids (Qwen3-Next: Gated DeltaNet + gated attention +
MoE; Nemotron-H: Mamba-2, MLP and attention blocks), repeated, as Markdown rows for
benchmarks/RESULTS.md.

    PYTHONPATH=. .venv/bin/python benchmarks/verify_cost.py
        [--models llama-3-8b,qwen3-30b-a3b,qwen3-next-80b-a3b,nemotron-h-8b]
        [--repeats 3] [--seq-len 256] [--decode-steps 8] [--memory-gib 2] [--json OUT]

Goal: the estimate within ±25% of the measurement for the prefill and for a decode step, and the
bound never above the measurement. The machine is shared: every row carries the load average.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from attn_core.cost.config_reader import load_preset
from attn_core.cost.units import format_flops
from attn_core.kernels.records import DTYPES
from attn_core.verify.plan import DEFAULT_DECODE_STEPS, DEFAULT_MEMORY_GIB, DEFAULT_SEQ_LEN, VerifyRequest
from attn_core.verify.run import VerifyResult, verify

HEADER = (
    "| model | built | phase | FLOPs | bound ms | estimate ms | measured ms | error | bound ≤ measured | load |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def rows(result: VerifyResult) -> list[str]:
    p = result.plan
    kinds = f" ({p.kinds_built})" if p.shape.n_state_layers else ""
    built = f"{p.layers_built}/{p.model_layers} layers{kinds}" + (
        f", {p.experts_built}/{p.model_experts} experts" if p.experts_built else ""
    )
    load = " → ".join(f"{x:.1f}" for x in result.load_average if x is not None)
    out = []
    for label, ph in (("prefill", result.prefill), ("decode step", result.decode_step)):
        out.append(
            f"| {result.model} | {built} | {label} | {format_flops(ph.counts.flops)} | {ph.bound_ms:,.1f} | "
            f"{ph.estimate_ms:,.1f} | {ph.measured_ms:,.1f} | {ph.error_pct:+.1f}% | "
            f"{'yes' if ph.bound_ms <= ph.measured_ms else 'NO'} | {load} |"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="llama-3-8b,qwen3-30b-a3b,qwen3-next-80b-a3b,nemotron-h-8b")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seq-len", type=int, default=DEFAULT_SEQ_LEN)
    ap.add_argument("--decode-steps", type=int, default=DEFAULT_DECODE_STEPS)
    ap.add_argument("--memory-gib", type=float, default=DEFAULT_MEMORY_GIB)
    ap.add_argument("--dtype", default="fp32", choices=list(DTYPES))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    request = VerifyRequest(
        seq_len=args.seq_len,
        decode_steps=args.decode_steps,
        memory_bytes=int(args.memory_gib * 2**30),
        dtype=args.dtype,
    )
    records, errors = [], {}
    print(HEADER, flush=True)
    for _ in range(args.repeats):
        for name in args.models.split(","):
            result = verify(load_preset(name), request)
            records.append(result.to_json())
            for phase in ("prefill", "decode_step"):
                errors.setdefault((name, phase), []).append(getattr(result, phase).error_pct)
            print("\n".join(rows(result)), flush=True)
            if args.json is not None:
                args.json.write_text(json.dumps(records, indent=1))
    print("\nmedian error over repeats:")
    for (name, phase), errs in errors.items():
        print(
            f"  {name} {phase}: {statistics.median(errs):+.1f}% (runs: {', '.join(f'{e:+.0f}%' for e in errs)})"
        )


if __name__ == "__main__":
    main()
