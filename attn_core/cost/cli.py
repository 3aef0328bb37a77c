"""Command line: ``python -m attn_core cost …`` and ``python -m attn_core models``.

Public contract (keep it):
    python -m attn_core cost (--model NAME | --config PATH) --seq-len T [--batch B]
        [--dtype fp32|fp16|bf16|fp8|int8] [--weight-dtype D] [--expert-dtype D] [--kv-dtype D] [--causal]
        [--gpu NAME | --gpu-mem-gib G --gpu-tflops F --gpu-bandwidth-gbs W] [--n-gpus N]
        [--prompt-len P] [--gen-len N] [--efficiency E] [--calibration RUN.json] [--json] [--analytic-only]
    python -m attn_core models [--json]
Bad arguments or configs print one line to stderr and exit 2. ``--calibration`` (a kernel bench
run: assets/bench/gpu-results*.json, the Kernels page's export) adds the times at its measured
rates, ``calibrated`` in --json; without --gpu it times the run's own device.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from attn_core.cost.calibrated import calibrated_timing, calibration_hardware
from attn_core.cost.calibration import SERVER_GPU, CalibrationError, load_calibration
from attn_core.cost.derived_records import derived_only_lines, preset_record, record_lines
from attn_core.cost.dtypes import DTYPE_BYTES, WEIGHT_BITS, weight_bytes_per_param
from attn_core.cost.gpus import GPU, custom_gpu, list_gpus, load_gpu
from attn_core.cost.inputs import Hardware, Precision, Workload
from attn_core.cost.limits import MAX_BATCH, MAX_GEN_LEN, MAX_GPUS, MAX_SEQ_LEN
from attn_core.cost.mixers import STATE_KIND_NAMES
from attn_core.cost.models_list import models_text
from attn_core.cost.report import CostReport, cost_report
from attn_core.cost.shapes import (
    MAX_CONFIG_BYTES,
    ConfigError,
    ModelShape,
    list_built_presets,
    list_presets,
    load_preset,
    load_preset_config,
    parse_config_bytes,
)
from attn_core.cost.units import (
    format_bytes,
    format_bytes_binary,
    format_bytes_decimal,
    format_count_short,
    format_flops,
    format_percent,
    format_rate,
    format_seconds,
)


class UsageError(Exception):
    """A bad argument or config: reported as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but errors are one line (no usage dump) and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def bounded_int(lo: int, hi: int):
    """An argparse type: a whole number from lo to hi, else one line naming the range."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace(",", "").replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value:,} is outside {lo:,}…{hi:,}")
        return value

    return parse


def positive_float(flag: str):
    """An argparse type: a finite number above 0 for ``flag``, else one line."""

    def parse(text: str) -> float:
        try:
            value = float(text.replace(",", "").replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not 0 < value < 1e7:  # rejects nan, inf, 0 and negatives
            raise argparse.ArgumentTypeError(f"{flag} must be a positive finite number, got {text!r}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m attn_core", description="Attention Lab command line.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{cost,models,gpus}")

    cost = sub.add_parser("cost", help="FLOPs, memory, KV cache, serving budget for one model")
    source = cost.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help=f"preset name: {', '.join(list_presets() + list_built_presets())}")
    source.add_argument("--config", type=Path, help="path to a Hugging Face config.json")
    cost.add_argument("--seq-len", type=bounded_int(1, MAX_SEQ_LEN), required=True, help="tokens T")
    cost.add_argument("--batch", type=bounded_int(1, MAX_BATCH), default=1, help="sequences B")
    cost.add_argument(
        "--dtype", choices=list(DTYPE_BYTES), default="fp16", help="weights, activations, cache"
    )
    cost.add_argument("--weight-dtype", choices=list(WEIGHT_BITS), help="weights only (default: --dtype)")
    cost.add_argument("--expert-dtype", choices=list(WEIGHT_BITS), help="routed experts (default: weights)")
    cost.add_argument("--kv-dtype", choices=list(DTYPE_BYTES), help="cache only (default: --dtype)")
    cost.add_argument("--state-dtype", choices=list(DTYPE_BYTES),
                      help="a hybrid's recurrent states (default: --kv-dtype; transformers keeps fp32)")  # fmt: skip
    cost.add_argument("--causal", action="store_true", help="count only allowed query–key pairs")
    cost.add_argument("--gpu", choices=list_gpus(), help="add serving capacity and time bounds")
    for flag, what in (("--gpu-mem-gib", "memory, GiB"), ("--gpu-tflops", "dense TFLOP/s"),
                       ("--gpu-bandwidth-gbs", "bandwidth, GB/s")):  # fmt: skip
        cost.add_argument(flag, type=positive_float(flag), help=f"your own GPU: {what} (all three)")
    cost.add_argument("--n-gpus", type=bounded_int(1, MAX_GPUS), default=1, help="GPUs, tensor-parallel")
    cost.add_argument("--prompt-len", type=bounded_int(1, MAX_SEQ_LEN), help="prompt P (default: T)")
    cost.add_argument("--gen-len", type=bounded_int(0, MAX_GEN_LEN), default=0, help="tokens generated N")
    cost.add_argument("--efficiency", type=positive_float("--efficiency"), default=1.0,
                      help="achieved fraction of peak (default 1.0: the bounds)")  # fmt: skip
    cost.add_argument(
        "--calibration", type=Path, help="a kernel bench run's JSON: times at its measured rates"
    )
    cost.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    cost.add_argument("--analytic-only", action="store_true",
                      help="--config: the formulas alone, without checking them against transformers' build (no torch)")  # fmt: skip

    models = sub.add_parser("models", help="list the model presets")
    models.add_argument("--json", action="store_true")
    gpus = sub.add_parser("gpus", help="list the GPU presets")
    gpus.add_argument("--json", action="store_true")
    return parser


def load_shape(args: argparse.Namespace) -> ModelShape:
    """The shape ``--model`` names or ``--config`` holds; UsageError (one line) otherwise."""
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
    except Exception as exc:  # a reader's bug must still end in one line, never a traceback
        raise UsageError(f"--config {path}: cannot size it ({exc.__class__.__name__})") from None


def _shape_line(s: ModelShape) -> str:
    window = f", sliding window {s.sliding_window:,}" if s.sliding_window else ""
    chunk = f", chunks of {s.attention_chunk_size:,}" if s.attention_chunk_size else ""
    kinds = s.kind_counts
    layers = ", layers: " + " + ".join(f"{n} {k}" for k, n in kinds.items()) if len(kinds) > 1 else ""
    mla = f", MLA cache r_kv {s.mla.kv_lora_rank} + d_rope {s.mla.qk_rope_head_dim}" if s.mla else ""
    mla += ", gated attention" if s.attention_output_gate else ""
    m = s.moe
    moe = (f", MoE {m.n_experts} experts (top-{m.top_k}, {m.n_shared} shared, {s.n_mlp_layers - s.n_moe_layers:,} dense layers)"
           if m else "")  # fmt: skip
    return (
        f"{s.name}: {s.attention_kind}, L={s.n_layers}, d={s.d_model:,}, h={s.n_heads}, "
        f"H_kv={s.n_kv_heads}, d_h={s.head_dim}, d_ff={s.d_ff:,} ({s.mlp_kind} MLP){window}{chunk}{layers}{mla}{moe}"
    )


def _whole_lines(r: CostReport) -> list[str]:
    """The whole-model answers: parameters, prefill, time bounds (or estimates)."""
    p, f, s = r.params.count, r.prefill, r.model
    pub = r.params.published
    published = "" if pub is None else f"   (published: {format_count_short(pub[0], 2)}" + (
        f" / {format_count_short(pub[1], 2)} active" if pub[1] else "") + f"; {pub[2]})"  # fmt: skip
    lines = [
        "",
        f"Parameters  total {p.total:,} ({format_count_short(p.total, 2)}), active per token {p.active:,} "
        f"({format_count_short(p.active, 2)}); without the input embeddings {format_count_short(p.active_without_embeddings, 2)}"
        + published,
        f"  weights {r.weight_dtype}: {8 * weight_bytes_per_param(r.weight_dtype):g} bits per weight (scales included)"
        + (
            f"; routed experts {r.expert_dtype}: {8 * weight_bytes_per_param(r.expert_dtype):g}"
            if r.expert_dtype != r.weight_dtype
            else ""
        ),
    ]
    if r.params.nextn_layers_left_out:
        lines.append(
            f"  {r.params.nextn_layers_left_out} next-token-prediction layer(s) left out: not the served model"
        )
    if s.quantization:
        lines.append(f"  the config's quantization_config ({s.quantization}) is reported, not applied")
    if s.attention_sinks:
        lines.append(
            "  attention sinks: one learned logit per query head per layer (softmax mass with no value)"
        )
    lines += [
        f"Prefill FLOPs, whole model, B × T  {format_flops(f.total)} = projections {format_flops(f.projections)} + "
        f"attention {format_flops(f.attention)} + MLP {format_flops(f.mlp)} + head {format_flops(f.lm_head)}",
        "  (matrix products only, 2 per multiply-add; norms, softmax and rotary excluded)",
    ]
    if s.mla:
        lines.append(
            f"  MLA attention counted naive; with the up-projections absorbed: {format_flops(f.attention_absorbed)}"
        )
    t = r.timing
    if t is not None:
        kind = f"estimates at {t.efficiency:g} of peak" if t.is_estimate else "lower bounds"
        lines += [
            f"Time on {r.n_gpus} × {r.gpu.label} ({kind}; "
            f"{'measured peaks' if r.gpu.name == SERVER_GPU else 'bf16 peak'}, perfect tensor parallelism)",
            f"  time to first token, P = {t.prompt_len:,}  {format_seconds(t.ttft_s)} ({t.ttft_bound}-bound, "
            "causal pairs)",
            f"  decode step at P                 {format_seconds(t.decode_step_s)}",
        ]
        if t.gen_len:
            lines.append(
                f"  P + {t.gen_len:,} generated tokens   {format_seconds(t.total_s)}, {t.tokens_per_s:,.1f} tokens/s"
            )
    return lines


def _state_lines(r: CostReport) -> list[str]:
    """A hybrid's fixed state beside the cache that grows."""
    if not r.state_bytes:
        return []
    s = r.model
    return [
        f"Fixed state, {s.n_state_layers:,} {STATE_KIND_NAMES[s.state_mixer.kind]} layers "
        f"(conv {r.kv_dtype}, recurrent {r.state_dtype})",
        f"  per sequence              {r.state_bytes_per_sequence:>22,} B  {format_bytes(r.state_bytes_per_sequence)}",
        f"  all B sequences           {r.state_bytes:>22,} B  {format_bytes(r.state_bytes)}",
    ]


