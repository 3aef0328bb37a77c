"""Command line: ``python -m attn_core cost …`` and ``python -m attn_core models``.

Public contract (keep it):
    python -m attn_core cost (--model NAME | --config PATH) --seq-len T [--batch B]
        [--dtype fp16|bf16|fp32|int8] [--causal] [--gpu NAME] [--json]
    python -m attn_core models [--json]
Bad arguments or configs print one line to stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from attn_core.cost.gpus import list_gpus, load_gpu
from attn_core.cost.limits import MAX_BATCH, MAX_GPUS, MAX_SEQ_LEN
from attn_core.cost.params import model_params
from attn_core.cost.report import CostReport, cost_report
from attn_core.cost.shapes import (
    MAX_CONFIG_BYTES,
    ConfigError,
    ModelShape,
    list_presets,
    load_preset,
    parse_config_bytes,
)
from attn_core.cost.tokens import DTYPE_BYTES
from attn_core.cost.units import (
    format_bytes,
    format_bytes_binary,
    format_count,
    format_count_short,
    format_flops,
    format_percent,
    format_rate,
    format_seconds,
)


class UsageError(Exception):
    """A bad argument or config: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but errors are one line (no usage dump) and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _bounded_int(lo: int, hi: int):
    def parse(text: str) -> int:
        try:
            value = int(text.replace(",", "").replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value:,} is outside {lo:,}…{hi:,}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m attn_core", description="Attention Lab command line.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{cost,models,gpus}")

    cost = sub.add_parser("cost", help="FLOPs, memory, KV cache, serving budget for one model")
    source = cost.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help=f"preset name: {', '.join(list_presets())}")
    source.add_argument("--config", type=Path, help="path to a Hugging Face config.json")
    cost.add_argument("--seq-len", type=_bounded_int(1, MAX_SEQ_LEN), required=True, help="tokens T")
    cost.add_argument("--batch", type=_bounded_int(1, MAX_BATCH), default=1, help="sequences B")
    cost.add_argument("--dtype", choices=list(DTYPE_BYTES), default="fp16", help="weights, scores, cache")
    cost.add_argument("--kv-dtype", choices=list(DTYPE_BYTES), help="cache only (default: --dtype)")
    cost.add_argument("--causal", action="store_true", help="count only allowed query–key pairs")
    cost.add_argument("--gpu", choices=list_gpus(), help="add serving capacity and decode bound")
    cost.add_argument("--n-gpus", type=_bounded_int(1, MAX_GPUS), default=1, help="GPUs (with --gpu)")
    cost.add_argument("--json", action="store_true", help="one JSON object instead of a table")

    models = sub.add_parser("models", help="list the model presets")
    models.add_argument("--json", action="store_true")
    gpus = sub.add_parser("gpus", help="list the GPU presets")
    gpus.add_argument("--json", action="store_true")
    return parser


def _load_shape(args: argparse.Namespace) -> ModelShape:
    if args.model is not None:
        return load_preset(args.model)
    path: Path = args.config
    if not path.is_file():
        raise UsageError(f"--config {path}: no such file")
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)  # enough to tell "too large" without reading it all
    except OSError as exc:
        raise UsageError(f"--config {path}: cannot read it ({exc.__class__.__name__})") from None
    try:
        return parse_config_bytes(data)
    except ConfigError as exc:
        raise UsageError(f"--config {path}: {exc}") from None


def _shape_line(s: ModelShape) -> str:
    window = f", sliding window {s.sliding_window:,}" if s.sliding_window else ""
    return (
        f"{s.name}: {s.attention_kind}, L={s.n_layers}, d={s.d_model:,}, h={s.n_heads}, "
        f"H_kv={s.n_kv_heads}, d_h={s.head_dim}, d_ff={s.d_ff:,} ({s.mlp_kind} MLP){window}"
    )


