"""One answer shape for `python -m attn_core cost --json`: whether the formulas or transformers'
build sized the model, the same top-level figures (`derived_records.ANSWER_KEYS`) and
``sized_by``; exit 0 with figures, exit 2 with one line and none.

Oracles: the build's own record (assets/derived/presets.json, transformers' parameter count and
cache layer groups) for a preset the formulas do not cover; the formulas' report for one they do."""

from __future__ import annotations

import json

from attn_core.cost.cli import main
from attn_core.cost.config_reader import load_preset_config
from attn_core.cost.derived_records import ANSWER_KEYS, preset_record, recorded_cache_bytes


def answer(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = main(["cost", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else None), err


def test_the_build_and_the_formulas_answer_in_one_shape(capsys):
    code, built, _ = answer(capsys, "--model", "lfm2-1.2b", "--seq-len", "1000", "--batch", "3")
    assert code == 0 and built["sized_by"] == "build"
    code, formulas, _ = answer(capsys, "--model", "llama-2-7b", "--seq-len", "4096")
    assert code == 0 and formulas["sized_by"] == "formulas"
    assert set(ANSWER_KEYS) <= set(built) and set(ANSWER_KEYS) <= set(formulas)
    derived = preset_record("lfm2-1.2b", load_preset_config("lfm2-1.2b"))["model_derived"]
    assert built["params"] == derived["params_total"] and built["active_params"] == derived["params_active"]
    # the cache and the state apart, as the formulas' report keeps them: their sum is the record's
    assert built["kv_cache_bytes"] + built["state_bytes"] == recorded_cache_bytes(derived, 1000, 3)
    assert built["state_bytes"] == 3 * derived["fixed_state_bytes"]


def test_a_refusal_is_exit_2_one_line_and_no_figures(capsys):
    code, body, err = answer(capsys, "--model", "no-such-model", "--seq-len", "4096")
    assert code == 2 and body is None and err.count("\n") == 1
