"""The kernel bench's long runs: the CPU table and goal here, the GPU sweep on a GPU.

    cpu   every CPU contestant at L ∈ {256, 1024, 4096}, fp32, B = 1, H = 8, d = 64, causal off and
          on, interleaved medians, the load average before and after; then the CPU goal (online
          within 1.5× of SDPA at T = 4096): their wall times in one interleaved run. ``--write``
          appends the markdown to benchmarks/RESULTS.md.
    gpu   the H200 sweep (run by benchmarks/gpu_sweep.sh): L 512…16k, d 64/128, bf16/fp16, causal
          on/off, MHA and GQA, tokens per batch fixed at 16k (B = 16k / L, H = 2048 / d, as the
          FlashAttention papers), the headline case first; writes {"meta", "records"} JSON — the
          format the Kernels page reads from assets/bench/gpu-results*.json.

Usage: .venv/bin/python benchmarks/kernel_bench.py cpu [--rounds 5] [--flex] [--write]
       python benchmarks/kernel_bench.py gpu --out DIR [--budget-s 330]
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

from attn_core.kernels.device import attained_rates, device_facts, load_average
from attn_core.kernels.runner import SweepConfig, run_sweep

ROOT = Path(__file__).resolve().parents[1]
CPU_IMPLS = ("naive", "sdpa", "sdpa-math", "sdpa-flash", "sdpa-efficient", "online", "triton")
GPU_IMPLS = ("sdpa", "sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "flex", "online", "triton")


def _cell(x: float | None, fmt: str) -> str:
    return "—" if x is None else format(x, fmt)


def markdown_table(records: list) -> str:
    lines = [
        "| impl | kernel that ran | L | causal | ms | GFLOP/s | % of measured peak | peak extra MiB | max abs err | ok | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        gflops = None if r.tflops is None else r.tflops * 1e3
        mib = None if r.peak_mem_bytes is None else r.peak_mem_bytes / 2**20
        lines.append(
            f"| {r.impl} | {r.backend or '—'} | {r.seq_len:,} | {r.causal} | {_cell(r.ms, ',.2f')} | "
            f"{_cell(gflops, ',.1f')} | {_cell(r.extra.get('pct_peak'), '.0f')} | {_cell(mib, ',.1f')} | "
            f"{_cell(r.max_abs_err, '.1e')} | {'' if r.ok is None else ('✓' if r.ok else '✗')} | {r.note[:70]} |"
        )
    return "\n".join(lines)


def cpu_section(seq_lens=(256, 1024, 4096), rounds: int = 5, flex: bool = False, heads: int = 8) -> str:
    """The markdown of one CPU run (tests call it at tiny sizes)."""
    facts = device_facts("cpu", ("fp32",))
    impls = CPU_IMPLS + (("flex",) if flex else ())
    out = [
        f"Device: {facts.name}, {facts.threads} threads, torch {facts.versions.get('torch')}, triton "
        f"{facts.versions.get('triton', 'absent')}. Measured peaks: fp32 matmul "
        f"{facts.peak_flops['fp32'] / 1e9:,.0f} GFLOP/s, copy {facts.bandwidth / 1e9:,.1f} GB/s.",
    ]
    for causal in (False, True):
        config = SweepConfig(
            seq_lens=seq_lens,
            heads=heads,
            kv_heads=heads,
            causal=causal,
            impls=impls,
            rounds=rounds,
            budget_s=1e9,
        )
        result = run_sweep(config)
        out += [
            "",
            f"causal={causal}: load average {result.load_before:.2f} before, {result.load_after:.2f} after.",
            "",
            markdown_table(result.records),
        ]
    T = max(seq_lens)
    goal = run_sweep(
        SweepConfig(
            seq_lens=(T,), heads=heads, kv_heads=heads, impls=("sdpa", "online"), rounds=rounds, budget_s=1e9
        )
    )
    ms = {r.impl: r.ms for r in goal.records}
    out += [
        "",
        f"CPU goal (online within 1.5× of SDPA at T = {T:,}, fp32, H = {heads}, d = 64, one interleaved "
        f"run of {rounds} rounds): online {ms['online']:,.1f} ms, SDPA {ms['sdpa']:,.1f} ms, ratio "
        f"**{ms['online'] / ms['sdpa']:.2f}×**; load average {goal.load_before:.2f} → {goal.load_after:.2f}.",
    ]
    return "\n".join(out)


def gpu_configs(budget_s: float) -> list[SweepConfig]:
    """The headline case (L = 8192, d = 128, bf16) first, then the rest of the grid."""
    grid = []
    for d in (128, 64):
        for dtype in ("bf16", "fp16"):
            for causal in (False, True):
                for gqa in (False, True):
                    heads = 2048 // d
                    grid.append((d, dtype, causal, heads, heads // 4 if gqa else heads))
    configs = []
    for d, dtype, causal, heads, kv in grid:
        for L in (
            (8192, 512, 1024, 2048, 4096, 16384) if not configs else (512, 1024, 2048, 4096, 8192, 16384)
        ):
            configs.append(
                SweepConfig(
                    device="cuda",
                    seq_lens=(L,),
                    head_dim=d,
                    batch=max(1, 16384 // L),
                    heads=heads,
                    kv_heads=kv,
                    dtype=dtype,
                    causal=causal,
                    impls=GPU_IMPLS,
                    budget_s=budget_s,
                )
            )
    return configs


def gpu_main(out_dir: Path, budget_s: float) -> None:
    import time

    start = time.monotonic()
    facts = device_facts("cuda")
    meta = {
        "device": facts.name,
        "capability": facts.capability,
        "memory_bytes": facts.memory_bytes,
        "sm_count": facts.sm_count,
        "versions": facts.versions,
        "peaks": facts.peak_flops,
        "bandwidth": facts.bandwidth,
        "peak_source": facts.source,
        "kind": "cuda",
        "measured": facts.measured,
        "attained": attained_rates("cuda"),  # what the Cost page's calibrated column uses
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    records = []
    path = out_dir / "gpu-results.json"
    for config in gpu_configs(budget_s):
        left = budget_s - (time.monotonic() - start)
        if left <= 0:
            break
        cfg = SweepConfig(**{**config.__dict__, "budget_s": left})
        for r in run_sweep(cfg).records:
            row = r.to_json()
            records.append(row)
            tf = "—" if r.tflops is None else f"{r.tflops:7.1f}"
            print(
                f"{r.impl:15} {r.backend!s:12} L={r.seq_len:6} d={r.head_dim:3} {r.dtype} "
                f"causal={r.causal!s:5} kv={row['kv_heads']:2} TFLOP/s={tf} err={r.max_abs_err} ok={r.ok} {r.note[:60]}",
                flush=True,
            )
        path.write_text(json.dumps({"meta": meta, "records": records}, indent=1))
    print(f"# {len(records)} records in {time.monotonic() - start:.0f} s -> {path}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    cpu = sub.add_parser("cpu")
    cpu.add_argument("--rounds", type=int, default=5)
    cpu.add_argument("--flex", action="store_true", help="include compiled FlexAttention (~25 s to compile)")
    cpu.add_argument("--write", action="store_true", help="append to benchmarks/RESULTS.md")
    gpu = sub.add_parser("gpu")
    gpu.add_argument("--out", type=Path, required=True)
    gpu.add_argument("--budget-s", type=float, default=330.0)
    args = parser.parse_args(argv)
    if args.what == "gpu":
        gpu_main(args.out, args.budget_s)
        return
    load = load_average()
    text = cpu_section(rounds=args.rounds, flex=args.flex)
    heading = (
        f"\n## Kernel bench, CPU — `benchmarks/kernel_bench.py cpu --rounds {args.rounds}` "
        f"({datetime.date.today()}, load average at start {load:.2f}: other agents share the 2 cores)\n\n"
    )
    print(heading + text)
    if args.write:
        with (ROOT / "benchmarks" / "RESULTS.md").open("a") as f:
            f.write(heading + text + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
