"""What the Cost calculator page shows, computed from one report (cards 9, 11–14): `view()`, the
page's one call, its sections (each drawn on first use) and the sidebar's choices. The tables and
text come from `attn_core.views.costs_text`, the Whole-model section from `costs_whole`.
Numpy only, like the cost model.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from attn_core.cost import score_memory
from attn_core.cost.calibrated import CalibratedTiming, calibrated_timing
from attn_core.cost.calibration import CalibrationError
from attn_core.cost.config_keys import ConfigError
from attn_core.cost.config_reader import ModelShape, list_built_presets
from attn_core.cost.config_reader import list_presets as list_presets
from attn_core.cost.config_reader import load_preset as load_preset
from attn_core.cost.config_reader import parse_config_bytes as parse_config_bytes
from attn_core.cost.config_reader import parse_config_text as parse_config_text
from attn_core.cost.dtypes import DTYPE_BYTES, WEIGHT_BITS
from attn_core.cost.flops import crossover_seq_len, layer_flops
from attn_core.cost.gpus import list_gpus as list_gpus
from attn_core.cost.gpus import load_gpu as load_gpu
from attn_core.cost.inputs import Hardware as Hardware
from attn_core.cost.inputs import Precision as Precision
from attn_core.cost.inputs import Workload as Workload
from attn_core.cost.limits import MAX_BATCH as MAX_BATCH
from attn_core.cost.limits import MAX_CONFIG_CHARS as MAX_CONFIG_CHARS
from attn_core.cost.limits import MAX_GEN_LEN as MAX_GEN_LEN
from attn_core.cost.limits import MAX_GPUS as MAX_GPUS
from attn_core.cost.limits import MAX_SEQ_LEN as MAX_SEQ_LEN
from attn_core.cost.report import CostReport, CostSweep, cost_report, cost_sweep, sweep_grid
from attn_core.cost.serving import kv_cache_bytes, serving_capacity
from attn_core.cost.units import format_bytes, format_bytes_binary, format_flops
from attn_core.views import calibrations as calibration_view
from attn_core.views import costs_card as card_view
from attn_core.views import costs_text as text_view
from attn_core.views import costs_whole as whole_view
from attn_core.views.calibrations import SERVER, SERVER_ID, Calibrations
from attn_core.views.cost_check import BuildSized as BuildSized
from attn_core.views.cost_check import build_on_gpu as build_on_gpu
from attn_core.views.cost_check import config_text as config_text
from attn_core.views.cost_check import shape_of_config as shape_of_config


def all_presets() -> list[str]:
    """The presets the formulas read, then those only transformers' build sizes (assets/models/built/)."""
    return list_presets() + list_built_presets()


def shape_of_preset(name: str) -> ModelShape | None:
    """A preset's shape; None for one the formulas do not cover (the page shows its recorded build)."""
    try:
        return load_preset(name)
    except ConfigError:
        return None


DTYPES = list(DTYPE_BYTES)  # the sidebar's dtypes, fp16 (the default) first
WEIGHT_DTYPES = list(WEIGHT_BITS)  # and the quantized weight formats (int4 with group scales, MXFP4)


# -- The page's one call ---------------------------------------------------------------------
@dataclass(frozen=True)
class Chart:
    """One chart's data: x over T, named series, and its marks (label at x or y)."""

    x: np.ndarray
    series: dict[str, np.ndarray]
    title: str
    x_marks: list[tuple[float | None, str]]
    y_marks: list[tuple[float, str]] = field(default_factory=list)
    overlay: dict[str, np.ndarray] = field(default_factory=dict)


Table = dict[str, list]  # {column: values}, units written into the values
Metric = tuple[str, str, str]  # (label, value, what it means)


@dataclass(frozen=True)
class WholeSection:
    params_chart: tuple[list[str], list[int], list[int]]  # (part, total, active)
    params: Table
    notes: list[str]
    ledger_title: str
    ledger: Table
    memory: tuple[np.ndarray, dict[str, np.ndarray], int] | None  # a hybrid's memory vs T: (x, series, T)
    prefill_title: str
    prefill: Table
    prefill_note: str
    times_title: str
    times: Table
    times_caption: str
    calibrated_caption: str | None  # the formula and the rates, when a calibration applies
    calibration_hint: str | None  # how to get one, or why the one at hand does not apply
    calibration_problems: tuple[str, ...]  # recorded runs that could not be read, by name
    checks: list[tuple[str, float]]  # (independent route, |Δ|)


@dataclass(frozen=True)
class FlopsSection:
    title: str
    table: Table
    caption: str
    chart: Chart


@dataclass(frozen=True)
class KVSection:
    chart: Chart
    warning: str | None
    mla: bool  # MLA: no MHA/GQA/MQA comparison
    variants_title: str
    variants: Table | None


@dataclass(frozen=True)
class ServingSection:
    metrics: list[Metric]
    sum: str
    verdict: str
    gpus_title: str
    gpus: Table


@dataclass(frozen=True)
class ScoresSection:
    metrics: list[Metric]
    chart: Chart
    caption: str


