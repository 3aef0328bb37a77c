"""The model-derived path (attn_core/anatomy) against transformers itself, and the formulas held
against it.

Oracles, none of them the code under test: the parameter count of transformers' own build on the
meta device (``AutoModelForCausalLM.from_config``, ``sum(p.numel())``), written here without the
anatomy's walker; the cache tensors a tiny real model keeps after a real forward on the CPU, read
attribute by attribute as cache_utils defines them; the publishers' totals for the new presets.

The sweep over every decoder-only type transformers builds is a benchmark
(benchmarks/anatomy_sweep.py, ~4 min); here a fixed list of the families the formulas misread or
refused, plus a seeded sample of the rest (set ANATOMY_SWEEP=all for every type)."""

from __future__ import annotations

import importlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="the model-derived path needs transformers")

from conftest import hf_model  # noqa: E402
from huggingface_hub.errors import StrictDataclassError  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES  # noqa: E402

from attn_core.anatomy.build import BuildRefused, completed_config  # noqa: E402
from attn_core.anatomy.compare import compare_config  # noqa: E402
from attn_core.anatomy.derive import derive  # noqa: E402
from attn_core.cost.config_reader import list_built_presets, list_presets, load_preset_config  # noqa: E402
from attn_core.cost.derived_records import RECORDS_FILE, config_key, preset_record  # noqa: E402
from attn_core.cost.params import model_params  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# Families the formulas misread or transformers' build refused before (RESULTS.md, "Model-derived
# sizing"): always in the sweep.
ALWAYS = [
    "gemma4_text",
    "qwen3_5_text",
    "qwen3_5_moe_text",
    "deepseek_v32",
    "minimax",
    "falcon_h1",
    "lfm2",
    "zamba2",
    "mamba2",
    "mllama",
    "vaultgemma",
    "bitnet",
    "hrm_text",
    "llama",
]
SAMPLE = 6
_all = sorted(set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) - set(ALWAYS))
SWEEP = ALWAYS + (
    _all if os.environ.get("ANATOMY_SWEEP") == "all" else random.Random(29).sample(_all, SAMPLE)
)


# What transformers raises for a model it cannot build at its class defaults, as the whole sweep
# (every causal-LM type, ANATOMY_SWEEP=all, transformers 5.23) meets them: TypeError for a default
# left None (hunyuan_v1_*, ministral, nemotron, lfm2_moe, qwen4_exp*, marian, dots1), KeyError
# (cohere_compass_text), AttributeError (dbrx), AssertionError (reformer: decoder only),
# ValueError (gemma4_unified_assistant), huggingface_hub's validation error (gemma4_assistant), and
# ImportError / NotImplementedError for a missing backend or an unbuilt path. Anything else (a
# MemoryError, a RecursionError, a bug in this test) fails the test instead of reading as "refused".
CANNOT_BUILD = (
    TypeError,
    KeyError,
    AttributeError,
    AssertionError,
    ValueError,
    StrictDataclassError,
    ImportError,
    NotImplementedError,
)


