"""The "check this estimate on this machine" cases a hostile visitor can send, under the check's
bounds: each is refused by the plan, or run in its child process at the page's settings, with
its planned peak beside the child's measured peak resident memory (``VmHWM`` beyond its
warmed-up start), its expected time beside the wall time, and the outcome (one line when it
fails). Markdown rows for benchmarks/RESULTS.md.

    PYTHONPATH=. .venv/bin/python benchmarks/verify_bounds.py [--limit 120] [--cases wide,experts,...]
        [--stop] [--force]

Goal: every case refused or finished within its bounds: measured peak ≤ planned peak ≤ the cap,
and wall time ≤ the limit (+ the time to kill a child, well under a second).
"""

from __future__ import annotations

import argparse
import time

from attn_core.cost.config_reader import from_hf_config
from attn_core.cost.units import format_bytes_binary
from attn_core.verify.child import CheckFailed, start_check
from attn_core.verify.examples import LLAMA, MANY_HEADS, MIXTRAL, NEMOTRON
from attn_core.verify.plan import VerifyError, VerifyRequest, plan_build
from attn_core.verify.run import expected_seconds

# The audit's sizes: a 100,000-wide MLP, a Nemotron-H at 1,024 wide with chunk_size 1.
WIDE = LLAMA | {"intermediate_size": 100_000}
NEMOTRON_BIG = NEMOTRON | {
    "hidden_size": 1024,
    "num_attention_heads": 8,
    "head_dim": 128,
    "intermediate_size": 2048,
    "mamba_num_heads": 32,
    "mamba_head_dim": 64,
    "n_groups": 8,
    "ssm_state_size": 128,
    "chunk_size": 1,
}

# name: (what the audit sent, config, T, B, memory cap GiB)
CASES = {
    "wide": ("llama, d = 64, d_ff = 100,000, T = 512, B = 4", WIDE, 512, 4, 2.0),
    "wide-b1": ("the same at B = 1 (under the width cap)", WIDE, 512, 1, 2.0),
    "experts": ("mixtral, 200,000 experts of width 8, T = 512, B = 4", MIXTRAL, 512, 4, 2.0),
    "chunk1": ("Nemotron-H, chunk_size 1, T = 512, B = 4", NEMOTRON_BIG, 512, 4, 2.0),
    "chunk16": ("the same at chunk_size 16", NEMOTRON_BIG | {"chunk_size": 16}, 512, 4, 2.0),
    "heads": ("64 layers of 1,024 heads, T = 512, B = 4, 0.5 GiB", MANY_HEADS, 512, 4, 0.5),
    "heads-1g": ("the same at 1 GiB", MANY_HEADS, 512, 4, 1.0),
}
HEADER = "| case | outcome | built | planned peak | measured peak | expected | wall | load |\n|---|---|---|---|---|---|---|---|"


def _load() -> str:
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def row(name: str, limit: float, force: bool = False) -> str:
    label, config, T, B, gib = CASES[name]
    shape = from_hf_config(config, name=name)
    request = VerifyRequest(seq_len=T, batch=B, decode_steps=8, memory_bytes=int(gib * 2**30), device="cpu")
    load = _load()
    try:
        plan = plan_build(shape, request)
    except VerifyError as exc:
        return f"| {label} | refused: {exc} | – | – | – | – | – | {load} |"
    seconds = expected_seconds(plan, request, "cpu")
    built = f"{plan.layers_built}/{plan.model_layers} layers" + (
        f", {plan.experts_built}/{plan.model_experts:,} experts" if plan.experts_built else ""
    )
    cells = f"{built} | {format_bytes_binary(plan.peak_bytes)}"
    if seconds > limit and not force:
        return f"| {label} | refused: expected ~{seconds:,.0f} s > the {limit:g} s limit | {cells} | – | {seconds:,.0f} s | – | {load} |"
    start = time.monotonic()
    check = start_check(shape, request, limit)
    try:
        check.wait(limit + 30)
        outcome = "ran"
    except CheckFailed as exc:
        outcome = f"failed: {exc}"
    wall = time.monotonic() - start
    measured = format_bytes_binary(check.measured_peak_bytes) if check.result is not None else "–"
    return f"| {label} | {outcome} | {cells} | {measured} | {seconds:,.0f} s | {wall:,.1f} s | {load} → {_load()} |"


def stop_row(limit: float) -> str:
    """The heaviest case that runs, stopped from outside after 5 s (the page's Stop button)."""
    label, config, T, B, gib = CASES["heads-1g"]
    request = VerifyRequest(seq_len=T, batch=B, decode_steps=8, memory_bytes=int(gib * 2**30), device="cpu")
    check = start_check(from_hf_config(config, name="heads"), request, limit)
    time.sleep(5)
    start = time.monotonic()
    check.stop()
    check.join(30)
    return f"| {label}, Stop after 5 s | {check.error} | – | – | – | – | stopped in {time.monotonic() - start:.2f} s | {_load()} |"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limit", type=float, default=120.0, help="the wall clock, s (the page's LIMIT_S)")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--stop", action="store_true", help="also time a Stop of a running check")
    p.add_argument(
        "--force", action="store_true", help="run the cases expected past the limit (the clock stops them)"
    )
    args = p.parse_args()
    print(HEADER)
    for name in args.cases.split(","):
        print(row(name, args.limit, args.force), flush=True)
    if args.stop:
        print(stop_row(args.limit))


if __name__ == "__main__":
    main()
