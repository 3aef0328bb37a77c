"""The Cost page's calibrated time against real runs on this machine: which way of combining a
phase's compute and memory time at measured rates lands nearest a measured run.

For a dense GQA model and a mixture of experts, ``verify`` builds layers at true shape and times a
prefill and decode steps (one thread, its CPU time: `attn_core/verify/`). Each phase's FLOPs
and bytes are the cost model's, split as the Cost page splits them: products over the weights
(F_w FLOPs, W bytes) and attention (F_a FLOPs, M cache bytes). Three ways to combine them at the
verify probe's peak matmul rate, bandwidth and attention-kernel rate:

    max    max(F_w / R_mm + F_a / R_attn, (W + M) / BW)          one roofline over the phase
    sum    F_w / R_mm + F_a / R_attn + (W + M) / BW              nothing overlaps
    parts  max(F_w / R_mm, W / BW) + max(F_a / R_attn, M / BW)   each part its own roofline

and ``parts`` again at the rates the Cost page actually gets from a Kernels-page-style sweep on
this server (one thread, as app.py runs it; device_facts' 1024² matmul, rows curve and copy; the
fastest correct attention kernel at the case nearest the model's d_h and T): first with every
product at the square rate, then with each at R_mm(its rows), as the Cost page does
(`attn_core.cost.calibrated`). Each row carries the load average.

    PYTHONPATH=. .venv/bin/python benchmarks/calibrated_cost.py [--repeats 2] [--write]
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

import torch

from attn_core.cost.calibration import Calibration, read_calibration
from attn_core.cost.config_reader import load_preset
from attn_core.cost.phases import PhaseCount, expert_flops, expert_rows
from attn_core.cost.roofline import attained_time, product_seconds
from attn_core.cost.serving import kv_cache_bytes
from attn_core.kernels.device import device_facts, load_average
from attn_core.kernels.runner import SweepConfig, run_sweep
from attn_core.verify.plan import VerifyRequest
from attn_core.verify.run import VerifyResult, verify
from attn_core.views.kernels import run_meta

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("llama-3-8b", "qwen3-30b-a3b")
SWEEP = SweepConfig(
    seq_lens=(128, 256, 512),
    head_dim=128,
    heads=8,
    kv_heads=8,
    causal=True,
    impls=("naive", "sdpa", "online"),
    budget_s=60,
    rounds=3,
)
HEADER = (
    "| model | phase | measured ms | verify's estimate | max | sum | parts | parts, sweep, square R_mm "
    "| parts, sweep, R_mm(rows): the Cost page | load |\n|---|---|---|---|---|---|---|---|---|---|"
)


def kernels_calibration() -> Calibration:
    """What the Cost page reads after a Kernels sweep on this server (views/kernels publishes it)."""
    facts = device_facts("cpu", ("fp32",))
    records = run_sweep(SWEEP).records
    return read_calibration({"meta": run_meta(facts), "records": [r.to_json() for r in records]}, "sweep")


def split(result: VerifyResult, phase: str) -> tuple[float, float, float, float]:
    """(F_w, W, F_a, M) of one phase of a verify run: products and their weights, attention and its cache."""
    c = getattr(result, phase).counts
    cached = result.request.seq_len if phase == "prefill" else result.decode_context
    M = int(kv_cache_bytes(result.plan.shape, cached, result.request.batch, 4))  # fp32
    F_w = sum(g.flops for g in c.gemms)
    return F_w, c.bytes - M, c.flops - F_w, M


def cell(ms: float, measured: float) -> str:
    return f"{ms:,.1f} ({100 * (ms - measured) / measured:+.0f}%)"


def rows(result: VerifyResult, cal: Calibration) -> list[str]:
    probe, T, B, shape = result.probe, result.request.seq_len, result.request.batch, result.plan.shape
    prefill = result.prefill.counts
    attn_s = sum(a.count * probe.attention_s[(a.kind, a.q_len, a.kv_len)] for a in prefill.attention)
    R_mm, BW = probe.matmul_flop_per_s, probe.bandwidth_bytes_per_s
    R_attn = (prefill.flops - sum(g.flops for g in prefill.gemms)) / attn_s  # the probed kernel's rate
    k_attn = cal.attention_rate("fp32", shape.head_dim, T).flop_per_s
    k_mm, k_bw = cal.matmul["fp32"].value, cal.bandwidth.value
    load = " → ".join(f"{x:.1f}" for x in result.load_average if x is not None)
    out = []
    for label, phase, tokens in (("prefill", "prefill", B * T), ("decode step", "decode_step", B)):
        F_w, W, F_a, M = split(result, phase)
        measured = getattr(result, phase).measured_ms
        compute = F_w / R_mm + F_a / R_attn
        products = PhaseCount(
            tokens, F_w, expert_flops(shape, tokens), expert_rows(shape, tokens), 0, 0, 0, 0, 0
        )
        by_rows = product_seconds(products, lambda rows: cal.matmul_at("fp32", rows))
        figures = (
            getattr(result, phase).estimate_ms,
            1e3 * max(compute, (W + M) / BW),
            1e3 * (compute + (W + M) / BW),
            1e3 * float(attained_time(F_w / R_mm, W, F_a / R_attn, M, BW).seconds),
            1e3 * float(attained_time(F_w / k_mm, W, F_a / k_attn, M, k_bw).seconds),
            1e3 * float(attained_time(by_rows, W, F_a / k_attn, M, k_bw).seconds),
        )
        out.append(
            f"| {result.model} | {label} | {measured:,.1f} | "
            + " | ".join(cell(x, measured) for x in figures)
            + f" | {load} |"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="append the table to benchmarks/RESULTS.md")
    args = ap.parse_args()
    start, load = datetime.datetime.now(datetime.UTC), load_average()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the server's sweep runs on one thread (app.py)
    cal = kernels_calibration()
    torch.set_num_threads(threads)
    curve = ", ".join(f"{r / 1e9:.1f} at {m}" for m, r in cal.matmul_rows.get("fp32", ()))
    kernels = ", ".join(f"{a.describe()}: {a.flop_per_s / 1e9:.1f}" for a in cal.attention)
    rates = (
        f"Kernels-sweep rates (GFLOP/s): square matmul {cal.matmul['fp32'].value / 1e9:,.1f}; by rows {curve}; "
        f"memory stream {cal.bandwidth.value / 1e9:,.1f} GB/s; attention {kernels}"
    )
    print(rates)
    request = VerifyRequest(seq_len=256, decode_steps=8, memory_bytes=2 * 2**30, dtype="fp32")
    lines = [HEADER]
    print(HEADER, flush=True)
    for _ in range(args.repeats):
        for name in MODELS:
            new = rows(verify(load_preset(name), request), cal)
            lines += new
            print("\n".join(new), flush=True)
    heading = (
        f"\n## Calibrated time against real runs — `PYTHONPATH=. .venv/bin/python benchmarks/calibrated_cost.py "
        f"--repeats {args.repeats}` ({start:%Y-%m-%d %H:%M} UTC, load average at start {load:.2f})\n"
    )
    if args.write:
        with (ROOT / "benchmarks" / "RESULTS.md").open("a") as f:
            f.write(heading + "\n" + rates + "\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
