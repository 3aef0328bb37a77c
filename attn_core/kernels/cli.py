"""``python -m attn_core bench``: the kernel bench from the command line.

Contract:
    python -m attn_core bench [--device cpu|cuda] [--seq-lens 256,1024,4096] [--head-dim 64]
        [--batch 1] [--heads 8] [--kv-heads 8] [--dtype fp32|fp16|bf16] [--causal]
        [--impl naive,sdpa,sdpa-math,…,flex,online,triton] [--budget-s 60] [--json OUT]
``--json`` writes the list of records (``records.RECORD_KEYS`` first), rewritten after every case
so that a sweep stopped by its budget or by Ctrl-C still leaves valid JSON. Bad arguments print
one line to stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from attn_core.kernels.contestants import CONTESTANTS
from attn_core.kernels.records import DTYPES, Record

MAX_SEQ_LEN = 131_072
MAX_SIZE = 4_096  # batch, heads, head dim


class UsageError(Exception):
    """A bad argument: one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(t.replace("_", "")) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of whole numbers") from None
    if not values or not all(1 <= n <= MAX_SEQ_LEN for n in values):
        raise argparse.ArgumentTypeError(f"sequence lengths must be 1…{MAX_SEQ_LEN:,}")
    return values


def _size(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_SIZE:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number in 1…{MAX_SIZE:,}")
    return int(text)


def _impls(text: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    unknown = [n for n in names if n not in CONTESTANTS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown impl {', '.join(unknown)!r}; choose from {','.join(CONTESTANTS)}"
        )
    return names


def _budget(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError("the budget must be in (0, 86400] seconds")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m attn_core bench", description="Time and check attention kernels.")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--seq-lens", type=_int_list, default=(256, 1024, 4096), help="L = S, comma-separated")
    p.add_argument("--head-dim", type=_size, default=64)
    p.add_argument("--batch", type=_size, default=1)
    p.add_argument("--heads", type=_size, default=8)
    p.add_argument("--kv-heads", type=_size, default=None, help="GQA: KV heads (default: --heads)")
    p.add_argument("--dtype", choices=list(DTYPES), default="fp32")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--impl", type=_impls, default=("naive", "sdpa", "online"), help=",".join(CONTESTANTS))
    p.add_argument("--budget-s", type=_budget, default=60.0)
    p.add_argument("--rounds", type=_size, default=5, help="CPU: interleaved timing rounds")
    p.add_argument("--json", type=Path, default=None, help="write the records here")
    return p


def _row(r: Record) -> str:
    ms = f"{r.ms:10.3f}" if r.ms is not None else f"{'—':>10}"
    tf = f"{r.tflops:8.3f}" if r.tflops is not None else f"{'—':>8}"
    err = f"{r.max_abs_err:9.2e}" if r.max_abs_err is not None else f"{'—':>9}"
    ok = {True: "ok", False: "FAIL", None: ""}[r.ok]
    return f"{r.impl:15} {r.backend or ''!s:20} {r.seq_len:>7,} {ms} {tf} {err} {ok:4} {r.note}"


def main(argv: Sequence[str] | None = None) -> int:
    from attn_core.kernels.runner import SweepConfig, run_sweep  # torch: only once the args are fine

    try:
        args = build_parser().parse_args(argv)
        if args.kv_heads is not None and args.heads % args.kv_heads:
            raise UsageError(f"--heads {args.heads} must be a multiple of --kv-heads {args.kv_heads}")
        config = SweepConfig(
            device=args.device,
            seq_lens=args.seq_lens,
            head_dim=args.head_dim,
            batch=args.batch,
            heads=args.heads,
            kv_heads=args.kv_heads or args.heads,
            dtype=args.dtype,
            causal=args.causal,
            impls=args.impl,
            budget_s=args.budget_s,
            rounds=args.rounds,
        )
        for case in config.cases():
            case.validate()
        if args.device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise UsageError("--device cuda: no CUDA device on this machine")
    except (UsageError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    records: list[dict] = []

    def write(rec: Record) -> None:
        records.append(rec.to_json())
        print(_row(rec), flush=True)
        if args.json is not None:
            args.json.write_text(json.dumps(records, indent=1))

    print(f"{'impl':15} {'backend':20} {'L':>7} {'ms':>10} {'TFLOP/s':>8} {'max|err|':>9} ok   note")
    result = run_sweep(config, on_record=write)
    if args.json is not None:
        args.json.write_text(json.dumps(records, indent=1))
    print(
        f"# {result.facts.name}; load average {result.load_before} → {result.load_after}"
        + (f"; {result.stopped}" if result.stopped else "")
    )
    return 0