@dataclass(frozen=True)
class CostView:
    """Everything the Cost page draws for one what-if: the card and headline at once, each section
    on first use (so a section that cannot be drawn fails alone, under the page's safety net)."""

    report: CostReport
    card: str
    extras: str
    strip: list[str] | None  # each layer's kind, or None for very deep models
    warnings: list[str]
    headline: list[tuple[str, str, str]]
    conventions: str
    calibrated: CalibratedTiming | None = None  # the time bounds at a bench run's attained rates
    calibration_hint: str | None = None
    calibration_problems: tuple[str, ...] = ()

    @functools.cached_property
    def _sweep(self) -> tuple[np.ndarray, CostSweep, float | None, float | None]:
        r = self.report
        T_full, T_causal = crossover_seq_len(r.model), crossover_seq_len(r.model, causal=True)
        grid = sweep_grid(r.seq_len, extra=(T_full, T_causal))
        return grid, cost_sweep(r.model, grid, r.batch, r.precision.b, r.precision.b_kv), T_full, T_causal

    def sweep_columns(self, group: str) -> dict[str, np.ndarray]:
        """A chart's numbers over T ('flops', 'kv' or 'scores'), for its table and CSV."""
        return self._sweep[1].columns(group)

    @functools.cached_property
    def whole(self) -> WholeSection:
        r, s = self.report, self.report.model
        T, B, p = r.seq_len, r.batch, r.precision
        parts, total, active = whole_view.param_parts(r)
        grid = self._sweep[0]
        t = r.timing
        rows, note = whole_view.prefill_rows(r)
        c = self.calibrated
        return WholeSection(
            params_chart=(parts, total, active),
            params=whole_view.params_rows(r),
            notes=whole_view.architecture_notes(s),
            ledger_title=f"**Ledger by layer kind** at T = {T:,}, B = {B} (cache {p.kv}, state {p.state})",
            ledger=whole_view.layer_type_rows(s, T, p.b_kv, B, p.b_state, r.causal),
            memory=(grid, whole_view.memory_series(r, grid), T) if s.is_hybrid else None,
            prefill_title=f"**Prefill FLOPs, whole model, {B} × {T:,} tokens "
            f"({'causal' if r.causal else 'all pairs'})**",
            prefill=rows,
            prefill_note=note,
            times_title=f"**Time on {r.n_gpus} × {r.gpu.label}**, "
            f"{'its measured peaks' if r.gpu.name == SERVER_ID else t.prefill_time.roofline.compute + ' dense peak'}"
            ", perfect tensor parallelism",
            times=whole_view.times_rows(t, c),
            times_caption=whole_view.times_caption(t),
            calibrated_caption=None if c is None else whole_view.calibrated_caption(c),
            calibration_hint=self.calibration_hint,
            calibration_problems=self.calibration_problems,
            checks=whole_view.whole_checks(r),
        )

    @functools.cached_property
    def flops(self) -> FlopsSection:
        r = self.report
        T, B = r.seq_len, r.batch
        grid, sweep, T_full, T_causal = self._sweep
        table, caption = text_view.flops_table(r.model, T, B)
        shown, other = (sweep.causal, sweep.full) if r.causal else (sweep.full, sweep.causal)
        other_name = "all pairs" if r.causal else "causal"
        chart = Chart(
            grid,
            {"projections": shown.projections, "MLP": shown.mlp, "attention": shown.attention},
            f"Where a layer's FLOPs go ({'causal' if r.causal else 'all pairs'}; "
            f"dashed: attention, {other_name})",
            [
                (T_full, "T* never" if T_full is None else f"T* = {T_full:,.0f}"),
                (T_causal, "T* causal never" if T_causal is None else f"T* causal = {T_causal:,.0f}"),
                (T, f"T = {T:,}"),
            ],
            overlay={f"attention share, {other_name}": 100 * other.attention_share},
        )
        title = f"**FLOPs of one layer's forward pass, {B} sequence(s) of {T:,} tokens**"
        return FlopsSection(title, table, caption, chart)

    @functools.cached_property
    def kv(self) -> KVSection:
        r, s = self.report, self.report.model
        grid, sweep = self._sweep[0], self._sweep[1]
        free, memory_ = r.serving.free_bytes, r.serving.memory_bytes
        chart = Chart(
            grid,
            {f"KV cache, B = {r.batch} ({r.kv_dtype})": sweep.kv_cache_bytes / 2**30},
            "KV cache vs T, with GPU memory",
            [
                (r.seq_len, f"T = {r.seq_len:,}"),
                (s.sliding_window, "window full"),
                (s.attention_chunk_size, "chunk full"),
            ],
            [
                (memory_ / 2**30, f"{r.n_gpus} × {r.gpu.label}: {format_bytes(memory_)}"),
                (free / 2**30, f"left after weights: {format_bytes_binary(max(free, 0))}"),
            ],
        )
        too_big = free <= 0
        return KVSection(
            chart=chart,
            warning=f"The {format_bytes(r.weight_bytes)} of weights alone exceed {format_bytes(memory_)}."
            if too_big
            else None,
            mla=s.mla is not None,
            variants_title=f"**MHA vs GQA vs MQA for {s.name}** — same query heads, same weights, "
            "only H_kv changes",
            variants=None if s.mla is not None else text_view.variants_table(r),
        )

    @functools.cached_property
    def serving(self) -> ServingSection:
        r = self.report
        return ServingSection(
            metrics=text_view.serving_metrics(r),
            sum=text_view.serving_sum(r),
            verdict=text_view.decode_verdict(r),
            gpus_title=f"**Every GPU preset, {r.n_gpus} of each**",
            gpus=text_view.gpu_table(r),
        )

    @functools.cached_property
    def scores(self) -> ScoresSection:
        r, s = self.report, self.report.model
        grid, sweep = self._sweep[0], self._sweep[1]
        bill = score_memory.model_memory_bill(s, r.seq_len, r.precision.b, r.batch)
        chart = Chart(
            grid,
            {
                "naive: keep P (B·h·T²·b)": sweep.score_bytes_naive_per_layer / 2**30,
                "online: one fp32 logsumexp per row (B·h·T·4)": sweep.score_bytes_online_per_layer / 2**30,
            },
            "Score memory per layer vs T (training keeps it for the backward pass)",
            [(r.seq_len, f"T = {r.seq_len:,}")],
        )
        caption = (
            "The online softmax rebuilds P in the backward pass from one logsumexp per row, at the price of "
            f"2T²d = {format_flops(bill.recompute_flops_per_layer)} more FLOPs per layer: "
            "more FLOPs, far fewer bytes."
        )
        return ScoresSection(text_view.score_metrics(s, bill), chart, caption)

    @functools.cached_property
    def how_its_asked(self) -> list[tuple[str, str]]:
        return text_view.how_its_asked(self.report)


