"""Long maps: tile maps of every head at 1k/2k/4k tokens against a dense output_attentions run.

Two models, random weights, float32, batch 1, on this CPU with 2 threads: the Hugging Face page's
demo (Mistral-style, 2 layers, 4 query / 2 KV heads of 16, sliding window 8) with 4,096 rotary
positions, and a GPT-2-small shape (12 layers × 12 heads of 64, d_model 768, n_positions = 4,096;
127 M parameters with the longer position table). Cases, each in a fresh subprocess:

- ``tiles``: ``attn_core.views.long_heads.long_view`` on every layer (captures q and k while the
  layers run fused SDPA, then ``attn_core.tile_maps``), and ``first``: the same with layers=1
  (the forward stops after layer 0: the first map a page can show);
- ``dense``: the model's body with ``output_attentions=True`` under eager attention, every
  layer's (H, L, L) probabilities kept — what the short-input page does today.

Both run the model's body (no LM head: no L × vocab logits) on the same ids (the shipped prose,
one id per character, code point mod the vocabulary). Peak memory: the process's resident-set
high-water mark (VmHWM, reset through /proc/self/clear_refs after malloc_trim) during the call
minus its resident set just before (model loaded, one 64-token warm-up run done). Time: wall clock
of the call. With --repeats R each case runs in R fresh subprocesses: the fastest time (the least
disturbed by other processes on the shared cores) and the largest peak are reported. A dense case whose predicted kept maps (layers · H · L² ·
4 bytes) leave less than 2 GiB of MemAvailable is not run and says so.

Usage: PYTHONPATH=$PWD .venv/bin/python benchmarks/long_maps.py [--models demo gpt2] [--L 1024 2048 4096]
       [--cases first tiles dense] [--repeats 1]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import torch

from attn_core.hf.loading import Loaded
from attn_core.views import long_heads as lh

THREADS = 2
GiB, MiB = 2**30, 2**20
NO_BUDGET = lh.Budget(max_bytes=1 << 50, max_seconds=1e9)  # the benchmark measures; it does not refuse
_libc = ctypes.CDLL("libc.so.6")


def _status_bytes(key: str) -> int:
    text = Path("/proc/self/status").read_text()
    return int(re.search(rf"{key}:\s+(\d+) kB", text).group(1)) * 1024


def _meminfo_bytes(key: str) -> int:
    return int(re.search(rf"{key}:\s+(\d+) kB", Path("/proc/meminfo").read_text()).group(1)) * 1024


def gpt2_small(positions: int = 4096) -> Loaded:
    """GPT-2 small's shape with random weights (seeded) and ``positions`` learned positions."""
    import transformers

    config = transformers.GPT2Config(n_positions=positions)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    return Loaded(
        model, None, "GPT-2-small shape, random", sum(p.numel() for p in model.parameters()), 0.0, False
    )


def build(name: str) -> lh.LongModel:
    return lh.demo() if name == "demo" else lh.from_hf(gpt2_small())


def run_case(model_name: str, case: str, L: int) -> dict:
    """One measurement in this process: see the module docstring."""
    torch.set_num_threads(THREADS)
    m = build(model_name)
    inp = lh.read_input(m, lh.sample_input(m, L), L)
    if case == "dense":
        kept = m.n_layers * m.n_heads * L * L * 4
        if kept + 2 * GiB > _meminfo_bytes("MemAvailable"):
            return {"skipped": f"its kept maps alone are {kept / GiB:.1f} GiB: not enough free memory"}

        def call():
            with torch.no_grad():
                out = m.model.base_model(input_ids=inp.idx, output_attentions=True, use_cache=False)
            return out.attentions

        with torch.no_grad():
            m.model.base_model(input_ids=inp.idx[:, :64], output_attentions=True, use_cache=False)
    else:
        layers = 1 if case == "first" else None

        def call():
            return lh.long_view(m, inp, NO_BUDGET, layers=layers)

        lh.long_view(m, lh.read_input(m, lh.sample_input(m, 64), 64), NO_BUDGET, layers=layers)
    _libc.malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = _status_bytes("VmRSS")
    start = time.perf_counter()
    out = call()
    seconds = time.perf_counter() - start
    peak = _status_bytes("VmHWM") - before
    record = {"seconds": seconds, "peak_bytes": peak}
    if case != "dense":
        record |= {"estimate_seconds": out.estimate.seconds, "estimate_bytes": out.estimate.bytes}
    del out
    return record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=["demo", "gpt2"], choices=["demo", "gpt2"])
    ap.add_argument("--L", nargs="+", type=int, default=[1024, 2048, 4096])
    ap.add_argument(
        "--cases", nargs="+", default=["first", "tiles", "dense"], choices=["first", "tiles", "dense"]
    )
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--one", nargs=3, metavar=("MODEL", "CASE", "L"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        model_name, case, L = args.one
        print(json.dumps(run_case(model_name, case, int(L))))
        return
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {Path('/proc/loadavg').read_text().split()[:3]}"
    )
    print("| model | L | case | time, s | peak extra, MiB | estimate: s, MiB |")
    print("|---|---|---|---|---|---|")
    for model_name in args.models:
        for L in args.L:
            for case in args.cases:
                runs = [_subprocess(model_name, case, L) for _ in range(args.repeats)]
                if isinstance(runs[0], str):
                    print(f"| {model_name} | {L:,} | {case} | {runs[0]} | | |", flush=True)
                    continue
                seconds = min(r["seconds"] for r in runs)
                peak = max(r["peak_bytes"] for r in runs)
                r = runs[0]
                est = (
                    f"{r['estimate_seconds']:.1f}, {r['estimate_bytes'] / MiB:,.0f}"
                    if "estimate_bytes" in r
                    else ""
                )
                print(
                    f"| {model_name} | {L:,} | {case} | {seconds:.2f} | {peak / MiB:,.0f} | {est} |",
                    flush=True,
                )
    print(
        f"done {time.strftime('%H:%M UTC', time.gmtime())}, load {Path('/proc/loadavg').read_text().split()[:3]}"
    )


def _subprocess(model_name: str, case: str, L: int) -> dict | str:
    """One case in a fresh process: its record, or a sentence saying why there is none."""
    cmd = [sys.executable, __file__, "--one", model_name, case, str(L)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    lines = [x for x in done.stdout.splitlines() if x.startswith("{")]
    if not lines:
        return f"failed: {done.stderr.strip().splitlines()[-1:]}"
    record = json.loads(lines[-1])
    return f"not run: {record['skipped']}" if "skipped" in record else record


if __name__ == "__main__":
    main()
