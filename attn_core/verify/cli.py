"""``python -m attn_core verify``: the cost model's estimate checked against a run on this machine.

Contract:
    python -m attn_core verify (--model NAME | --config PATH) [--layers N] [--seq-len T]
        [--batch B] [--decode-steps M] [--dtype fp32|fp16|bf16] [--device auto|cpu|cuda]
        [--memory-gib G] [--threads N] [--time-limit S] [--json OUT]
``--json`` writes one object: ``device``, ``built_by`` ("transformers": its own modules of the
named model, the first layers at true shapes; "lab": the lab's layers, built from the formulas'
reading, where transformers cannot build the config — remote code, no model_type — the first note
says why), ``params_built`` (every parameter built), ``planned_peak_bytes`` and
``measured_peak_bytes`` (the child's peak resident memory beyond its start), ``model_check`` (the named model's formulas against
transformers' own build, `attn_core.anatomy`), ``layers_built``, ``experts_built`` (null for a dense
model), ``probe`` {``matmul_flop_per_s``, ``bandwidth_bytes_per_s``, …} and ``prefill`` and
``decode_step``, each {``flops``, ``bytes``, ``bound_ms``, ``estimate_ms``, ``measured_ms``, …}
(see `attn_core.verify.run`). The check runs in a child process capped at its planned peak
memory and ``--time-limit`` seconds (`attn_core.verify.child`); ``--memory-gib`` is bounded
by this machine's memory (/proc/meminfo) and ``--threads`` by its cores. Bad arguments or configs,
and a check that fails or runs past its limit, print one line to stderr and exit 2; torch is
imported only once the arguments are fine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from attn_core.cost.cli import Parser, UsageError, bounded_int, fail, load_shape, positive_float
from attn_core.cost.config_reader import ConfigError, list_presets, read_config_json
from attn_core.cost.units import format_bytes_binary, format_flops, format_rate, format_seconds

# Mirrors attn_core.verify (which imports torch); a test checks they agree.
DTYPES = ("fp32", "fp16", "bf16")
DEFAULT_SEQ_LEN = 256
DEFAULT_DECODE_STEPS = 8
DEFAULT_MEMORY_GIB = 2.0
MAX_LAYERS = 64
MAX_SEQ_LEN = 131_072
MAX_BATCH = 1_024
MAX_DECODE_STEPS = 4_096
DEFAULT_TIME_LIMIT_S = 1_800
MAX_TIME_LIMIT_S = 86_400


def machine_memory_gib() -> float:
    """This machine's memory, GiB (MemTotal in /proc/meminfo; 1 GiB if it cannot be read)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 1.0


def _memory_gib(text: str) -> float:
    value = positive_float("--memory-gib")(text)
    total = machine_memory_gib()
    if value > total:
        raise argparse.ArgumentTypeError(f"--memory-gib {value:g} is over this machine's {total:,.1f} GiB")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m attn_core verify",
        description="Build a model's layers with random weights, run a prefill and decode steps, "
        "and compare the time with the cost model's bound and calibrated estimate.",
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help=f"preset name: {', '.join(list_presets())}")
    source.add_argument("--config", type=Path, help="path to a Hugging Face config.json")
    p.add_argument(
        "--layers",
        type=bounded_int(1, MAX_LAYERS),
        default=None,
        help="layers to build (default: as many as fit --memory-gib)",
    )
    p.add_argument("--seq-len", type=bounded_int(1, MAX_SEQ_LEN), default=DEFAULT_SEQ_LEN, help="prompt T")
    p.add_argument("--batch", type=bounded_int(1, MAX_BATCH), default=1, help="sequences B")
    p.add_argument(
        "--decode-steps",
        type=bounded_int(1, MAX_DECODE_STEPS),
        default=DEFAULT_DECODE_STEPS,
        help="decode steps M",
    )
    p.add_argument("--dtype", choices=DTYPES, default="fp32", help="weights, activations and cache")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="auto: CUDA if present")
    p.add_argument(
        "--memory-gib",
        type=_memory_gib,
        default=DEFAULT_MEMORY_GIB,
        help="cap on the check's planned peak (weights, cache, activations, probe), GiB; "
        "at most this machine's memory",
    )
    p.add_argument(
        "--threads",
        type=bounded_int(0, os.cpu_count() or 1),
        default=1,
        help="CPU threads, at most this machine's cores (default 1: timed on its own CPU time; "
        "0: torch's default, wall time)",
    )
    p.add_argument(
        "--time-limit",
        type=bounded_int(1, MAX_TIME_LIMIT_S),
        default=DEFAULT_TIME_LIMIT_S,
        help="seconds the check may run before it is stopped",
    )
    p.add_argument("--json", type=Path, default=None, help="write the result here as JSON")
    return p


