"""``python -m attn_core published [--json] [--regime R]``: the GPU runs published by others
(assets/published/runs.json), each beside the bound this cost model gives for its conditions and
the fraction of that bound it attained (`attn_core.cost.published`). Exit 2 with one line on a
bad argument or a bad file."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path

from attn_core.cost.cli import Parser, UsageError, fail
from attn_core.cost.published import RUNS_FILE, Priced, band, format_figure, priced_runs
from attn_core.cost.published_rows import REGIMES, PublishedError, Run
from attn_core.cost.units import format_percent

HEADER = (
    "GPU runs published by others (not measured by this lab), priced by this cost model: the bound is "
    "what the row's conditions allow at the datasheet peaks; attained = bound ÷ measured time "
    "(= measured ÷ bound rate)."
)


FIT_FILE = RUNS_FILE.parents[1] / "derived" / "time_model.json"  # scripts/fit_time_model.py


def _replay_json(r: Run) -> dict | None:
    """The row's replay fields; ``lengths`` only where the row derives them."""
    if r.replay is None:
        return None
    doc = dataclasses.asdict(r.replay)
    return doc if doc["lengths"] is not None else {k: v for k, v in doc.items() if k != "lengths"}


def fit_records(path: Path = FIT_FILE) -> dict[str, dict]:
    """Each row's record in the serving fit (``assets/derived/time_model.json``), by id: the
    simulated prediction and its errors, or why the row was not replayed; {} without the file."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    out = {r["id"]: r for r in doc.get("rows", [])}
    out |= {s["id"]: {"not_replayed": s["why"]} for s in doc.get("skipped", [])}
    return out


def simulated_json(record: dict | None) -> dict:
    """A row's serving-simulation fields: ``prediction`` (the replayed figure in the row's unit, at
    the fitted coefficients), ``log_error`` (log(measured time / predicted time) in the fit) and
    ``loso_error`` (the same with the row's whole source left out of the fit), or ``not_replayed``."""
    if record is None:
        return {
            "prediction": None,
            "log_error": None,
            "loso_error": None,
            "not_replayed": "not in the fit file",
            "slo_met": None,
        }
    if "not_replayed" in record:
        return {
            "prediction": None,
            "log_error": None,
            "loso_error": None,
            "not_replayed": record["not_replayed"],
            "slo_met": None,
        }
    return {
        "prediction": record["predicted"],
        "log_error": record["log_error"],
        "loso_error": record["log_error_left_out"],
        "not_replayed": None,
        "slo_met": record.get("slo_met"),  # the simulated p99s within the row's SLO (None: no SLO)
    }


def setup(p: Priced) -> str:
    """Model · GPUs · precision · batch, lengths · framework version, in one line."""
    r = p.run
    lengths = "" if r.input_len is None else f" · in {r.input_len:,}, out {r.output_len:,}"
    if r.batch is not None:
        lengths = f" · B {r.batch:,}" + lengths.replace(" · ", ", ")
    elif r.concurrency is not None:
        lengths = f" · up to {r.concurrency:,} in flight" + lengths.replace(" · ", ", ")
    gpus = f"{r.n_gpus} × {r.gpu}" if r.n_gpus > 1 else r.gpu
    precision = f"weights {r.weights}, KV {r.kv}, compute {r.compute}"
    return f"{r.model} · {gpus} ({r.parallelism}) · {precision}{lengths} · {r.framework} {r.version}"


def row_json(p: Priced, record: dict | None = None) -> dict:
    """One priced row as JSON, with its serving-fit record's fields (`simulated_json`)."""
    r = p.run
    return {
        "id": r.id,
        "source": r.source,
        "where": r.where,
        "regime": p.band,
        "method": r.method,
        "model": r.model,
        "preset": r.preset,
        "kernel": r.kernel,
        "gpu": r.gpu,
        "gpu_preset": r.gpu_preset,
        "n_gpus": r.n_gpus,
        "parallelism": r.parallelism,
        "precision": {"weights": r.weights, "kv": r.kv, "compute": r.compute},
        "batch": r.batch,
        "input_len": r.input_len,
        "output_len": r.output_len,
        "framework": r.framework,
        "version": r.version,
        "scenario": r.scenario,  # what a serving simulator replays (published_rows.SCENARIOS)
        "metric": r.metric,
        "concurrency": r.concurrency,
        "replay": _replay_json(r),
        "held_out": r.held_out,  # kept apart to judge predictions: fit nothing on it
        "published": {"value": r.value, "unit": r.unit, "text": r.text},
        "measured": p.measured,
        "bound": p.bound,
        "unit": p.unit,
        "bound_is": "a floor" if p.unit == "ms" else "a ceiling",
        "how": p.how,
        "attained": p.attained,
        "defect": p.defect,
        **simulated_json(record),
    }


def bands_json(priced: tuple[Priced, ...]) -> dict:
    out = {}
    for regime, label in REGIMES.items():
        b = band(regime, priced)
        if b is not None:
            out[regime] = {
                "label": label,
                "low": b.low,
                "high": b.high,
                "rows": len(b.rows),
                "counted": b.counted,
            }
    return out


def simulated_line(record: dict | None) -> str:
    """The serving simulation's figure for a row and its left-out error, in words."""
    sim = simulated_json(record)
    if sim["prediction"] is None:
        return f"    serving simulation: not replayed ({sim['not_replayed']})"
    unit = record.get("unit", "")
    return (
        f"    serving simulation: {format_figure(sim['prediction'])} {unit} · with its source left out "
        f"of the fit, measured time = {math.exp(sim['loso_error']):.2f} × the predicted"
    )


def text_report(priced: tuple[Priced, ...]) -> str:
    lines = [HEADER, ""]
    fitted = fit_records()
    for p in priced:
        sign = "≥" if p.unit == "ms" else "≤"
        got = "—  " + p.defect if p.defect else format_percent(p.attained)
        lines += [
            f"{p.run.id}  [{REGIMES[p.band]}]  {setup(p)}",
            f"    published {p.run.text} · bound {sign} {format_figure(p.bound)} {p.unit} · measured "
            f"{format_figure(p.measured)} {p.unit} · attained {got}",
            simulated_line(fitted.get(p.run.id)),
        ]
    lines += ["", "Attained fraction of the bound, by regime (rows that beat their bound left out):"]
    for b in bands_json(priced).values():
        lines.append(
            f"    {b['label']}: {format_percent(b['low'])} – {format_percent(b['high'])} "
            f"({b['counted']} of {b['rows']} rows)"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (0 ok, 2 a bad argument or a bad runs file)."""
    parser = Parser(prog="python -m attn_core published", description=HEADER)
    parser.add_argument("--regime", choices=list(REGIMES), help="only the rows of one regime")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    try:
        args = parser.parse_args(argv)
        priced = priced_runs()
    except (UsageError, PublishedError, ValueError) as exc:
        return fail(str(exc))
    if args.regime:
        priced = tuple(p for p in priced if p.band == args.regime)
    if args.json:
        fitted = fit_records()
        rows = [row_json(p, fitted.get(p.run.id)) for p in priced]
        doc = {"note": HEADER, "rows": rows, "bands": bands_json(priced)}
        print(json.dumps(doc, indent=1, ensure_ascii=False))
    else:
        print(text_report(priced))
    return 0