def _routing_lines(r: CostReport) -> list[str]:
    """The decode step under uniform routing, beside the floor (k experts per MoE layer)."""
    d, touched = r.decode, r.experts_touched_expected
    if touched is None:
        return []
    m = r.model.moe
    return [
        f"  floor above: every sequence routes to the same {m.top_k} experts; under uniform routing "
        f"{r.batch:,} sequences touch {touched:,.1f} of {m.n_experts} per MoE layer:",
        f"    {format_seconds(d.expected_seconds_per_step)} per step, at most {d.expected_tokens_per_s:,.1f} tokens/s",
    ]


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
        f"T = {r.seq_len:,} tokens, batch {r.batch:,}, weights {r.weight_dtype}, activations {r.dtype}, "
        f"KV cache {r.kv_dtype}",
    ]
    if r.beyond_max_context:
        lines.append(f"note: T is beyond the model's trained context of {r.model.max_context:,} tokens")
    if r.kv_cache_over_a_petabyte:
        lines.append(f"note: the KV cache ({format_bytes(r.kv_cache_bytes)}) is past a petabyte")
    lines += [
        "",
        "KV cache",
        f"  per token                 {r.kv_cache_bytes_per_token:>22,} B  {format_bytes(r.kv_cache_bytes_per_token)}",
        f"  all B sequences           {r.kv_cache_bytes:>22,} B  {format_bytes(r.kv_cache_bytes)}",
        *_state_lines(r),
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
            f"  sequences of T that fit beside the weights (upper bound)  {r.serving.max_sequences:,} in the "
            f"{format_bytes_binary(r.serving.memory_bytes)} the device reports",
            f"    card 13's convention, {format_bytes_decimal(r.serving_card13.memory_bytes)} (vendor GB, 10^9 B): "
            f"{r.serving_card13.max_sequences:,}",
            f"  decode time per step (lower bound)  {format_seconds(d.weight_seconds)} weights + "
            f"{format_seconds(d.kv_seconds)} cache = {format_seconds(d.seconds_per_step)}",
            f"  tokens/s over the batch of {r.batch:,} (upper bound)  {d.tokens_per_s:,.1f}",
            f"    card 13 reads every weight: {format_seconds(d.card13_seconds_per_step)} per step",
            *_routing_lines(r),
        ]
    lines += _whole_lines(r)
    return "\n".join(lines)


