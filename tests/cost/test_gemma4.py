"""Gemma 4 in the closed forms (attn_core.cost.layer_variants): per-layer head widths, KV sharing,
the double-wide MLP and per-layer embeddings.

Oracles, none of them the code under test: transformers' own build on the meta device
(``sum(p.numel())`` over Gemma4ForCausalLM's parameters) and the key and value tensors a tiny
real Gemma 4 keeps in its cache after a real forward on the CPU. Configs: the class defaults,
the shipped gemma-4-e2b preset, and tiny ones with KV sharing, global KV heads and V = K."""

from __future__ import annotations

import math

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="the oracle is transformers' own Gemma 4 build")

from conftest import hf_numel  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM  # noqa: E402

from attn_core.anatomy.build import completed_config  # noqa: E402
from attn_core.anatomy.compare import compare_config  # noqa: E402
from attn_core.cost.config_keys import ConfigError  # noqa: E402
from attn_core.cost.config_reader import from_hf_config, load_preset_config  # noqa: E402
from attn_core.cost.flops import layer_flops, prefill_flops  # noqa: E402
from attn_core.cost.gpus import load_gpu  # noqa: E402
from attn_core.cost.inputs import Hardware, Workload  # noqa: E402
from attn_core.cost.ledger import layer_ledger  # noqa: E402
from attn_core.cost.params import model_params  # noqa: E402
from attn_core.cost.report import cost_report  # noqa: E402
from attn_core.cost.serving import kv_cache_bytes, kv_cache_bytes_per_token  # noqa: E402
from attn_core.views import costs_text, costs_whole  # noqa: E402

TINY = dict(
    model_type="gemma4_text",
    vocab_size=96,
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=8,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    global_head_dim=32,
    sliding_window=16,
    hidden_size_per_layer_input=8,
    vocab_size_per_layer_input=80,
    layer_types=["sliding_attention", "full_attention"] * 4,
)
VARIANTS = {
    "plain": {},
    "kv shared": {"num_kv_shared_layers": 3},
    "kv shared, double-wide MLP": {"num_kv_shared_layers": 4, "use_double_wide_mlp": True},
    "global KV heads, V = K": {"attention_k_eq_v": True, "num_global_key_value_heads": 1},
    # (KV sharing without per-layer embeddings fails in transformers 5.23's own forward: not combined)
    "no per-layer embeddings": {"hidden_size_per_layer_input": 0},
}


def _hf(config: dict):
    return AutoConfig.for_model("gemma4_text", **{k: v for k, v in config.items() if k != "model_type"})


def meta_params(config: dict) -> int:
    return hf_numel(_hf(config))


def real_cache_bytes(config: dict, T: int) -> int:
    """Bytes of every key and value tensor a tiny bf16 Gemma 4 keeps after a forward of T tokens."""
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(_hf(config), dtype=torch.bfloat16).eval()
    with torch.no_grad():
        cache = model(input_ids=torch.randint(0, 64, (1, T)), use_cache=True).past_key_values
    total = 0
    for layer in cache.layers:
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            total += t.numel() * t.element_size() if isinstance(t, torch.Tensor) and t.dim() else 0
    return total


@pytest.mark.parametrize("source", ["class defaults", "gemma-4-e2b preset"])
def test_parameters_equal_the_meta_build(source):
    config = (
        completed_config({"model_type": "gemma4_text"})
        if source == "class defaults"
        else load_preset_config("gemma-4-e2b")
    )
    assert model_params(from_hf_config(config)).total == meta_params(config)
    check = compare_config(config)
    assert check.agrees, check.lines()


def test_the_preset_by_part():
    """gemma-4-e2b: 25 sliding layers of 256-wide heads, 5 global of 512; a 262,144 × 30·256 table."""
    shape = from_hf_config(load_preset_config("gemma-4-e2b"))
    p = model_params(shape)
    assert (shape.head_dim_of("sliding"), shape.head_dim_of("full")) == (256, 512)
    assert p.per_layer_embeddings == 262_144 * 30 * 256
    assert p.per_layer_projections == 2304 * 30 * 256 + 30 * 2 * 2304 * 256
    # 2 · (25 · 4·256 + 5 · 4·512) values per token in bf16
    assert kv_cache_bytes_per_token(shape, 2) == 2 * 2 * (25 * 4 * 256 + 5 * 4 * 512) == 143_360


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_tiny_variants_equal_the_build_and_a_real_forward(variant):
    config = TINY | VARIANTS[variant]
    shape = from_hf_config(config)
    assert model_params(shape).total == meta_params(config)
    T = 9  # below the window of 16: every caching layer holds all T tokens
    assert kv_cache_bytes(shape, T, bytes_per_value=2) == real_cache_bytes(config, T)
    assert kv_cache_bytes_per_token(shape, 2) * T == real_cache_bytes(config, T)
    assert compare_config(config).agrees


