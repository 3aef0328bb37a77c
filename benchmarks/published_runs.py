"""The GPU runs published by others (assets/published/runs.json), priced by the cost model, as the
Markdown table of benchmarks/RESULTS.md: one row per run with its bound, the figure as published and
the attained fraction, then the range per regime. Arithmetic only (no timing, no GPU):

    PYTHONPATH=. .venv/bin/python benchmarks/published_runs.py
"""

from __future__ import annotations

from attn_core.cost.published import band, format_figure, priced_runs
from attn_core.cost.published_rows import REGIMES
from attn_core.cost.units import format_percent


def main() -> None:
    priced = priced_runs()
    print(
        "| run | regime | model · GPUs · precision (w/KV/compute) · B, in, out | published | bound | attained |"
    )
    print("|---|---|---|---|---|---|")
    for p in priced:
        r = p.run
        lengths = "" if r.batch is None else f" · {r.batch:,}, {r.input_len:,}, {r.output_len:,}"
        given = r.replay.lengths if r.replay is not None else None
        if r.batch is None and given is not None:  # a varying-length run: the means its figures give
            lengths = f" · mean in {given.mean_input:,.0f}, out {given.mean_output:,.0f}"
        gpus = f"{r.n_gpus} × {r.gpu_preset}" if r.n_gpus > 1 else r.gpu_preset
        setup = f"{r.model} · {gpus} · {r.weights}/{r.kv}/{r.compute}{lengths}"
        sign = "≥" if p.unit == "ms" else "≤"
        got = format_percent(p.attained) if p.attained is not None else f"— {p.defect}"
        print(
            f"| `{r.id}` | {REGIMES[p.band]} | {setup} | {format_figure(p.measured)} {p.unit} | "
            f"{sign} {format_figure(p.bound)} {p.unit} | **{got}** |"
        )
    print()
    for regime, label in REGIMES.items():
        b = band(regime, priced)
        if b is not None:
            print(
                f"- {label}: {format_percent(b.low)} – {format_percent(b.high)} ({b.counted} of {len(b.rows)} rows)"
            )


if __name__ == "__main__":
    main()
