"""Vision towers beside the text model: read from the whole multimodal build. Oracle: the makers'
figures (Gemma 3's tech report: a 417M vision encoder; Meta: Llama 4 Scout 109B in all)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the build needs transformers")

from attn_core.anatomy.towers import tower_of, tower_params

CONFIGS = Path(__file__).parents[1] / "data" / "configs"


def _load(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text())


def test_paths():
    assert tower_of("model.vision_tower.encoder.layers.0.mlp.fc1.weight") == "vision"
    assert tower_of("model.multi_modal_projector.linear.weight") == "projector"
    assert tower_of("model.language_model.layers.0.self_attn.q_proj.weight") is None


def test_gemma3_vision_encoder_is_the_reports_417m():
    t = tower_params(_load("gemma-3-27b"))
    assert round(t["vision"] / 1e6) == 417


def test_llama4_scout_with_its_tower_is_109b():
    from attn_core.anatomy.build import build_on_meta, text_config
    from attn_core.anatomy.parts import param_parts

    c = _load("llama-4-scout")
    cfg = text_config(c)
    text = param_parts(build_on_meta(cfg), cfg).total
    towers = tower_params(c)
    assert towers["vision"] > 0.5e9
    assert (
        round((text + sum(towers.values())) / 1e9)
        == json.loads((CONFIGS / "published.json").read_text())["llama-4-scout"]["total"] / 1e9
    )


def test_text_only_config_has_no_towers():
    assert tower_params(_load("mixtral-8x7b")) == {}


def test_cli_json_carries_the_towers(tmp_path, capsys):
    from attn_core.anatomy.cli import main

    assert main(["cost", "--config", str(CONFIGS / "gemma-3-27b.json"), "--seq-len", "64", "--json"]) == 0
    towers = json.loads(capsys.readouterr().out)["towers"]
    assert towers == tower_params(_load("gemma-3-27b"))
