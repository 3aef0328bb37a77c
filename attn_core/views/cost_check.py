"""The Cost page's check of its formulas against transformers' own build of the model: agreement,
or each part that differs with both figures (never silent), and the model-derived figures where
the formulas do not cover the model. A preset's check is recorded (assets/derived/presets.json, no
torch); a pasted or uploaded config is built on the meta device in a bounded child process
(`attn_core.anatomy.runner`): the page asks where it stands and never waits on it, so the formulas'
figures show at once, the build's check beside them once it ends."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from attn_core.anatomy import runner
from attn_core.cost.config_keys import ConfigError
from attn_core.cost.config_reader import (
    MAX_CONFIG_BYTES,
    from_hf_config,
    load_preset_config,
    parse_config_bytes,
    parse_config_text,
    read_config_json,
)
from attn_core.cost.derived_records import NO_TYPE, buildable_type, preset_record, recorded_cache_bytes
from attn_core.cost.inputs import Hardware, Precision
from attn_core.cost.model_shape import ModelShape
from attn_core.cost.type_facts import TypeFacts
from attn_core.cost.units import format_bytes, format_count_short

Table = dict[str, list]


@dataclass(frozen=True)
class CheckView:
    status: str  # "agrees", "differs", "uncovered" (the build is the answer), "unchecked", "pending", "busy"
    headline: str
    differences: Table = field(default_factory=dict)  # part, formula, build, difference
    derived: Table = field(default_factory=dict)  # the build's figures, when the formulas do not cover it
    notes: tuple[str, ...] = ()


def _derived_rows(d: dict[str, Any], T: int, batch: int) -> dict[str, list[str]]:
    """A model the formulas do not cover: its build's figures alone (parameters by part, then the
    totals, the cache per token, the fixed state and the cache at T, B)."""
    at_T = None if d.get("cache_unread") else recorded_cache_bytes(d, T, batch)
    rows = {"figure": [], "value": []}
    for part, n in d["params_by_part"].items():
        rows["figure"].append(f"parameters: {part}")
        rows["value"].append(f"{n:,}")
    rows["figure"] += [
        "parameters: total",
        "parameters: active per token",
        "cache per token (bf16)",
        "fixed state per sequence",
        f"cache at T = {T:,}, B = {batch:,}",
    ]
    rows["value"] += [
        f"{d['params_total']:,} ({format_count_short(d['params_total'], 2)})",
        f"{d['params_active']:,} ({format_count_short(d['params_active'], 2)})",
        f"{d['cache_bytes_per_token']:,} B ({format_bytes(d['cache_bytes_per_token'])})",
        f"{d['fixed_state_bytes']:,} B ({format_bytes(d['fixed_state_bytes'])})",
        "not read" if at_T is None else f"{at_T:,} B ({format_bytes(at_T)})",
    ]
    return rows


def _view(rec: dict[str, Any] | None, T: int, batch: int, recorded: bool) -> CheckView:
    how = "recorded, " if recorded else ""
    if rec is None:
        return CheckView("unchecked", "Not checked against transformers' build: no record for this config.")
    d = rec.get("model_derived")
    if d is None:
        return CheckView(
            "unchecked",
            f"Not checked against transformers: {rec['refused']}. Figures from the formulas alone.",
        )
    built = f"transformers {d['transformers_version']}'s own build ({d['class']}, {how}meta device)"
    notes = (f"Its cache is not read: {d['cache_unread']}.",) if d.get("cache_unread") else ()
    if rec.get("analytic_error"):
        return CheckView(
            "uncovered",
            f"The formulas do not cover this model ({rec['analytic_error']}). Every figure below is from "
            f"{built}; a sliding layer keeps W − 1 tokens (transformers' dynamic cache).",
            derived=_derived_rows(d, T, batch),
            notes=notes,
        )
    conventions = [d for d in rec["differences"] if d.get("convention")]
    notes = [
        *notes,
        *(
            f"{d['what']}: the formula gives {d['analytic']:,}, transformers' build {d['derived']:,} "
            f"{d['unit']}. Counted differently on purpose: {d['convention']}."
            for d in conventions
        ),
    ]
    if rec["agrees"]:
        flops = (rec.get("model_derived") or {}).get("flops")
        what = "parameters, cache per token and fixed state" + (", and FLOPs" if flops else "")
        but = " (but for the FLOPs noted below, counted another way)" if conventions else ""
        return CheckView("agrees", f"Checked against {built}: {what} agree to the unit{but}.", notes=notes)
    rows = {"figure": [], "formula": [], "transformers' build": [], "difference": []}
    for diff in (d for d in rec["differences"] if not d.get("convention")):
        rows["figure"].append(diff["what"])
        rows["formula"].append(f"{diff['analytic']:,} {diff['unit']}")
        rows["transformers' build"].append(f"{diff['derived']:,} {diff['unit']}")
        rel = (diff["analytic"] - diff["derived"]) / diff["derived"] if diff["derived"] else None
        rows["difference"].append("none in the model" if rel is None else f"{rel:+.2%}")
    return CheckView(
        "differs",
        f"The formulas differ from {built}: the parts below are not covered by the formula, and the "
        "build's figures are the model's.",
        differences=rows,
        notes=notes,
    )


def for_preset(name: str, T: int, batch: int) -> CheckView:
    """A preset's recorded check (no torch)."""
    return _view(preset_record(name, load_preset_config(name)), T, batch, recorded=True)