def format_result(r) -> str:
    """The readable table: what was built, the probe, and bound / estimate / measured per phase."""
    p, req = r.plan, r.request
    experts = (
        f", {p.experts_built} of {p.model_experts} routed experts" if p.experts_built is not None else ""
    )
    cache = "KV cache and linear state" if p.shape.n_state_layers else "KV cache"
    lines = [
        f"{r.model} on {r.device} ({r.device_name}), {r.dtype}: {p.layers_built} of {p.model_layers} layers built "
        f"({p.kinds_built}){experts} by {'transformers (its own modules)' if p.built_by == 'transformers' else 'the lab'}, "
        f"{p.params_built:,} parameters, random weights ({format_bytes_binary(p.weight_bytes)} + {cache} "
        f"{format_bytes_binary(p.cache_bytes)}, cap {format_bytes_binary(req.memory_bytes)})",
        *(f"  note: {n}" for n in p.notes),
        f"probe ({r.probe.seconds:.1f} s, before the layers were built): matmul up to "
        f"{format_rate(r.probe.matmul_flop_per_s, 'FLOP/s')}, bandwidth up to "
        f"{format_rate(r.probe.bandwidth_bytes_per_s, 'B/s', prefix='G')}",
        "",
        f"{'phase':<34}{'FLOPs':>13}{'bytes':>12}{'bound':>11}{'estimate':>11}{'measured':>11}{'error':>9}",
    ]
    phases = (
        (f"prefill, {req.batch} × {req.seq_len:,} tokens", r.prefill),
        (f"decode step, {r.decode_context:,} cached", r.decode_step),
    )
    for label, ph in phases:
        lines.append(
            f"{label:<34}{format_flops(ph.counts.flops):>13}{format_bytes_binary(ph.counts.bytes):>12}"
            f"{format_seconds(ph.bound_ms / 1e3):>11}{format_seconds(ph.estimate_ms / 1e3):>11}"
            f"{format_seconds(ph.measured_ms / 1e3):>11}{ph.error_pct:>+8.1f}%"
        )
    before, after = r.load_average
    lines += [
        "",
        "bound: the roofline at the probed peaks (a lower bound); estimate: each matrix product at its "
        "probed rate + the probed attention kernel (and linear-attention core); "
        "error = (estimate − measured) / measured.",
        f"measured: fastest of the prefills and of the {req.decode_steps} decode steps, on {r.clock} "
        f"(wall: {r.prefill.measured_wall_ms:,.1f} ms and {r.decode_step.measured_wall_ms:,.1f} ms); "
        f"load average {before:.2f} → {after:.2f} (other processes share this machine); {r.seconds:.1f} s in all",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (0 ok, 2 bad arguments, config or build)."""
    try:
        args = build_parser().parse_args(argv)
        try:
            shape = load_shape(args)
        except (UsageError, ConfigError) as exc:  # the formulas do not read it: the model may
            return _model_read(args, exc)
        config = model_config(args)
    except (UsageError, ConfigError, ValueError) as exc:
        return fail(str(exc))
    # torch: only once the arguments are fine
    from attn_core.verify.child import CheckFailed, start_check
    from attn_core.verify.plan import plan_build, select_device
    from attn_core.verify.run import expected_seconds

    try:
        request = _request(args)
        device = select_device(args.device)
        # refuse what cannot be built before probing anything
        plan = plan_build(shape, request, config)
        seconds = expected_seconds(plan, request, device)
        if seconds > args.time_limit:
            return fail(
                f"this check is expected to take ~{seconds:,.0f} s, over --time-limit {args.time_limit:,} s"
            )
        print(
            f"expected to take up to ~{seconds:,.0f} s (stopped at {args.time_limit:,} s); planned peak "
            f"{format_bytes_binary(plan.peak_bytes)}",
            file=sys.stderr,
        )
        running = start_check(shape, request, args.time_limit, config=config)
        result = running.wait()
    except (UsageError, ConfigError, ValueError) as exc:  # VerifyError is a ValueError
        return fail(str(exc))
    except CheckFailed as exc:  # out of memory, past the limit, killed: one line
        return fail(str(exc))
    check = model_check(args)
    if args.json is not None:
        peaks = {"planned_peak_bytes": plan.peak_bytes, "measured_peak_bytes": running.measured_peak_bytes}
        counts = {"counts_by": "formulas", "model_check": check}
        args.json.write_text(json.dumps(result.to_json() | peaks | counts, indent=1))
    print(format_result(result))
    if check is not None and not check["agrees"] and result.plan.built_by == "lab":
        print(
            "note: the formulas (and so the layers built here) differ from transformers' own build of "
            "this model: see `cost` for the parts; this check measured the formulas' reading"
        )
    elif check is not None and not check["agrees"]:
        print(
            "note: the formulas differ from transformers' own build of this model (see `cost`): the run "
            "measured transformers' modules, the counts beside it are the formulas'"
        )
    return 0


def _model_read(args, unread: Exception) -> int:
    """A model the formulas do not read (``unread`` says why) but transformers builds: `verify`
    with its counts from the model itself (`attn_core.verify.model_read`, ``counts_by`` "model");
    where transformers cannot build it either, the formulas' refusal, one line."""
    from attn_core.cost.derived_records import buildable_type

    try:
        config = model_config(args)
    except (OSError, ValueError):
        return fail(str(unread))
    if config is None or buildable_type(config) is None:
        return fail(str(unread))
    from attn_core.verify.model_read import format_model_read, verify_model_read

    request = _request(args)
    name = args.model or str(args.config)
    try:
        result = verify_model_read(config, request, name)
    except ValueError as exc:  # VerifyError
        return fail(f"{exc} (the formulas do not read it either: {unread})")
    out = result.to_json() | {"formulas_unread": str(unread)}
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1))
    print(format_model_read(out))
    return 0