def _gpu(args: argparse.Namespace) -> GPU | None:
    """A preset, or your own from all three --gpu-* numbers."""
    own = (args.gpu_mem_gib, args.gpu_tflops, args.gpu_bandwidth_gbs)
    if any(v is not None for v in own):
        if args.gpu is not None:
            raise UsageError("--gpu and --gpu-mem-gib/--gpu-tflops/--gpu-bandwidth-gbs are alternatives")
        if None in own:
            raise UsageError(
                "your own GPU needs all three of --gpu-mem-gib, --gpu-tflops, --gpu-bandwidth-gbs"
            )
        return custom_gpu(*own)
    return load_gpu(args.gpu) if args.gpu else None


def _run(args: argparse.Namespace, shape: ModelShape | None = None) -> str:
    if args.command == "models":
        return models_text(args.json)
    if args.command == "gpus":
        gpus = [load_gpu(n) for n in list_gpus()]
        if args.json:
            return json.dumps(
                [g.__dict__ | {"ridge_flop_per_byte": g.ridge_flop_per_byte} for g in gpus], indent=2
            )
        return "\n".join(
            f"{g.name:<11}{g.label}: {format_bytes_binary(g.memory_bytes)} reported "
            f"({format_bytes_decimal(g.vendor_memory_bytes)} label), "
            f"{format_rate(g.bandwidth_bytes_per_s, 'B/s', prefix='G')}, {format_rate(g.bf16_flops_per_s, 'FLOP/s')}"
            for g in gpus
        )
    try:
        shape = shape or load_shape(args)  # ``shape``: one already read (attn_core/anatomy/cli.py)
    except ConfigError as exc:  # a preset the formulas do not cover: its recorded build answers
        rec = preset_record(args.model, load_preset_config(args.model))
        lines = derived_only_lines(args.model, str(exc), rec, args.seq_len, args.batch)
        if not lines:
            raise
        return (
            json.dumps({"model": args.model, "model_check": rec}, indent=2) if args.json else "\n".join(lines)
        )
    gpu = _gpu(args)
    if args.n_gpus != 1 and gpu is None and args.calibration is None:
        raise UsageError("--n-gpus needs --gpu")
    # The objects validate what argparse cannot (efficiency ≤ 1); their ValueError is one line, exit 2.
    workload = Workload(args.seq_len, args.batch, args.prompt_len, args.gen_len, args.causal, args.efficiency)
    precision = Precision(args.dtype, args.weight_dtype, args.kv_dtype, args.expert_dtype, args.state_dtype)
    hardware, calibrated = None if gpu is None else Hardware(gpu, args.n_gpus), None
    try:  # a run that cannot be read or does not apply: one line naming the flag and the file
        if args.calibration is not None:
            run = load_calibration(args.calibration, str(args.calibration))
            hardware = calibration_hardware(run, gpu, args.n_gpus)
            calibrated = calibrated_timing(shape, workload, precision, hardware, run)
    except CalibrationError as exc:
        raise UsageError(f"--calibration {exc}") from None
    report = cost_report(shape, workload, precision, hardware, preset=args.model)
    record = preset_record(args.model, load_preset_config(args.model)) if args.model else None
    if args.json:
        extra = {"calibrated": calibrated.to_json()} if calibrated else {}
        if args.model:
            extra["model_check"] = record
        return json.dumps(report.to_json() | extra, indent=2)
    checked = "\n\n" + "\n".join(record_lines(record)) if args.model else ""
    return format_report(report) + (f"\n{calibrated.text()}" if calibrated else "") + checked


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (0 ok, 2 bad arguments or config)."""
    args = None
    try:
        args = build_parser().parse_args(argv)
        text = _run(args)
    except (UsageError, ConfigError, ValueError) as exc:
        return fail(str(exc))
    except Exception as exc:  # an unexpected failure on a valid-looking config: one line, exit 2
        where = f"--config {args.config}: " if getattr(args, "config", None) else ""
        return fail(f"{where}cannot size it ({exc.__class__.__name__})")
    print(text)
    return 0


def fail(message: str) -> int:
    """Print one line to stderr (whatever a file name or config holds) and return status 2."""
    line = " ".join(message.split()).encode("utf-8", "replace").decode("utf-8")
    print(f"python -m attn_core: error: {line}", file=sys.stderr)
    return 2
