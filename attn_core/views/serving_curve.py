"""The Serving page's two further sections: latency against throughput as concurrency rises (with
others' published measurements of the same model and GPU), and MHA / GQA / MLA / a linear hybrid
side by side under the same load (attn_core/serving/compare.py).

The curve runs one replica of the page's deployment (its TP) in a closed loop at each of
`CURVE_CONCURRENCY` sequences in flight that its memory holds (2·C requests, at least 16), at the
fitted estimate and at the roofline bound; throughput is per GPU (÷ TP).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from attn_core.cost.published import load_runs
from attn_core.cost.published_rows import Run
from attn_core.serving.compare import side_by_side
from attn_core.serving.fitted import load_fitted
from attn_core.serving.load import Load
from attn_core.serving.simulate import Deployment, simulate
from attn_core.serving.step_time import bound_s
from attn_core.serving.variants import VARIANTS, attention_variant
from attn_core.views.serving import CURVE_CONCURRENCY, SIMULATION, Ask, check_size, engine_of, target_of

GIB = 2**30


@dataclass(frozen=True)
class Published:
    """Others' measurements of this model on this GPU that the curve can show: a throughput (x,
    output tok/s per GPU) and/or a TTFT or TPOT (y, ms)."""

    rows: list[dict]  # one per run: its source, conditions and figure, for the table
    points: list[dict]  # {label, x, ttft_ms or tpot_ms}: a batch-1 decode: x and its TPOT
    x_lines: list[dict]  # {label, x}: a throughput alone
    ttft_lines: list[dict]  # {label, y}
    tpot_lines: list[dict]  # {label, y}


@dataclass(frozen=True)
class CurveView:
    rows: list[dict]  # per concurrency: tok/s per GPU and TTFT, TPOT p50/p99 ms (estimate, low, high, bound)
    tp: int
    published: Published


def _per_gpu(run: Run) -> float:
    return run.value if run.unit.endswith("/GPU") else run.value / run.n_gpus


def published(model: str, gpu: str) -> Published:
    """The published rows of ``model`` (a preset's name) on ``gpu`` that have a serving figure."""
    rows, points, x_lines, ttft, tpot = [], [], [], [], []
    for r in load_runs():
        if (
            r.preset != model
            or r.gpu_preset != gpu
            or r.metric not in ("output tok/s", "TTFT ms", "TPOT ms", "ITL ms")
        ):
            continue
        label = f"{r.source}: {r.id}"
        lengths = f"{r.input_len or '?'} in / {r.output_len or '?'} out"
        row = {"source": r.source, "id": r.id, "scenario": r.scenario, "metric": r.metric}
        row |= {"figure": r.text, "GPUs": r.n_gpus, "weights/KV/compute": f"{r.weights}/{r.kv}/{r.compute}"}
        rows.append(row | {"lengths": lengths, "concurrency": r.concurrency, "where": r.where})
        if r.metric == "output tok/s" and r.scenario == "decode-b1":
            points.append(
                {"label": label, "x": _per_gpu(r), "tpot_ms": 1e3 / r.value}
            )  # one user: TPOT = 1/rate
        elif r.metric == "output tok/s":
            x_lines.append({"label": label, "x": _per_gpu(r)})
        elif r.metric == "TTFT ms":
            ttft.append({"label": label, "y": r.value})
        else:
            tpot.append({"label": label, "y": r.value})
    return Published(rows, points, x_lines, ttft, tpot)


@SIMULATION.guard
def curve_view(ask: Ask, tp: int) -> CurveView:
    """TTFT and TPOT p50/p99 against output tok/s per GPU as concurrency rises (module docstring)."""
    fitted = load_fitted()
    d = Deployment(engine_of(ask, tp, fitted), 1)
    held = simulate(d, Load(ask.load.in_len, ask.load.out_len, "max", requests=1)).max_concurrency
    rows = []
    for c in [c for c in CURVE_CONCURRENCY if c <= max(held, 1)] or [1]:
        load = Load(ask.load.in_len, ask.load.out_len, "concurrency", concurrency=c, requests=max(2 * c, 16))
        est, bound = simulate(d, load), simulate(d, load, bound_s)
        rate = min(est.output_tokens_per_s, bound.output_tokens_per_s)
        row = {
            "concurrency": c,
            "output tok/s per GPU": rate / tp,
            "bound tok/s per GPU": bound.output_tokens_per_s / tp,
        }
        for name in ("ttft", "tpot"):
            for q in ("p50", "p99"):
                e_ms, b_ms = 1e3 * getattr(getattr(est, name), q), 1e3 * getattr(getattr(bound, name), q)
                e_ms = max(e_ms, b_ms)
                lo, hi = fitted.time_range(e_ms)
                key = f"{name.upper()} {q}"
                row |= {
                    f"{key} (ms)": e_ms,
                    f"{key} low (ms)": max(lo, b_ms),
                    f"{key} high (ms)": hi,
                    f"{key} bound (ms)": b_ms,
                }
        rows.append(row)
    return CurveView(rows, tp, published(ask.shape.name, ask.gpu))


@SIMULATION.guard
def variants_view(ask: Ask) -> list[dict]:
    """`compare.side_by_side` for the page's load and SLOs: one row per attention."""
    fitted = load_fitted()
    for variant in VARIANTS:  # a variant holding fewer sequences takes more steps: each within the cap
        try:
            check_size(dataclasses.replace(ask, shape=attention_variant(ask.shape, variant)), fitted)
        except ValueError as exc:
            raise ValueError(f"As {variant}: {exc}") from None
    target = target_of(ask, fitted)
    rows = []
    for v in side_by_side(target):
        p = v.plan
        fits = p.gpus is not None
        rows.append(
            {
                "attention": v.variant,
                "KV cache per token (KiB)": v.kv_bytes_per_token / 2**10,
                "state per sequence (MiB)": v.state_bytes_per_sequence / 2**20,
                "weights (GiB)": v.weight_bytes / GIB,
                "sequences per replica": v.max_concurrency,
                "GPUs": p.gpus,
                "TP × replicas": f"{p.tp} × {p.replicas}" if fits else "none up to 8 × 256",
                "within the cap": fits and p.gpus <= ask.max_gpus,
                "output tok/s per GPU": p.output_tokens_per_s_per_gpu,
                "limited by": p.limit if fits else "—",
            }
        )
    return rows