def meta_param_count(model_type: str) -> int | None:
    """transformers' own count: its causal LM for the (text) config, built on meta; None if it cannot."""
    try:
        cfg = AutoConfig.for_model(model_type).get_text_config(decoder=True)
        try:
            model = hf_model(cfg)
        except ValueError:  # a text config of a multimodal family: its …ForCausalLM beside it
            mod = importlib.import_module(type(cfg).__module__.replace(".configuration_", ".modeling_"))
            cls = next(
                (
                    getattr(mod, n)
                    for n in dir(mod)
                    if n.endswith("ForCausalLM")
                    and getattr(getattr(mod, n), "config_class", None) is type(cfg)
                ),
                None,
            )
            if cls is None:
                return None
            with torch.device("meta"):
                model = cls(cfg)
    except CANNOT_BUILD:
        return None
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("model_type", SWEEP)
def test_parameters_equal_transformers_build_and_the_formula_agrees_or_is_flagged(model_type):
    oracle = meta_param_count(model_type)
    config = {"model_type": model_type}
    try:
        anatomy = derive(config)
    except BuildRefused as exc:
        assert oracle is None, f"transformers builds {model_type} ({oracle:,}) but the path refused: {exc}"
        assert str(exc)  # refused with transformers' reason, one line
        return
    assert anatomy.params_total == oracle
    assert sum(anatomy.params_by_part.values()) == oracle  # every parameter in exactly one part
    assert anatomy.params_active <= anatomy.params_total
    check = compare_config(config)
    if check.shape is None:
        assert check.analytic_error, "the formulas refuse it, and the check must say so"
        return
    shape = check.shape  # the completed config, read with the build's facts
    analytic = model_params(shape).total
    if analytic in (oracle, oracle + anatomy.checkpoint_buffers):
        assert not [d for d in check.differences if d.what.startswith("parameters")]
    else:
        assert any(d.what == "parameters, total" and d.analytic == analytic for d in check.differences)
        assert not check.agrees


def _tiny(model_type: str, **over):
    return {
        "model_type": model_type,
        "vocab_size": 64,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "intermediate_size": 96,
    } | over


TINY = {
    "dense": _tiny("llama", num_hidden_layers=2),
    "sliding": _tiny(
        "gemma3_text",
        num_hidden_layers=3,
        sliding_window=8,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"],
    ),
    "MLA": _tiny(
        "deepseek_v3",
        head_dim=8,
        num_key_value_heads=4,
        num_hidden_layers=2,
        q_lora_rank=32,
        kv_lora_rank=24,
        qk_rope_head_dim=8,
        qk_nope_head_dim=16,
        v_head_dim=16,
        first_k_dense_replace=2,
        n_routed_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=16,
    ),
    "gated deltanet": _tiny(
        "qwen3_next",
        num_hidden_layers=2,
        full_attention_interval=2,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
        linear_key_head_dim=8,
        linear_value_head_dim=8,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=16,
        shared_expert_intermediate_size=16,
    ),
    "mamba-2 beside attention": _tiny(
        "falcon_h1",
        num_hidden_layers=2,
        mamba_d_ssm=64,
        mamba_n_heads=4,
        mamba_d_head=16,
        mamba_n_groups=1,
        mamba_d_state=8,
        mamba_chunk_size=4,
    ),
    "short convolution": _tiny("lfm2", num_hidden_layers=3, layer_types=["conv", "full_attention", "conv"]),
}


def real_cache_bytes(config: dict, T: int) -> list[int]:
    """The bytes each layer's cache holds after a real forward of T tokens on the CPU (bf16 model),
    read from the attributes cache_utils gives each kind of layer."""
    cfg = AutoConfig.for_model(config["model_type"], **{k: v for k, v in config.items() if k != "model_type"})
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16).eval()
    with torch.no_grad():
        cache = model(input_ids=torch.randint(0, 64, (1, T)), use_cache=True).past_key_values
    sizes = []
    for layer in cache.layers:
        n = 0
        for name in ("keys", "values", "indexer_keys"):
            t = getattr(layer, name, None)
            n += t.numel() * t.element_size() if isinstance(t, torch.Tensor) and t.dim() else 0
        for name in ("conv_states", "recurrent_states"):
            for t in (getattr(layer, name, None) or {}).values():
                n += t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0
        sizes.append(n)
    return sizes


@pytest.mark.parametrize("kind", list(TINY))
def test_cache_per_layer_equals_a_real_forward(kind):
    config = TINY[kind]
    anatomy = derive(config)
    T = 11  # past the sliding layers' window of 8: they keep W − 1 = 7 tokens
    real = real_cache_bytes(config, T)
    ours = [0] * anatomy.n_layers
    for g in anatomy.groups:
        kept = T if g.cache.window is None else min(T, g.cache.window - 1)
        for i in g.layers:
            ours[i] = g.cache.per_token * kept + g.cache.fixed
    assert ours == real and sum(real) == anatomy.cache_bytes(T)
    assert any(real)