def calibrations() -> Calibrations:
    """This server's Kernels sweep and the recorded GPU runs (`attn_core.views.calibrations`)."""
    return calibration_view.available()


def hardware_choices(cals: Calibrations) -> list[str]:
    """The GPU presets, and SERVER once this server's CPU has a Kernels sweep to stand on."""
    return [*list_gpus(), *([SERVER] if cals.has_server_cpu else [])]


HARDWARE_IDS = {SERVER: SERVER_ID}  # what a link carries for the server choice


def hardware(choice: str, n_gpus: int, cals: Calibrations) -> Hardware:
    """A hardware choice as the cost model's input: a preset, or this server with its measured peaks."""
    if choice == SERVER:
        server = cals.for_hardware(SERVER_ID)
        if server is None:
            raise ValueError("this server has no Kernels sweep yet: pick a GPU preset")
        return Hardware(server.as_gpu(), n_gpus)
    return Hardware(load_gpu(choice), n_gpus)


def calibrate(
    shape: ModelShape, workload: Workload, precision: Precision, hw: Hardware, cals: Calibrations
) -> tuple[CalibratedTiming | None, str | None]:
    """(the time at the run's attained rates, None) where a run calibrates ``hw``; else (None,
    one line: how to get a run, or why the one at hand does not apply)."""
    run = cals.for_hardware(hw.gpu.name)
    if run is None:
        return None, calibration_view.HINT.format(hardware=hw.gpu.label)
    try:
        return calibrated_timing(shape, workload, precision, hw, run), None
    except CalibrationError as exc:
        dtype = precision.activations
        return None, f"No calibrated column: {exc}. Pick a dtype it measured, or run the bench in {dtype}."


def view(
    shape: ModelShape,
    workload: Workload,
    precision: Precision,
    hardware: Hardware,
    preset: str | None = None,
    cals: Calibrations | None = None,
) -> CostView:
    """The Cost page's one call: the report (`attn_core.cost.report.cost_report`, the CLI's call) and
    every table and text drawn from it; with ``cals``, the time bounds at the attained rates of the
    bench run for this hardware. ValueError (ConfigError included) for what cannot be sized."""
    r = cost_report(shape, workload, precision, hardware, preset)
    card, extras = card_view.model_card(r, precision.weights)
    calibrated, hint = (None, None) if cals is None else calibrate(shape, workload, precision, hardware, cals)
    return CostView(
        r,
        card,
        extras,
        whole_view.layer_cells(shape),
        card_view.warnings(r),
        card_view.headline(r),
        card_view.card_conventions(r),
        calibrated,
        hint,
        () if cals is None else cals.problems,
    )


def stated_state_dtype(shape: ModelShape | None) -> str | None:
    """The recurrent state's dtype a hybrid's config states (``mamba_ssm_cache_dtype``, read into
    ``shape.state_dtype``), as the CLI takes it when no dtype is chosen; None: the KV cache's."""
    return shape.state_dtype if shape is not None and shape.state_mixer is not None else None


CODE = (kv_cache_bytes, layer_flops, crossover_seq_len, serving_capacity)  # the page's "show the code"


class Section(StrEnum):
    """The page's sections; the value is the label shown, a link keeps the member's name, lower-cased."""

    WHOLE = "Whole model"
    FLOPS = "FLOPs"
    KV = "KV cache & GQA"
    SERVING = "Serving & decode"
    SCORES = "Score memory"
    ASKED = "How it's asked"