def format_report(r: CostReport) -> str:
    """The readable table the CLI prints without --json."""
    f = r.flops
    pairs = "only allowed query–key pairs (causal)" if r.causal else "every query–key pair"
    T_star = (
        "never: the sliding window keeps the quadratic part below the rest"
        if r.crossover_seq_len is None
        else f"{r.crossover_seq_len:,.0f} tokens"
    )
    lines = [
        _shape_line(r.model),
        f"T = {r.seq_len:,} tokens, batch {r.batch:,}, weights {r.dtype}, KV cache {r.kv_dtype}",
    ]
    if r.beyond_max_context:
        lines.append(f"note: T is beyond the model's trained context of {r.model.max_context:,} tokens")
    lines += [
        "",
        "KV cache",
        f"  per token                 {r.kv_cache_bytes_per_token:>22,} B  {format_bytes(r.kv_cache_bytes_per_token)}",
        f"  all B sequences           {r.kv_cache_bytes:>22,} B  {format_bytes(r.kv_cache_bytes)}",
        f"Weights                     {r.weight_bytes:>22,} B  {format_bytes(r.weight_bytes)}",
        f"Attention params per layer  {r.attention_params.total:>22,}",
        "",
        f"FLOPs per layer, forward, {pairs}",
        f"  projections  {format_flops(f.projections, unit='GFLOP'):>20}",
        f"  attention    {format_flops(f.attention, unit='GFLOP'):>20}  {format_percent(f.attention_share)} of total",
        f"  mlp          {format_flops(f.mlp, unit='GFLOP'):>20}",
        f"  total        {format_flops(f.total, unit='GFLOP'):>20}",
        f"Crossover T* (quadratic part = the rest)  {T_star}",
        "",
        "Score memory per layer",
        f"  naive (B·h·T²·b)          {r.score_bytes_naive_per_layer:>22,} B  "
        f"{format_bytes_binary(r.score_bytes_naive_per_layer)}",
        f"  online (B·h·T·4, fp32 lse){r.score_bytes_online_per_layer:>22,} B  "
        f"{format_bytes_binary(r.score_bytes_online_per_layer)}",
        f"Decode attention intensity  {r.decode_intensity:g} FLOP/byte",
    ]
    if r.gpu is not None and r.serving is not None and r.decode is not None:
        g, d = r.gpu, r.decode
        lines += [
            "",
            f"{r.n_gpus} × {g.label}: {format_rate(g.bandwidth_bytes_per_s, 'B/s', prefix='G')}, "
            f"{format_rate(g.bf16_flops_per_s, 'FLOP/s')} bf16, ridge {g.ridge_flop_per_byte:.0f} FLOP/byte",
            f"  sequences of T that fit beside the weights (upper bound)  {r.serving.max_sequences:,}",
            f"  decode time per step (lower bound)  {format_seconds(d.weight_seconds)} weights + "
            f"{format_seconds(d.kv_seconds)} cache = {format_seconds(d.seconds_per_step)}",
            f"  tokens/s over the batch of {r.batch:,} (upper bound)  {d.tokens_per_s:,.1f}",
        ]
    return "\n".join(lines)


def _models_rows() -> list[dict]:
    rows = []
    for name in list_presets():
        s = load_preset(name)
        rows.append(s.summary() | {"name": name, "params": model_params(s).total})
    return rows


def _run(args: argparse.Namespace) -> str:
    if args.command == "models":
        rows = _models_rows()
        if args.json:
            return json.dumps(rows, indent=2)
        header = (
            f"{'name':<15}{'kind':<5}{'L':>4}{'d':>7}{'h':>4}{'H_kv':>5}{'d_h':>5}{'d_ff':>7}  mlp    params"
        )
        body = [
            f"{r['name']:<15}{r['attention_kind']:<5}{r['n_layers']:>4}{r['d_model']:>7}{r['n_heads']:>4}"
            f"{r['n_kv_heads']:>5}{r['head_dim']:>5}{r['d_ff']:>7}  {r['mlp_kind']:<6} "
            f"{format_count_short(r['params'], 2)}"
            for r in rows
        ]
        return "\n".join([header, *body])
    if args.command == "gpus":
        gpus = [load_gpu(n) for n in list_gpus()]
        if args.json:
            return json.dumps(
                [g.__dict__ | {"ridge_flop_per_byte": g.ridge_flop_per_byte} for g in gpus], indent=2
            )
        return "\n".join(
            f"{g.name:<11}{g.label}: {format_count(g.memory_bytes / 1e9)} GB, "
            f"{format_rate(g.bandwidth_bytes_per_s, 'B/s', prefix='G')}, {format_rate(g.bf16_flops_per_s, 'FLOP/s')}"
            for g in gpus
        )
    shape = _load_shape(args)
    if args.n_gpus != 1 and args.gpu is None:
        raise UsageError("--n-gpus needs --gpu")
    gpu = load_gpu(args.gpu) if args.gpu else None
    report = cost_report(
        shape, args.seq_len, args.batch, args.dtype, args.causal, gpu, args.n_gpus, args.kv_dtype
    )
    return json.dumps(report.to_json(), indent=2) if args.json else format_report(report)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (0 ok, 2 bad arguments or config)."""
    try:
        args = build_parser().parse_args(argv)
        text = _run(args)
    except (UsageError, ConfigError, ValueError) as exc:
        message = " ".join(str(exc).split())  # always exactly one line
        print(f"python -m attn_core: error: {message}", file=sys.stderr)
        return 2
    print(text)
    return 0