def test_shared_layers_keep_no_cache_and_no_k_v_maps():
    """The misread the survey found: a Gemma 4 with num_kv_shared_layers counted its sharing
    layers as caching. 3 of 8 share: layers 5, 6, 7 (one sliding, two full) keep nothing."""
    plain, shared = from_hf_config(TINY), from_hf_config(TINY | {"num_kv_shared_layers": 3})
    per_layer = {"sliding": 2 * 2 * 16 * 2, "full": 2 * 2 * 32 * 2}  # 2 (K, V) · H_kv · d_h · 2 B
    assert shared.caching_counts == {"sliding": 3, "full": 2}
    assert kv_cache_bytes_per_token(plain, 2) - kv_cache_bytes_per_token(shared, 2) == (
        2 * per_layer["full"] + per_layer["sliding"]
    )
    saved = model_params(plain).attention - model_params(shared).attention
    # W_K, W_V (d × H_kv·d_h each) and the key norm (d_h) of each sharing layer
    assert saved == (2 * 64 * 2 * 16 + 16) + 2 * (2 * 64 * 2 * 32 + 32)


def test_flops_sum_over_layer_groups_and_the_ledger_matches_the_parameters():
    shape = from_hf_config(TINY | {"num_kv_shared_layers": 4, "use_double_wide_mlp": True})
    T = 33
    prefill = prefill_flops(shape, T, causal=True)
    by_layer = sum(layer_flops(shape, T, causal=True, layer=i).total for i in range(shape.n_layers))
    maps = (
        2 * 3 * shape.n_layers * shape.d_model * 8 * T
    )  # the d → L·p map and each layer's gate and map (p = 8)
    assert by_layer + prefill.lm_head + maps == prefill.total and prefill.per_layer_inputs == maps
    p = model_params(shape)
    rows = layer_ledger(shape, T)
    outside = p.embeddings + p.per_layer_embeddings + p.per_layer_projections + p.lm_head + 64 + 8
    assert sum(r.params for r in rows) == p.total - outside
    assert sum(r.cache_bytes_per_token for r in rows) == kv_cache_bytes_per_token(shape, 2)


def test_the_page_formula_and_its_independent_checks_agree():
    """The cache formula the page writes out evaluates to the figure it shows, and the whole-model
    checks (Σ per-layer FLOPs, Σ cached tokens × bytes) find no difference."""
    shape = from_hf_config(TINY | {"num_kv_shared_layers": 3, "use_double_wide_mlp": True})
    r = cost_report(shape, Workload(40, 2), hardware=Hardware(load_gpu("a100-80gb")))
    text = costs_text.kv_formula(shape, 2)
    terms = text.split(" = ", 1)[1].split(";")[0].split(" + ")
    total = sum(math.prod(int(x) for x in t.split("·")) for t in terms)
    assert total == r.kv_cache_bytes_per_token == 2 * 2 * (3 * 2 * 16 + 2 * 2 * 32)
    assert all(diff == 0 for _, diff in costs_whole.whole_checks(r))


@pytest.mark.parametrize(
    "extra, key",
    [
        ({"num_kv_shared_layers": 7}, "num_kv_shared_layers"),  # layer 0 alone is no full producer
        ({"enable_moe_block": True}, "enable_moe_block"),
        ({"per_layer_config": {"0": {"head_dim": 32}}}, "per_layer_config"),  # a sliding layer
        ({"per_layer_config": {"1": {"intermediate_size": 32}}}, "per_layer_config"),
    ],
)
def test_what_the_formulas_do_not_read_is_refused_by_name(extra, key):
    with pytest.raises(ConfigError, match=key):
        from_hf_config(TINY | extra)


@pytest.mark.parametrize("n_layers, shared", [(14, 4), (16, 5)])
def test_default_layer_pattern_is_counted_by_rule(n_layers, shared):
    """No layer_types: every 6th layer full and the last one forced full (the class's rule), read as
    a rule; the KV-sharing tail counted by the rule's overlap, against the build."""
    config = {k: v for k, v in TINY.items() if k != "layer_types"} | {
        "num_hidden_layers": n_layers,
        "num_kv_shared_layers": shared,
    }
    shape = from_hf_config(config)
    assert shape.layer_kinds.listed is None
    kinds = ["full" if (i + 1) % 6 == 0 or i == n_layers - 1 else "sliding" for i in range(n_layers)]
    tail = kinds[n_layers - shared :]
    assert shape.shared_kv_counts == {k: tail.count(k) for k in set(tail)}
    assert model_params(shape).total == meta_params(config)
    assert compare_config(config).agrees


def test_a_bare_config_takes_the_class_defaults():
    """A config.json that names only the model type is Gemma4TextConfig's defaults, as the build is."""
    bare = {"model_type": "gemma4_text"}
    assert model_params(from_hf_config(bare)).total == meta_params(bare)
    assert (
        kv_cache_bytes_per_token(from_hf_config(bare), 2)
        == compare_config(bare).anatomy.cache_bytes_per_token
    )
