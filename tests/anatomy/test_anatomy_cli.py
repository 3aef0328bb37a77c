"""Where transformers builds the config, the CLI's headline figures are the build's and the
formulas' reading follows as the explanation, their differences named. Oracle: transformers'
build (`attn_core.anatomy.derive`). LFM2 at its class defaults is one the formulas misread
(+37% parameters: they miss its MLP's automatic width adjustment)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the build needs transformers")

from attn_core.anatomy.cli import main
from attn_core.anatomy.derive import derive


def _run(tmp_path, config: dict, capsys) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert main(["cost", "--config", str(path), "--seq-len", "4096"]) == 0
    return capsys.readouterr().out


def test_lfm2_headline_is_the_builds_not_the_misread(tmp_path, capsys):
    config = {"model_type": "lfm2"}
    a = derive(config)
    out = _run(tmp_path, config, capsys)
    head = out.split("\n\n")[0]
    assert f"{a.params_total:,}" in head
    assert f"{a.cache_bytes_per_token:,} B" in head
    assert "the formulas below differ from the build on: parameters" in head


def test_kind_line_from_the_build(tmp_path, capsys):
    out = _run(tmp_path, {"model_type": "qwen3_moe"}, capsys)
    first = out.splitlines()[0]
    a = derive({"model_type": "qwen3_moe"})
    assert f"{a.experts[0]} of {a.experts[1]} routed experts" in first


def test_gated_deltanet_heads_that_do_not_divide_are_refused_with_transformers_reason(tmp_path, capsys):
    """24 value heads over 16 key heads: transformers builds the layers, but its forward fails on the
    shapes (on the meta device and on a reduced copy with real weights): refused, its reason named."""
    from attn_core.anatomy.build import completed_config

    config = completed_config({"model_type": "qwen3_5_moe_text"})
    config |= {
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 24,
        "num_hidden_layers": 4,
        "num_experts": 8,
        "layer_types": config["layer_types"][:4],
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    assert main(["cost", "--config", str(path), "--seq-len", "64"]) == 2
    err = capsys.readouterr().err
    assert "transformers builds it but cannot run it" in err and "forward fails" in err


def test_gemma4_moe_sized_by_the_build_says_k_of_e_and_its_active_count(capsys):
    """The formulas refuse Gemma 4's MoE block; the build answers, its first line the kind and its
    active count k of E's (hand count in tests/anatomy/test_parts.py), not the total."""
    from pathlib import Path

    path = Path(__file__).parents[1] / "data" / "configs" / "gemma-4-26b-a4b.json"
    assert main(["cost", "--config", str(path), "--seq-len", "1024"]) == 0
    out = capsys.readouterr().out
    assert "8 of 128 routed experts" in out.splitlines()[0]
    assert "active per token 3,822,530,560" in out


def test_checkpoint_buffers_explain_the_formulas_larger_total(tmp_path, capsys):
    """DeepSeek-V3's router score-correction bias (n_routed_experts per MoE layer, 58 = 61 − 3
    dense layers) is a buffer in transformers' build and a parameter in the formulas: the headline
    says so, so its total and the formulas' (larger by exactly that) do not read as a contradiction."""
    path = Path(__file__).parents[1] / "data" / "configs" / "deepseek-v3.json"
    c = json.loads(path.read_text())
    buffers = (c["num_hidden_layers"] - c["first_k_dense_replace"]) * c["n_routed_experts"]
    out = _run(tmp_path, c, capsys)
    head = out.split("\n\n")[0]
    assert f"+ {buffers:,} held as buffers" in head


def test_layers_say_which_are_dense_and_which_hold_experts():
    """A GLM-MoE config whose first layer is dense (first_k_dense_replace 1) and the other two MoE:
    the build's layer rows say so, parameters per layer."""
    from attn_core.anatomy.cli import derived_text
    from attn_core.anatomy.compare import compare_config

    config = dict(model_type="glm4_moe", hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
                  num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1,
                  vocab_size=128)  # fmt: skip
    text = derived_text(compare_config(config), 1024, 1, "tiny")
    assert "     1 × Glm4MoeAttention + dense MLP:" in text
    assert "     2 × Glm4MoeAttention + routed experts:" in text


def test_a_build_sized_model_on_a_gpu_gets_weights_fit_and_time_bounds_by_hand(capsys):
    """MiniMax-M2 (the formulas have no expert layout for it) on 8 H200s, fp8 weights and compute:
    the sequences that fit and the decode bound recomputed here from the build's own counts and
    the GPU's datasheet figures (assets/gpus.json)."""
    from attn_core.cost.gpus import load_gpu
    from attn_core.cost.units import format_seconds

    path = Path(__file__).parents[1] / "data" / "configs" / "minimax-m2.json"
    T, n = 32_768, 8
    args = ["cost", "--config", str(path), "--seq-len", str(T), "--gpu", "h200", "--n-gpus", str(n)]
    assert main([*args, "--weight-dtype", "fp8", "--compute-dtype", "fp8"]) == 0
    out = capsys.readouterr().out
    a, gpu = derive(json.loads(path.read_text())), load_gpu("h200")
    seq = a.cache_bytes_per_token * T + a.fixed_state_bytes  # one sequence at T, bf16
    fit = (n * gpu.memory_bytes - a.params_total) // seq  # fp8: one byte per parameter
    assert f"that fit   {fit:,}" in out
    step = (a.params_active + seq) / (n * gpu.bandwidth_bytes_per_s)
    assert f"batch 1        {format_seconds(step)}" in out
