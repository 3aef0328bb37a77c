"""``verify`` runs transformers' own layers: a tiny Llama, a tiny Qwen3-Next (Gated DeltaNet,
gated attention, MoE), a tiny Nemotron-H (Mamba-2, MLP and attention blocks) and a tiny Gemma 4
(sliding and global layers of different head widths, per-layer embeddings, KV sharing) are built
by transformers in the check's child process and timed through the model's forward, and the cost
model's bound and estimate are still set beside the run.

Oracles, each independent of the code it checks: transformers' own model of the N layers, built
here from a config written out by hand (``num_hidden_layers`` = N and the layer list cut by
hand), its parameters counted on its modules; the child's own peak resident memory (``VmHWM``,
read by the kernel) against the plan; the model's forward on the same weights, for the cut.
"""

from __future__ import annotations

import json

import pytest
from conftest import hf_numel
from transformers import AutoModelForCausalLM

from attn_core.cost.config_reader import from_hf_config
from attn_core.verify import cli as verify_cli
from attn_core.verify.child import start_check
from attn_core.verify.counts import prefill_counts
from attn_core.verify.examples import HYBRID, LLAMA, NEMOTRON
from attn_core.verify.hf import cut_config, cut_config_dict, hf_build
from attn_core.verify.plan import VerifyRequest, plan_build

T, M = 24, 3
# Gemma 4, tiny: 6 layers (sliding, sliding, global) × 2, global heads twice as wide (its
# per_layer_config), per-layer embeddings, the last 2 layers reusing earlier layers' KV; the
# formulas read its MLP as gated ('mlp_kind', which transformers keeps as a plain attribute).
GEMMA4 = {
    "model_type": "gemma4_text",
    "num_hidden_layers": 6,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "global_head_dim": 32,
    "sliding_window": 8,
    "vocab_size": 100,
    "vocab_size_per_layer_input": 100,
    "hidden_size_per_layer_input": 8,
    "num_kv_shared_layers": 2,
    "mlp_kind": "gated",
    "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2,
}


pytestmark = pytest.mark.usefixtures("small_probe")


def _check(config: dict, **request):
    shape = from_hf_config(config, name=config["model_type"])
    req = VerifyRequest(seq_len=T, decode_steps=M, device="cpu", **request)
    plan = plan_build(shape, req, config)
    check = start_check(shape, req, 240, config=config)
    return plan, check.wait(), check


# name, config, request, the config of what is built (by hand), the layers picked
CASES = {
    "llama": (LLAMA, {}, LLAMA, (0, 1)),
    # layers 0–2 are Gated DeltaNet, 3 is attention: 2 layers are its first of each kind
    "qwen3_next": (
        HYBRID,
        {"layers": 2},
        HYBRID | {"num_hidden_layers": 2, "layer_types": ["linear_attention", "full_attention"]},
        (0, 3),
    ),
    "nemotron_h": (NEMOTRON, {}, NEMOTRON, (0, 1, 2, 3, 4)),
    # the first 3 layers: no KV-sharing layer among them, the global one keeps its width
    "gemma4": (
        GEMMA4,
        {"layers": 3},
        GEMMA4
        | {"num_hidden_layers": 3, "num_kv_shared_layers": 0, "layer_types": GEMMA4["layer_types"][:3]},
        (0, 1, 2),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_verify_runs_transformers_own_layers(name):
    config, request, by_hand, picked = CASES[name]
    plan, result, check = _check(config, **request)
    data = result.to_json()
    assert data["built_by"] == "transformers" and plan.built_by == "transformers"
    assert data["params_built"] == hf_numel(by_hand, base=True)
    assert tuple(data["layer_indices_built"]) == picked
    # the child's peak resident memory (read by the kernel) stays under the plan
    assert 0 < check.measured_peak_bytes <= plan.peak_bytes
    for phase in ("prefill", "decode_step"):  # the cost model's figures beside the run
        p = data[phase]
        assert p["flops"] > 0 and p["bytes"] > 0 and p["estimate_ms"] > 0
        assert 0 < p["bound_ms"] <= p["measured_ms"]
    assert data["prefill"]["flops"] == prefill_counts(plan.shape, T, 1, 4).flops


def test_gemma4_cut_keeps_the_global_layers_width_and_refuses_a_moved_global_layer():
    """The global layer's head width (a per-layer override keyed by layer index) follows the
    layer to its new index; a cut ending on a sliding layer (transformers makes a Gemma 4's last
    layer global) is not built as the model has it, so the plan skips it."""
    cfg = hf_build(GEMMA4).cfg
    cut = cut_config(cfg, (0, 2), None)
    model = AutoModelForCausalLM.from_config(cut)
    widths = [layer.self_attn.q_proj.out_features for layer in model.model.layers]
    assert widths == [4 * 16, 4 * 32]
    with pytest.raises(Exception, match="changes the layer kinds"):
        cut_config(cfg, (0, 1), None)
    shape = from_hf_config(GEMMA4)
    plan = plan_build(shape, VerifyRequest(seq_len=T, decode_steps=M, layers=5), GEMMA4)
    assert plan.layer_indices == (0, 1, 2)  # 5 and 4 layers end on sliding ones


def test_cut_config_renumbers_index_lists_and_cuts_patterns():
    d = {
        "num_hidden_layers": 4,
        "mlp_only_layers": [1, 3],
        "layer_types": ["a", "b", "c", "d"],
        "hybrid_override_pattern": "M-M*",
        "time_step_limit": [0.0, 1.0],
        "num_experts": 64,
        "num_experts_per_tok": 64,
        "num_kv_shared_layers": 1,
        "per_layer_config": {"03": {"head_dim": 8}},
    }
    out = cut_config_dict(d, 4, (1, 3), (64, 8))
    assert out["num_hidden_layers"] == 2 and out["mlp_only_layers"] == [0, 1]
    assert out["layer_types"] == ["b", "d"] and out["hybrid_override_pattern"] == "-*"
    assert (
        out["time_step_limit"] == [0.0, 1.0] and out["num_experts"] == 8 and out["num_experts_per_tok"] == 64
    )
    assert out["num_kv_shared_layers"] == 1 and out["per_layer_config"] == {1: {"head_dim": 8}}


def test_remote_code_config_is_built_by_the_lab_and_says_why():
    config = LLAMA | {"auto_map": {"AutoModelForCausalLM": "x.Y"}}
    plan = plan_build(from_hf_config(config), VerifyRequest(seq_len=T, device="cpu"), config)
    assert plan.built_by == "lab" and "remote code" in plan.notes[0]
    plan = plan_build(from_hf_config(LLAMA), VerifyRequest(seq_len=T, device="cpu"))
    assert plan.built_by == "lab"


def test_cli_json_reports_transformers_build_and_peaks(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GEMMA4))
    out = tmp_path / "out.json"
    args = [
        "--config",
        str(path),
        "--layers",
        "3",
        "--seq-len",
        str(T),
        "--decode-steps",
        str(M),
        "--device",
        "cpu",
        "--json",
        str(out),
    ]
    assert verify_cli.main(args) == 0
    data = json.loads(out.read_text())
    assert data["built_by"] == "transformers" and data["params_built"] == hf_numel(
        CASES["gemma4"][2], base=True
    )
    assert 0 < data["measured_peak_bytes"] <= data["planned_peak_bytes"]
