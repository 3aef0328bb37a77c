"""Command line: ``python -m attn_core cost …`` and ``python -m attn_core models``.

Public contract (keep it):
    python -m attn_core cost (--model NAME | --config PATH) --seq-len T [--batch B]
        [--dtype fp32|fp16|bf16|fp8|int8] [--weight-dtype D] [--expert-dtype D] [--kv-dtype D]
        [--compute-dtype bf16|fp16|fp8|int8|fp4] [--causal]
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
from attn_core.cost.calibration import CalibrationError, load_calibration
from attn_core.cost.config_keys import read_mtp_layers
from attn_core.cost.config_reader import (
    MAX_CONFIG_BYTES,
    ConfigError,
    ModelShape,
    list_built_presets,
    list_presets,
    load_preset,
    load_preset_config,
    parse_config_bytes,
)
from attn_core.cost.derived_records import (
    build_answer,
    build_headline,
    derived_only_lines,
    mtp_answer,
    preset_record,
    record_lines,
)
from attn_core.cost.dtypes import COMPUTE_DTYPES, DTYPE_BYTES, WEIGHT_BITS
from attn_core.cost.gpus import GPU, custom_gpu, list_gpus, load_gpu
from attn_core.cost.inputs import Hardware, Precision, Workload
from attn_core.cost.limits import MAX_BATCH, MAX_GEN_LEN, MAX_GPUS, MAX_SEQ_LEN
from attn_core.cost.model_types import unwrap_text_config
from attn_core.cost.models_list import models_text
from attn_core.cost.report import cost_report
from attn_core.cost.report_text import format_report
from attn_core.cost.roofline import roofline
from attn_core.cost.units import (
    format_bytes_binary,
    format_bytes_decimal,
    format_rate,
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
                      help="a hybrid's recurrent states (default: the config's mamba_ssm_cache_dtype or "
                           "mamba_ssm_dtype, else --kv-dtype; transformers keeps fp32)")  # fmt: skip
    cost.add_argument(
        "--compute-dtype",
        choices=list(COMPUTE_DTYPES),
        help="the products' Tensor Core format, priced at its dense peak (default: --dtype "
        "where the GPU has a peak for it, else bf16)",
    )
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


def precision_of(args: argparse.Namespace, stated_state: str | None = None) -> Precision:
    """The dtypes the flags ask for; the state's, where --state-dtype is not given, the one the
    config states (``stated_state``), else the cache's."""
    state = args.state_dtype or stated_state
    return Precision(
        args.dtype, args.weight_dtype, args.kv_dtype, args.expert_dtype, state, args.compute_dtype
    )


def gpu_of(args: argparse.Namespace) -> GPU | None:
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
        if not args.json:
            return "\n".join(lines)
        mtp = mtp_answer(read_mtp_layers(unwrap_text_config(load_preset_config(args.model))), None)
        answer = build_answer(rec["model_derived"], args.seq_len, args.batch, mtp)
        return json.dumps({"model": args.model} | answer | {"model_check": rec}, indent=2)
    gpu = gpu_of(args)
    if args.n_gpus != 1 and gpu is None and args.calibration is None:
        raise UsageError("--n-gpus needs --gpu")
    # The objects validate what argparse cannot (efficiency ≤ 1); their ValueError is one line, exit 2.
    workload = Workload(args.seq_len, args.batch, args.prompt_len, args.gen_len, args.causal, args.efficiency)
    precision = precision_of(args, shape.state_dtype if shape.state_mixer is not None else None)
    hardware, calibrated = None if gpu is None else Hardware(gpu, args.n_gpus), None
    if hardware is not None:
        roofline(hardware, precision)  # a compute format the GPU lacks: one line naming what it has
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
        answer = {"sized_by": "formulas"} | report.to_json()
        # a preset's text shows the formulas' state (at the dtype its config states, else the cache's),
        # not the build's: its JSON keeps the formulas' state too (`build_headline`)
        kv, state_set = precision.b_kv, True
        answer = build_headline(answer, record, args.seq_len, args.batch, kv, state_set)
        return json.dumps(answer | extra, indent=2)
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