def test_gemma4_shared_kv_layers_keep_no_cache_of_their_own():
    base = completed_config({"model_type": "gemma4_text"})
    shared = derive(base | {"num_kv_shared_layers": 10})
    plain = derive(base)
    assert shared.cache_bytes_per_token < plain.cache_bytes_per_token
    assert sum(g.count for g in shared.groups if g.cache.per_token == 0) >= 10


def test_every_preset_has_a_current_record_and_the_records_hold():
    names = list_presets() + list_built_presets()
    records = json.loads(RECORDS_FILE.read_text())
    for name in names:  # a preset edited since its record was written has none: this fails then
        assert preset_record(name, load_preset_config(name)) is not None, name
    for name in ("gpt2", "lfm2-1.2b", "minimax-text-01"):  # cheap ones, derived afresh
        fresh = derive(load_preset_config(name)).to_json()
        rec = records[name]["model_derived"]
        for key in (
            "params_total",
            "params_active",
            "params_by_part",
            "cache_bytes_per_token",
            "fixed_state_bytes",
        ):
            assert rec[key] == fresh[key], (name, key)
    assert records["gpt2"]["config_key"] == config_key(load_preset_config("gpt2"))


# The new families beside their publishers' totals (assets/models/README.md says where each is from).
PUBLISHED = {
    "qwen3.5-35b-a3b": (35e9, 0.02),  # "35B-A3B"
    "minimax-text-01": (456e9, 0.005),  # 456B total
    "lfm2-1.2b": (1.17e9, 0.01),  # 1.17B
    "deepseek-v3.2-exp": (685e9 - 14e9, 0.005),  # 685B with the 14B MTP module the config does not build
}


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_new_presets_total_beside_the_published_figure(name):
    total = json.loads(RECORDS_FILE.read_text())[name]["model_derived"]["params_total"]
    published, tol = PUBLISHED[name]
    assert abs(total - published) / published <= tol


def _cli(*args, check_torch=False):
    code = (
        "import sys; from attn_core.cost.cli import main; rc = main(sys.argv[1:]); "
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH'); sys.exit(rc)"
    )
    cmd = [sys.executable, "-c", code, *args] if check_torch else [sys.executable, "-m", "attn_core", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_cli_preset_answers_from_its_record_without_torch():
    out = _cli("cost", "--model", "llama-2-7b", "--seq-len", "128", check_torch=True)
    assert out.returncode == 0 and "NO-TORCH" in out.stdout
    assert "Checked against transformers' own build (LlamaForCausalLM" in out.stdout and "agree" in out.stdout
    out = _cli("cost", "--model", "falcon-h1-defaults", "--seq-len", "100", "--batch", "2", check_torch=True)
    d = json.loads(RECORDS_FILE.read_text())["falcon-h1-defaults"]["model_derived"]
    assert out.returncode == 0 and "NO-TORCH" in out.stdout
    assert f"{d['params_total']:,}" in out.stdout
    assert f"{2 * (100 * d['cache_bytes_per_token'] + d['fixed_state_bytes']):,} B" in out.stdout


def test_cli_config_the_formulas_do_not_cover_is_sized_by_the_build(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY["mamba-2 beside attention"]))
    out = _cli("cost", "--config", str(path), "--seq-len", "50")
    oracle = sum(real_cache_bytes(TINY["mamba-2 beside attention"], 50))
    assert out.returncode == 0, out.stderr
    assert "the formulas do not cover this model" in out.stdout and f"{oracle:,} B" in out.stdout


