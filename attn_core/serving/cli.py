"""``python -m attn_core serve``: one deployment under one load, simulated.

    python -m attn_core serve (--model NAME | --config F) --gpu G [--n-gpus N] [--weight-dtype D]
        [--kv-dtype D] [--compute-dtype D] --in-len I --out-len O
        (--max-load | --concurrency C | --rate R [--requests K]) [--slo-ttft-ms X --slo-tpot-ms Y] --json

Prints one JSON object: ``output_tokens_per_s``, ``ttft_ms``, ``tpot_ms`` (medians over requests),
``ttft_ms_p99``, ``tpot_ms_p99``, each ``{"estimate", "low", "high", "bound"}``: the estimate at the
fitted coefficients (attn_core/serving/fitted.py), its calibrated 80% interval, and the same load
simulated at the roofline bound (an estimate is never beyond it: a time never below, a rate never
above). With SLOs, ``deployment: {"gpus", "tp", "replicas"}`` (attn_core/serving/plan.py); without,
the ``--n-gpus`` GPUs serve as one tensor-parallel replica. Bad input: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attn_core.cost.cli import Parser, UsageError, bounded_int, fail, load_shape, positive_float
from attn_core.cost.config_keys import ConfigError
from attn_core.cost.dtypes import DTYPE_BYTES, WEIGHT_BITS
from attn_core.cost.gpus import list_gpus, load_gpu
from attn_core.cost.inputs import Precision
from attn_core.serving.fitted import FittedModel, load_fitted
from attn_core.serving.load import MAX_IN_LEN, MAX_OUT_LEN, MAX_REQUESTS, Load
from attn_core.serving.plan import SLO, Target, plan
from attn_core.serving.sim_result import SimResult
from attn_core.serving.simulate import Deployment, simulate
from attn_core.serving.step_time import Engine, bound_s

COMPUTE_DTYPES = ("bf16", "fp16", "fp8", "int8", "fp4")


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m attn_core serve", description="Simulate serving one model on GPUs.")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="preset name (python -m attn_core models)")
    source.add_argument("--config", type=Path, help="a Hugging Face config.json")
    p.add_argument("--gpu", choices=list_gpus(), required=True)
    p.add_argument("--n-gpus", type=bounded_int(1, 8), default=1, help="GPUs of one tensor-parallel replica")
    p.add_argument("--weight-dtype", choices=list(WEIGHT_BITS), default="bf16")
    p.add_argument("--kv-dtype", choices=list(DTYPE_BYTES), default="bf16")
    p.add_argument("--compute-dtype", choices=COMPUTE_DTYPES, default="bf16")
    p.add_argument(
        "--eager",
        action="store_true",
        help="an engine that launches each layer's kernels from the host (default: steps replayed as "
        "CUDA graphs, as vLLM, SGLang and TensorRT-LLM's PyTorch flow do)",
    )
    p.add_argument("--in-len", type=bounded_int(1, MAX_IN_LEN), required=True, help="prompt tokens")
    p.add_argument("--out-len", type=bounded_int(1, MAX_OUT_LEN), required=True, help="output tokens")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--max-load", action="store_true", help="every request at once (offline)")
    mode.add_argument("--concurrency", type=bounded_int(1, MAX_REQUESTS), help="closed loop")
    mode.add_argument("--rate", type=positive_float("--rate"), help="Poisson arrivals, requests/s")
    p.add_argument("--requests", type=bounded_int(1, MAX_REQUESTS), default=1000, help="requests K")
    p.add_argument("--slo-ttft-ms", type=positive_float("--slo-ttft-ms"))
    p.add_argument("--slo-tpot-ms", type=positive_float("--slo-tpot-ms"))
    p.add_argument("--json", action="store_true", help="one JSON object (the only output form)")
    return p


def _load(args: argparse.Namespace) -> Load:
    if args.max_load:
        return Load(args.in_len, args.out_len, "max", requests=args.requests)
    if args.concurrency is not None:
        return Load(
            args.in_len, args.out_len, "concurrency", concurrency=args.concurrency, requests=args.requests
        )
    return Load(args.in_len, args.out_len, "rate", rate=args.rate, requests=args.requests)


def _figures(est: SimResult, bound: SimResult, fitted: FittedModel) -> dict[str, Any]:
    """Each figure as estimate, interval and bound; an estimate clamped to its bound's side."""
    out: dict[str, Any] = {}
    rate, rate_bound = est.output_tokens_per_s, bound.output_tokens_per_s
    rate = min(rate, rate_bound)
    lo, hi = fitted.rate_range(rate)
    out["output_tokens_per_s"] = {
        "estimate": rate,
        "low": lo,
        "high": min(hi, rate_bound),
        "bound": rate_bound,
    }
    for key, e, b in (
        ("ttft_ms", est.ttft.p50, bound.ttft.p50),
        ("tpot_ms", est.tpot.p50, bound.tpot.p50),
        ("ttft_ms_p99", est.ttft.p99, bound.ttft.p99),
        ("tpot_ms_p99", est.tpot.p99, bound.tpot.p99),
    ):
        e_ms, b_ms = 1e3 * max(e, b), 1e3 * b
        lo, hi = fitted.time_range(e_ms)
        out[key] = {"estimate": e_ms, "low": max(lo, b_ms), "high": hi, "bound": b_ms}
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    shape = load_shape(args)
    gpu, load, fitted = load_gpu(args.gpu), _load(args), load_fitted()
    precision = Precision(args.kv_dtype, weights=args.weight_dtype, kv=args.kv_dtype)
    slo = None
    if (args.slo_ttft_ms is None) != (args.slo_tpot_ms is None):
        raise UsageError("--slo-ttft-ms and --slo-tpot-ms go together")
    if args.slo_ttft_ms is not None:
        if args.rate is None:
            raise UsageError("SLOs need a --rate: a deployment is sized for an arrival rate")
        slo = SLO(args.slo_ttft_ms / 1e3, args.slo_tpot_ms / 1e3)
    extra: dict[str, Any] = {}
    if slo is not None:
        graphs = not args.eager
        chosen = plan(
            Target(
                shape, gpu, precision, load, slo, args.compute_dtype, fitted.coefficients, cuda_graphs=graphs
            )
        )
        if chosen.gpus is None:
            raise UsageError(chosen.limit)
        tp, replicas = chosen.tp, chosen.replicas
        extra["deployment"] = {"gpus": chosen.gpus, "tp": tp, "replicas": replicas, "limit": chosen.limit}
    else:
        tp, replicas = args.n_gpus, 1
    c = fitted.coefficients
    engine = Engine(shape, gpu, precision, tp, args.compute_dtype, coefficients=c, cuda_graphs=not args.eager)
    d = Deployment(engine, replicas)
    est, bound = simulate(d, load), simulate(d, load, bound_s)
    head = {
        "model": shape.name,
        "gpu": gpu.name,
        "tp": tp,
        "replicas": replicas,
        "requests": load.requests,
        "time_model": fitted.source,
        "max_concurrency_per_replica": est.max_concurrency,
        "preemptions": est.preemptions,
    }
    return head | _figures(est, bound, fitted) | extra


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 and one JSON object, or 2 and one line."""
    try:
        args = build_parser().parse_args(argv)
        doc = run(args)
    except (UsageError, ConfigError, ValueError) as exc:
        return fail(str(exc))
    except Exception as exc:  # an unexpected failure on valid-looking input: one line, exit 2
        return fail(f"cannot simulate it ({exc.__class__.__name__}: {exc})")
    print(json.dumps(doc, indent=2))
    return 0