def _request(args):
    """The check's settings from the arguments: a `VerifyRequest` (`plan`, which imports torch)."""
    from attn_core.verify.plan import VerifyRequest

    return VerifyRequest(
        seq_len=args.seq_len,
        batch=args.batch,
        decode_steps=args.decode_steps,
        layers=args.layers,
        memory_bytes=int(args.memory_gib * 2**30),
        dtype=args.dtype,
        device=args.device,
        threads=args.threads or None,
    )


def model_config(args) -> dict | None:
    """The config.json dict behind the shape (a preset's, or the file's), for transformers' build;
    None where it is not a JSON object (the shape's reader has already said so otherwise)."""
    from attn_core.cost.config_reader import load_preset_config

    config = (
        load_preset_config(args.model)
        if args.model is not None
        else read_config_json(args.config.read_text())
    )
    return config if isinstance(config, dict) else None


def model_check(args) -> dict | None:
    """The named model's formulas held against transformers' own build (`attn_core.anatomy`):
    a preset's recorded check, or a config's built on the meta device; None where nothing can be
    built (no model_type) or transformers refuses (its reason is in ``refused`` otherwise)."""
    from attn_core.cost.config_reader import load_preset_config
    from attn_core.cost.derived_records import buildable_type, preset_record

    if args.model is not None:
        return preset_record(args.model, load_preset_config(args.model))
    config = read_config_json(args.config.read_text())
    if buildable_type(config) is None:
        return None
    from attn_core.anatomy.compare import compare_config

    return compare_config(config).to_json()
