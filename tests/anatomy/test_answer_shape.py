"""One answer shape for `python -m attn_core cost --json`: whether the formulas or transformers'
build sized the model, the same top-level figures (`derived_records.ANSWER_KEYS`) and
``sized_by``; exit 0 with figures, exit 2 with one line and none.

Oracles: the build's own record (assets/derived/presets.json, transformers' parameter count and
cache layer groups) for a preset the formulas do not cover; the formulas' report for one they do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attn_core.cost.cli import main
from attn_core.cost.config_reader import load_preset_config
from attn_core.cost.derived_records import ANSWER_KEYS, preset_record, recorded_cache_bytes

ROOT = Path(__file__).parents[2]


def answer(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = main(["cost", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else None), err


def test_the_build_and_the_formulas_answer_in_one_shape(capsys):
    code, built, _ = answer(capsys, "--model", "lfm2-1.2b", "--seq-len", "1000", "--batch", "3")
    assert code == 0 and built["sized_by"] == "build"
    preset = Path(__file__).parents[2] / "assets" / "models" / "llama-2-7b.json"
    code, formulas, _ = answer(capsys, "--config", str(preset), "--seq-len", "4096", "--analytic-only")
    assert code == 0 and formulas["sized_by"] == "formulas" and "formulas" not in formulas
    code, both, _ = answer(capsys, "--model", "llama-2-7b", "--seq-len", "4096")
    assert code == 0 and both["sized_by"] == "build" and set(ANSWER_KEYS) <= set(both["formulas"])
    assert set(ANSWER_KEYS) <= set(built) and set(ANSWER_KEYS) <= set(formulas) <= set(both)
    derived = preset_record("lfm2-1.2b", load_preset_config("lfm2-1.2b"))["model_derived"]
    assert built["params"] == derived["params_total"] and built["active_params"] == derived["params_active"]
    # the cache and the state apart, as the formulas' report keeps them: their sum is the record's
    assert built["kv_cache_bytes"] + built["state_bytes"] == recorded_cache_bytes(derived, 1000, 3)
    assert built["state_bytes"] == 3 * derived["fixed_state_bytes"]


def test_a_refusal_is_exit_2_one_line_and_no_figures(capsys):
    code, body, err = answer(capsys, "--model", "no-such-model", "--seq-len", "4096")
    assert code == 2 and body is None and err.count("\n") == 1


UNSEEN_MOE = [  # MoE model_types the formulas have no expert layout for (attn_core/cost/families.py)
    "assets/models/built/qwen3.5-35b-a3b.json",  # qwen3_5_moe_text
    "tests/data/configs/minimax-m2.json",  # minimax_m2
]


@pytest.mark.parametrize("rel", UNSEEN_MOE)
def test_an_unseen_moe_type_is_answered_by_the_build_in_the_one_shape(rel, capsys):
    """Oracle: transformers' build of the config (`derive`): every top-level figure is the build's,
    ``sized_by`` says so, and the text names the fact that stopped the formulas (the config's
    expert count) rather than a list of model_types."""
    pytest.importorskip("transformers", reason="the build needs transformers")
    from attn_core.anatomy.cli import main as build_main
    from attn_core.anatomy.derive import derive
    from attn_core.cost.experts import EXPERT_KEYS

    path = ROOT / rel
    config = json.loads(path.read_text())
    a = derive(config)
    assert a.experts is not None  # the build holds routed experts
    assert build_main(["cost", "--config", str(path), "--seq-len", "1000", "--batch", "3", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["sized_by"] == "build" and set(ANSWER_KEYS) <= set(j)
    assert (j["params"], j["active_params"]) == (a.params_total, a.params_active)
    assert j["kv_cache_bytes_per_token"] == a.cache_bytes_per_token
    assert j["kv_cache_bytes"] + j["state_bytes"] == a.cache_bytes(1000, 3)
    assert build_main(["cost", "--config", str(path), "--seq-len", "1000"]) == 0
    text = capsys.readouterr().out
    key = next(k for k in EXPERT_KEYS if config.get(k) or config.get("text_config", {}).get(k))
    assert f"config key {key!r}" in text and "routed experts" in text
    assert "known:" not in text  # a fact of the config, not a hand-kept list of types


def test_where_the_formulas_misread_the_json_headline_is_the_builds(tmp_path, capsys):
    """LFM2 at its class defaults: the formulas read it (+37% parameters: they miss its MLP's width
    adjustment) and transformers builds it. The top-level figures are the build's, the formulas'
    beside under ``formulas``; at an fp8 cache the build's bf16 cache is halved, to the byte."""
    from attn_core.anatomy.cli import main as cli_main
    from attn_core.anatomy.derive import derive

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "lfm2"}))

    def answer(capsys, *argv: str):
        code = cli_main(["cost", *argv, "--json"])
        return code, json.loads(capsys.readouterr().out), None

    code, j, _ = answer(capsys, "--config", str(path), "--seq-len", "2048")
    a = derive({"model_type": "lfm2"})
    assert code == 0 and j["sized_by"] == "build"
    assert j["params"] == a.params_total != j["formulas"]["params"]
    assert j["kv_cache_bytes_per_token"] == a.cache_bytes_per_token
    code, fp8, _ = answer(capsys, "--config", str(path), "--seq-len", "2048", "--kv-dtype", "fp8")
    assert code == 0 and fp8["kv_cache_bytes_per_token"] == a.cache_bytes_per_token // 2
