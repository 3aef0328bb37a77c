"""``python -m attn_core models``: every shipped preset in one line — its sizes, MLP kind and
parameter counts. A preset only transformers' build sizes (assets/models/built/) shows the sizes
its config says and the build's counts; a column its config does not say is an en dash."""

from __future__ import annotations

import json

from attn_core.cost.config_keys import ConfigError, first
from attn_core.cost.config_reader import (
    FF_KEYS,
    HEAD_DIM_KEYS,
    HEAD_KEYS,
    KV_HEAD_KEYS,
    WIDTH_KEYS,
    list_built_presets,
    list_presets,
    load_preset,
    load_preset_config,
)
from attn_core.cost.derived_records import preset_record
from attn_core.cost.model_types import unwrap_text_config
from attn_core.cost.params import model_params
from attn_core.cost.units import format_count_short

SIZE_COLUMNS = {"d_model": WIDTH_KEYS, "n_heads": HEAD_KEYS, "n_kv_heads": KV_HEAD_KEYS,
                "head_dim": HEAD_DIM_KEYS, "d_ff": FF_KEYS}  # fmt: skip


def _built_row(name: str) -> dict:
    """A preset only transformers' build sizes: its sizes as its config says them (as transformers
    completes it, where recorded), None where the config names none; its counts from the build."""
    raw = load_preset_config(name)
    rec = preset_record(name, raw) or {}
    d = rec.get("model_derived") or {}
    config = (rec.get("formulas_read") or {}).get("config") or unwrap_text_config(raw)
    sizes = {}
    for column, keys in SIZE_COLUMNS.items():
        _, value = first(config, keys)
        sizes[column] = (
            value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
        )
    return {"name": name, "attention_kind": "-", "n_layers": d.get("n_layers"), **sizes, "mlp_kind": "build",
            "params": d.get("params_total"), "active_params": d.get("params_active")}  # fmt: skip


def _cell(value: int | None, width: int) -> str:
    """A column's figure, or an en dash where the config names none (never a 0 that is not true)."""
    return f"{'–' if value is None else value:>{width}}"


def _count(value: int | None) -> str:
    return "–" if value is None else format_count_short(value, 2)


def models_rows() -> list[dict]:
    """One row per preset: its sizes (None where its config names none) and parameter counts."""
    rows = []
    for name in list_presets() + list_built_presets():
        try:
            s = load_preset(name)
        except ConfigError:  # the formulas do not cover it: its recorded build gives the counts
            rows.append(_built_row(name))
            continue
        p = model_params(s)
        rows.append(s.summary() | {"name": name, "params": p.total, "active_params": p.active})
    return rows


def models_text(as_json: bool = False) -> str:
    """The presets as a table (or JSON rows)."""
    rows = models_rows()
    if as_json:
        return json.dumps(rows, indent=2)
    w = max(len(r["name"]) for r in rows) + 2  # the longest name sets the column: every row lines up
    k = max(len(r["attention_kind"]) for r in rows) + 1
    header = f"{'name':<{w}}{'kind':<{k}}{'L':>4}{'d':>7}{'h':>4}{'H_kv':>5}{'d_h':>5}{'d_ff':>7}  {'mlp':<6} {'params':>7} {'active':>7}"
    body = [
        f"{r['name']:<{w}}{r['attention_kind']:<{k}}{_cell(r['n_layers'], 4)}{_cell(r['d_model'], 7)}"
        f"{_cell(r['n_heads'], 4)}{_cell(r['n_kv_heads'], 5)}{_cell(r['head_dim'], 5)}{_cell(r['d_ff'], 7)}"
        f"  {r['mlp_kind']:<6} {_count(r['params']):>7} {_count(r['active_params']):>7}"
        for r in rows
    ]
    return "\n".join([header, *body])