def for_config(text: str, T: int, batch: int, wait_s: float = 0.0) -> CheckView:
    """A pasted or uploaded config's check against its meta build in a child process, as it stands
    after at most ``wait_s`` seconds: its view once done; "pending" while it runs; "busy" when
    every build slot of the server is held; "unchecked" with the one line where it failed."""
    try:
        config = read_config_json(text)
    except (json.JSONDecodeError, RecursionError):
        return CheckView("unchecked", "Not checked against transformers' build: not valid JSON.")
    if buildable_type(config) is None:  # nothing to build
        return CheckView("unchecked", f"Not checked against transformers' build: {NO_TYPE}.")
    outcome = runner.wait(config, wait_s) if wait_s > 0 else runner.poll(config)
    if outcome.status == "pending":
        return CheckView(
            "pending",
            "Checking against transformers' build of this config (on the meta device, in a separate "
            f"process stopped after {runner.BUILD_SECONDS:g} s); the figures below are the formulas'.",
        )
    if outcome.status == "busy":
        return CheckView("busy", f"Not checked yet: {outcome.line}.")
    if outcome.status == "failed":
        return CheckView(
            "unchecked",
            f"Not checked against transformers' build: {outcome.line}. Figures from the formulas alone.",
        )
    return _view(outcome.record, T, batch, recorded=False)


def config_of(preset: str | None, text: str | None) -> dict[str, Any] | None:
    """The config.json the page sized, as a dict: a preset's, or the uploaded or pasted text's;
    None when there is none or the text is not a JSON object (the check then builds the lab's
    layers from the formulas' reading, and says why)."""
    if preset is not None:
        return load_preset_config(preset)
    try:
        config = read_config_json(text) if text else None
    except (json.JSONDecodeError, RecursionError):
        return None
    return config if isinstance(config, dict) else None


def shape_of_config(raw: bytes | str) -> ModelShape:
    """A pasted or uploaded config's shape as the formulas read it: where its build check is done,
    as they read it there (the config as transformers completes it, so an absent key means what
    its class means, and the facts its build shows); until then, and where nothing is built, from
    the config alone. Never waits on the build (`runner.poll` starts it). ConfigError when the
    formulas do not read it (the check then shows the build's figures)."""
    read = parse_config_bytes if isinstance(raw, bytes) else parse_config_text
    try:
        alone, error = read(raw), None
    except ConfigError as exc:
        alone, error = None, exc
    too_big = isinstance(raw, bytes) and len(raw) > MAX_CONFIG_BYTES
    try:
        config = None if too_big else read_config_json(config_text(raw))
    except (json.JSONDecodeError, RecursionError):
        config = None
    outcome = None if buildable_type(config) is None else runner.poll(config)
    if outcome is None or outcome.status != "done":  # nothing built (yet): the config alone
        if error is not None and outcome is not None and outcome.status == "pending":
            raise ConfigError(f"{error}{PENDING_NOTE}")
        if error is not None:
            raise error
        return alone
    shape = shape_of_record(config, outcome.record)
    if shape is not None:
        return shape
    if outcome.record.get("model_derived") is None and alone is not None:  # transformers refuses it
        return alone
    why = outcome.record.get("analytic_error") or str(error)
    raise (ConfigError if outcome.record.get("model_derived") is None else BuildSized)(why)


class BuildSized(ConfigError):
    """The formulas do not read the config, and transformers' build sized it: not the user's to fix
    (the page shows the build's figures), only why the formulas' sections are absent."""


PENDING_NOTE = (
    " (transformers' build of it, which may complete it, is still running: the page updates when it ends)"
)


def shape_of_record(config: dict[str, Any], record: dict[str, Any]) -> ModelShape | None:
    """The shape the formulas read where the build ran (`anatomy.compare.formulas_input`: the
    completed config and the build's facts, as the check's record carries them); None where they
    did not read it."""
    read = record.get("formulas_read")
    if read is None or record.get("analytic_error"):
        return None
    try:
        return from_hf_config(
            read["config"], name=config.get("_name_or_path"), facts=TypeFacts.from_json(read["facts"])
        )
    except ConfigError:
        return None


def config_text(raw: bytes | str) -> str:
    """An uploaded or pasted config as text, for the check against transformers' build."""
    return raw.decode("utf-8-sig", "replace") if isinstance(raw, bytes) else raw


def build_on_gpu(text: str, hardware: Hardware, precision: Precision, T: int) -> list[dict[str, str]] | None:
    """A config only transformers' build sizes, on the page's GPUs (`attn_core.anatomy.gpu_text`:
    weights, sequences of T that fit, decode and prefill bounds from the build's counts); None until
    its build is done, or where it built nothing. ValueError for a compute format without a peak."""
    from attn_core.anatomy.gpu_text import gpu_rows, on_gpu

    config = config_of(None, text)
    outcome = None if buildable_type(config) is None else runner.poll(config)
    if outcome is None or outcome.status != "done" or outcome.record.get("model_derived") is None:
        return None
    derived = outcome.record["model_derived"]
    return gpu_rows(on_gpu(derived, hardware.gpu, hardware.n_gpus, precision, T))