def test_cli_config_misread_names_the_part(tmp_path):
    # OLMo's LayerNorms carry no weights: the formulas' norms are a misread, shown with both
    # figures, never silent
    config = completed_config({"model_type": "olmo"})
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out = _cli("cost", "--config", str(path), "--seq-len", "64", "--json")
    assert out.returncode == 0, out.stderr
    check = json.loads(out.stdout)["model_check"]
    derived = check["model_derived"]
    assert derived["built_by"] == "transformers" and derived["params_total"] == meta_param_count("olmo")
    whats = {d["what"]: d for d in check["differences"]}
    assert check["agrees"] is False and "parameters, norms" in whats
    assert whats["parameters, total"]["derived"] == derived["params_total"]
    text = "\n".join(compare_config(config).lines())  # what the table form prints (cached: no rebuild)
    assert "THE FORMULA DIFFERS" in text and "parameters, norms" in text


def test_cli_refuses_only_what_transformers_cannot_build(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "no_such_model", "num_hidden_layers": 2}))
    out = _cli("cost", "--config", str(path), "--seq-len", "64")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "transformers" in out.stderr and "no model_type 'no_such_model'" in out.stderr


def test_a_build_too_large_for_the_server_is_refused_before_transformers_reads_it():
    config = {"model_type": "qwen3_moe", "num_hidden_layers": 16_777_216, "num_experts": 128}
    with pytest.raises(BuildRefused, match="too large to build on this server"):
        derive(config)
    check = compare_config(config)  # the formulas' figures stand, marked unchecked with the reason
    assert check.anatomy is None and "too large" in check.refused


def test_the_mlp_kind_is_read_from_the_mlp_s_own_matrices():
    from torch import nn

    from attn_core.anatomy.parts import mlp_kind_of

    gated, plain = nn.Module(), nn.Module()
    gated.gate_proj, gated.up_proj, gated.down_proj = nn.Linear(4, 8), nn.Linear(4, 8), nn.Linear(8, 4)
    plain.fc1, plain.fc2 = nn.Linear(4, 8), nn.Linear(8, 4)
    assert (mlp_kind_of(gated), mlp_kind_of(plain), mlp_kind_of(nn.Module())) == ("gated", "plain", None)


def test_layer_caches_of_a_dense_model_by_hand():
    from attn_core.anatomy.build import build_on_meta, text_config
    from attn_core.anatomy.cache import layer_caches

    caches = layer_caches(build_on_meta(text_config(TINY["dense"])), 2)
    # a key and a value per KV head: 2 · 2 heads · 16 wide · 2 bytes per token, nothing fixed
    assert [(c.per_token, c.fixed, c.window) for c in caches] == [(2 * 2 * 16 * 2, 0, None)] * 2


def test_the_checked_cli_in_process(tmp_path, capsys):
    from attn_core.anatomy import cli

    path = tmp_path / "config.json"
    path.write_text(json.dumps(TINY["short convolution"]))
    assert cli.main(["cost", "--config", str(path), "--seq-len", "10", "--json"]) == 0
    derived = json.loads(capsys.readouterr().out)["model_check"]["model_derived"]
    assert derived["built_by"] == "transformers" and derived["n_layers"] == 3
    assert (
        sum(real_cache_bytes(TINY["short convolution"], 10))
        == 10 * derived["cache_bytes_per_token"] + derived["fixed_state_bytes"]
    )


def test_the_page_view_of_the_check():
    from attn_core.views import cost_check

    assert cost_check.for_preset("llama-2-7b", 4096, 1).status == "agrees"
    lfm2 = cost_check.for_preset("lfm2-1.2b", 4096, 2)
    rows = dict(zip(lfm2.derived["figure"], lfm2.derived["value"], strict=True))
    assert lfm2.status == "uncovered" and rows["parameters: total"].startswith("1,170,340,608 ")
    d = json.loads(RECORDS_FILE.read_text())["lfm2-1.2b"]["model_derived"]
    at_T = 2 * (4096 * d["cache_bytes_per_token"] + d["fixed_state_bytes"])  # no sliding layer
    assert rows["cache at T = 4,096, B = 2"].startswith(f"{at_T:,} B")
    assert cost_check.for_config("{}", 10, 1).status == "unchecked"  # no model_type: nothing built
