"""``python -m attn_core published [--json] [--regime R]``: the GPU runs published by others
(assets/published/runs.json), each beside the bound this cost model gives for its conditions and
the fraction of that bound it attained (`attn_core.cost.published`). Exit 2 with one line on a
bad argument or a bad file."""

from __future__ import annotations

import json
from collections.abc import Sequence

from attn_core.cost.cli import Parser, UsageError, fail
from attn_core.cost.published import Priced, band, format_figure, priced_runs
from attn_core.cost.published_rows import REGIMES, PublishedError
from attn_core.cost.units import format_percent

HEADER = (
    "GPU runs published by others (not measured by this lab), priced by this cost model: the bound is "
    "what the row's conditions allow at the datasheet peaks; attained = bound ÷ measured time "
    "(= measured ÷ bound rate)."
)


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


def row_json(p: Priced) -> dict:
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
        "replay": None if r.replay is None else dict(r.replay.__dict__),
        "held_out": r.held_out,  # kept apart to judge predictions: fit nothing on it
        "published": {"value": r.value, "unit": r.unit, "text": r.text},
        "measured": p.measured,
        "bound": p.bound,
        "unit": p.unit,
        "bound_is": "a floor" if p.unit == "ms" else "a ceiling",
        "how": p.how,
        "attained": p.attained,
        "defect": p.defect,
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


def text_report(priced: tuple[Priced, ...]) -> str:
    lines = [HEADER, ""]
    for p in priced:
        sign = "≥" if p.unit == "ms" else "≤"
        got = "—  " + p.defect if p.defect else format_percent(p.attained)
        lines += [
            f"{p.run.id}  [{REGIMES[p.band]}]  {setup(p)}",
            f"    published {p.run.text} · bound {sign} {format_figure(p.bound)} {p.unit} · measured "
            f"{format_figure(p.measured)} {p.unit} · attained {got}",
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
        doc = {"note": HEADER, "rows": [row_json(p) for p in priced], "bands": bands_json(priced)}
        print(json.dumps(doc, indent=1, ensure_ascii=False))
    else:
        print(text_report(priced))
    return 0
