"""The model-derived figures of the shipped presets, recorded (``assets/derived/presets.json``,
written by ``scripts/derive_presets.py`` from transformers' own build on the meta device), so
that a preset is checked without importing torch. Each record carries its config's content key:
a preset edited since its record was written has no record (and says so) rather than a stale one.
`tests/anatomy/test_anatomy.py` holds the records against a fresh derivation."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

RECORDS_FILE = Path(__file__).resolve().parents[2] / "assets" / "derived" / "presets.json"


NO_TYPE = "the config names no 'model_type', so transformers cannot tell which class reads it"


def buildable_type(config: Any) -> str | None:
    """The model_type transformers would read (top level, or the text config's); None if none,
    in which case nothing can be built and torch need not be imported to say so."""
    if not isinstance(config, dict):
        return None
    for part in (config, config.get("text_config")):
        if isinstance(part, dict) and isinstance(part.get("model_type"), str) and part["model_type"]:
            return part["model_type"]
    return None


def config_key(config: Any) -> str:
    """The config's content as one canonical string (the same key the model-derived path caches by)."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)


@functools.cache
def _records() -> dict[str, Any]:
    if not RECORDS_FILE.is_file():
        return {}
    return json.loads(RECORDS_FILE.read_text())


def preset_record(name: str, config: Any) -> dict[str, Any] | None:
    """The recorded check of a preset (``Check.to_json()`` plus its config key), or None when
    none was recorded for this exact config."""
    rec = _records().get(name)
    if rec is None or rec.get("config_key") != config_key(config):
        return None
    return rec


def record_lines(rec: dict[str, Any] | None) -> list[str]:
    """The check in a few lines for the CLI and the page."""
    if rec is None:
        return [
            "Not checked against transformers' build: no record for this config (scripts/derive_presets.py writes them)"
        ]
    d = rec.get("model_derived")
    if d is None:
        return [f"Not checked against transformers: {rec.get('refused')}; figures from the formulas alone"]
    head = f"Checked against transformers' own build ({d['class']}, transformers {d['transformers_version']}, meta device, recorded)"
    if rec["agrees"]:
        return [head + ": parameters, cache per token and fixed state agree to the unit"]
    out = [head + ": THE FORMULA DIFFERS"]
    for diff in rec["differences"]:
        out.append(f"  {diff['what']}: the formula gives {diff['analytic']:,} {diff['unit']}, the build "
                   f"{diff['derived']:,}; the formula does not cover this part")  # fmt: skip
    return out


def recorded_cache_bytes(derived: dict[str, Any], T: int, batch: int = 1) -> int:
    """The cache after T tokens for B sequences from a record's layer groups (transformers'
    dynamic cache: a sliding layer keeps min(T, W − 1) tokens), plus the fixed state."""
    per_seq = 0
    for g in derived["layer_groups"]:
        kept = T if g["window"] is None else min(T, g["window"] - 1)
        per_seq += g["count"] * (g["cache_bytes_per_token"] * kept + g["fixed_bytes"])
    return batch * per_seq


# The top-level figures of every `cost --json` answer, whichever sized the model (`sized_by`).
ANSWER_KEYS = ("params", "active_params", "kv_cache_bytes_per_token", "kv_cache_bytes", "state_bytes",
               "state_bytes_per_sequence", "prefill_flops")  # fmt: skip


def mtp_answer(layers: int, per_layer: int | None) -> dict[str, Any]:
    """The MTP keys of every answer: the next-token-prediction layers the config declares
    (`config_keys.MTP_KEYS`), one's parameters (None where not sized), and that ``params`` leaves
    them out — transformers builds them beside the model (`MtpModel`), never in it."""
    return {
        "nextn_layers_left_out": layers,
        "mtp_params_per_layer": per_layer if layers else None,
        "mtp_in_params": False,
    }


def build_answer(
    derived: dict[str, Any], T: int, batch: int, mtp: dict[str, Any] | None = None
) -> dict[str, Any]:
    """ANSWER_KEYS from a build's record (`Anatomy.to_json`), as the formulas' report names them:
    the cache at T for B sequences without the fixed state (which is ``state_bytes``), in bf16;
    None where the build did not read it. ``prefill_flops`` is None: the build counts a short
    prefill only (its record's ``flops``), not one of T tokens. ``mtp``: `mtp_answer` (none)."""
    unread = derived.get("cache_unread") is not None
    fixed = derived["fixed_state_bytes"]
    return (mtp or mtp_answer(0, None)) | {
        "sized_by": "build",
        "params": derived["params_total"],
        "active_params": derived["params_active"],
        "kv_cache_bytes_per_token": None if unread else derived["cache_bytes_per_token"],
        "kv_cache_bytes": None if unread else recorded_cache_bytes(derived, T, batch) - batch * fixed,
        "state_bytes": None if unread else batch * fixed,
        "state_bytes_per_sequence": None if unread else fixed,
        "prefill_flops": None,
    }


def build_headline(
    answer: dict[str, Any],
    record: dict[str, Any] | None,
    T: int,
    batch: int,
    kv_bytes: int = 2,
    state_set: bool = False,
    mtp: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The formulas' ``answer`` with transformers' build as its headline, where there is a build
    (``record``: a check's record with ``model_derived``): the top-level figures the build gives
    become the build's, ``sized_by`` "build", and the formulas' own under ``formulas``, beside
    (they differ where the formulas misread a config, or count a buffer as a parameter).

    The build's cache is in bf16: at ``kv_bytes`` per value it is that × kv_bytes / 2 (every cached
    key and value at one dtype). Its state is at the dtypes transformers keeps it in, so it stands
    only at a 16-bit cache with the state's dtype left as the config states (``state_set`` False);
    otherwise the formulas' state, at the dtypes asked for, stands. ``prefill_flops`` stays the
    formulas': the build counts a short prefill only. ``mtp`` (`mtp_answer` of the build's MTP
    layers), where given, replaces the formulas' MTP keys."""
    derived = (record or {}).get("model_derived")
    if derived is None:
        return answer
    built = build_answer(derived, T, batch)
    for key in ("kv_cache_bytes_per_token", "kv_cache_bytes"):
        if built[key] is not None:
            built[key] = built[key] * kv_bytes // 2
    skip = {"prefill_flops"}
    if kv_bytes != 2 or state_set:
        skip |= {"state_bytes", "state_bytes_per_sequence"}
    figures = {k: built[k] for k in ANSWER_KEYS if built[k] is not None and k not in skip}
    formulas = {k: answer.get(k) for k in ANSWER_KEYS}
    return answer | figures | (mtp or {}) | {"sized_by": "build", "formulas": formulas}


def derived_only_lines(name: str, reason: str, rec: dict[str, Any] | None, T: int, batch: int) -> list[str]:
    """A preset the formulas do not cover, answered from its recorded build (no torch)."""
    if rec is None or rec.get("model_derived") is None:
        return []
    d = rec["model_derived"]
    at_T = recorded_cache_bytes(d, T, batch)
    return [
        f"{name}: {d['model_type']}, built by transformers {d['transformers_version']} as {d['class']} "
        f"(meta device, recorded), {d['n_layers']} layers",
        f"the formulas do not cover this model ({reason}): every figure below is from transformers' build",
        "",
        f"Parameters  total {d['params_total']:,}, active per token {d['params_active']:,}",
        *(f"  {part:<16}{n:>22,}" for part, n in d["params_by_part"].items()),
        "Cache (bf16, transformers' dynamic cache: a sliding layer keeps W − 1 tokens)",
        f"  per token                 {d['cache_bytes_per_token']:>22,} B",
        f"  fixed state per sequence  {d['fixed_state_bytes']:>22,} B",
        f"  at T = {T:,}, B = {batch:,}  {at_T:>22,} B",
    ]
