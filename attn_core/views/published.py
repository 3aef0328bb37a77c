"""GPU runs published by others beside the lab's bounds (``assets/published/runs.json``, priced by
`attn_core.cost.published`), for two pages:

- the Cost page: beside its decode and prefill bounds, the range of the fractions of their own
  bounds that published runs in the same regime attained, the bound ÷ that range as what to expect,
  and the rows themselves;
- the Kernels page: the published kernel rows (FlashAttention 2/3/4, cuDNN, FlashMLA) with their
  fraction of the GPU's peak.

Every title and caption says these figures were published by others, never measured by the lab.
"""

from __future__ import annotations

from dataclasses import dataclass

from attn_core.cost.published import Band, Priced, band, format_figure, priced_runs
from attn_core.cost.published_rows import REGIMES
from attn_core.cost.report import CostReport
from attn_core.cost.units import format_percent, format_seconds

Table = dict[str, list]

BY_OTHERS = "published by others, not measured by this lab"


@dataclass(frozen=True)
class CostBand:
    """What the Cost page shows beside its time bounds."""

    title: str
    lines: list[str]  # one per bound: the bound, the published range, the bound ÷ that range
    rows_title: str
    rows: Table  # the rows of the regimes shown
    caption: str


@dataclass(frozen=True)
class KernelRows:
    title: str
    rows: Table
    caption: str


def attained_text(p: Priced) -> str:
    """ "68.3%", or the defect when the run beat its bound (never a fraction above 100%)."""
    return format_percent(p.attained) if p.attained is not None else f"— {p.defect}"


def rows_table(priced: tuple[Priced, ...]) -> Table:
    """One line per run: conditions, the figure as published, the bound and the fraction attained."""
    columns: Table = {
        k: []
        for k in (
            "regime",
            "source",
            "model",
            "GPU",
            "GPUs",
            "precision (w / KV / compute)",
            "batch",
            "prompt",
            "generated",
            "framework",
            "published",
            "bound",
            "attained",
            "where",
        )
    }
    for p in priced:
        r = p.run
        values = (
            REGIMES[p.band],
            r.source,
            r.model,
            r.gpu,
            f"{r.n_gpus} ({r.parallelism})",
            f"{r.weights} / {r.kv} / {r.compute}",
            r.batch,
            r.input_len,
            r.output_len,
            f"{r.framework} {r.version}",
            r.text,
            ("≥ " if p.unit == "ms" else "≤ ") + f"{format_figure(p.bound)} {p.unit}",
            attained_text(p),
            r.where,
        )
        for column, value in zip(columns, values, strict=True):
            columns[column].append(value)
    return columns


def _line(what: str, bound_s: float | None, b: Band | None, regime: str) -> str:
    label = REGIMES[regime]
    if b is None:
        return f"**{what}**: no published {label} runs on file."
    fractions = f"{format_percent(b.low)} – {format_percent(b.high)}"
    counted = f"{b.counted} row{'s' if b.counted != 1 else ''}"
    if bound_s is None:
        return f"**{what}**: published {label} runs attained {fractions} of their bounds ({counted})."
    expect = f"{format_seconds(bound_s / b.high)} – {format_seconds(bound_s / b.low)}"
    return (
        f"**{what}**: bound {format_seconds(bound_s)}. Published {label} runs attained {fractions} of their "
        f"bounds ({counted}): at those fractions, **{expect}**."
    )


def cost_band(report: CostReport) -> CostBand:
    """The published range beside this model's decode-step and TTFT bounds. The decode regime is
    the mixture-of-experts one for an MoE model, else batch-1 or batched decode by the batch; the
    published prefill rows are all at batch 1. PublishedError if the runs file cannot be read."""
    priced = priced_runs()
    decode = "moe" if report.model.moe is not None else "decode-b1" if report.batch == 1 else "batched-decode"
    t = report.timing
    decode_s = None if t is None else t.decode_step_s * t.efficiency  # the bound, whatever η
    ttft_s = None if t is None else t.ttft_s * t.efficiency
    lines = [
        _line("Decode step", decode_s, band(decode, priced), decode),
        _line("Time to first token", ttft_s, band("prefill-b1", priced), "prefill-b1"),
    ]
    if report.batch > 1:
        lines.append(f"The published prefill rows are at batch 1; this what-if has batch {report.batch:,}.")
    shown = tuple(p for p in priced if p.band in (decode, "prefill-b1"))
    hw = report.hardware
    setup = None if hw is None else (report.model.name, hw.gpu.name, hw.n_gpus)
    same = [p for p in shown if (p.run.preset, p.run.gpu_preset, p.run.n_gpus) == setup]
    if same:
        named = "; ".join(
            f"`{p.run.id}` ({p.run.source}, {p.run.weights} weights) {attained_text(p)}" for p in same
        )
        lines.append(f"Published on this model and these GPUs: {named}.")
    return CostBand(
        title=f"**What GPU runs attained against bounds like these** ({BY_OTHERS})",
        lines=lines,
        rows_title=f"The {len(shown)} published runs behind these ranges, priced by this calculator",
        rows=rows_table(shown),
        caption=(
            "Each run's bound is this calculator's for the run's own model, GPUs, precision, batch and lengths "
            "(`python -m attn_core published` prints all of them, assets/published/runs.json holds the "
            "conditions and sources). A run faster than its bound would be a defect of the calculator or of "
            "the row and is left out of the range. Every row and this page's bounds are priced at the dense peak "
            "of their compute format (fp8 at twice the 16-bit peak on Hopper and Blackwell). The ranges "
            "describe those runs' software and hardware, not a promise for yours."
        ),
    )


def kernel_rows() -> KernelRows:
    """The published kernel rows (FA2/FA3/FA4, cuDNN, FlashMLA) with their fraction of peak."""
    priced = tuple(p for p in priced_runs() if p.band == "kernel")
    rows: Table = {
        k: []
        for k in ("kernel", "GPU", "dtype", "shape", "published", "peak", "attained", "framework", "where")
    }
    for p in priced:
        r = p.run
        values = (
            r.kernel or r.framework,
            r.gpu,
            r.compute,
            r.model,
            r.text,
            f"{format_figure(p.bound)} {p.unit}",
            attained_text(p),
            f"{r.framework} {r.version}",
            r.where,
        )
        for column, value in zip(rows, values, strict=True):
            rows[column].append(value)
    return KernelRows(
        title=f"Published kernel results ({BY_OTHERS})",
        rows=rows,
        caption=(
            "Forward attention throughput as each kernel's authors published it, beside the GPU's dense peak "
            "for its dtype (assets/gpus.json; fp8 at twice the bf16 peak on Hopper and Blackwell) and the "
            "fraction attained. FLOPs follow FlashAttention's 4·B·H·L·S·D count, halved when causal. "
            "The recorded runs above are the lab's own; these are not."
        ),
    )
