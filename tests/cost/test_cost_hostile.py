"""Hostile configs cannot buy work or crash the cost model.

A config may declare 16,777,216 layers in a few hundred bytes. Work must grow with what the config
lists, never with what it declares: for a layer pattern (a rule such as "every 2nd layer is MoE")
the number of Python function calls made by the whole Cost page computation and by the CLI is the
same at L, 10·L and 16,777·L (up to a few formatting branches); for a listed pattern (``layer_types``) it grows at most linearly. The oracle
is cProfile's call count — it times nothing, so it holds on any machine. Before layer patterns were
counted by rule, these configs took O(L²) calls (87 s of CLI time at 100k layers).
"""

from __future__ import annotations

import cProfile
import json
import pstats
import subprocess
import sys

import pytest

from attn_core.cost.cli import main
from attn_core.cost.config_reader import ConfigError, parse_config_text
from attn_core.cost.gpus import load_gpu
from attn_core.cost.inputs import Hardware, Precision, Workload
from attn_core.cost.layers import ALL, Every, LayerKinds, LayerSet
from attn_core.views import costs as explore

SMALL = dict(
    hidden_size=64,
    intermediate_size=96,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    vocab_size=100,
)
MOE = dict(moe_intermediate_size=32, num_experts_per_tok=2)

# Each: a real model family's keys, with its layer pattern given by a rule.
PATTERNS = {
    "qwen3_moe sparse step": SMALL
    | MOE
    | {"model_type": "qwen3_moe", "num_experts": 8, "decoder_sparse_step": 2, "mlp_only_layers": [0, 1, 7]},
    "deepseek dense prefix": SMALL
    | MOE
    | {
        "model_type": "deepseek_v3",
        "n_routed_experts": 8,
        "n_shared_experts": 1,
        "first_k_dense_replace": 3,
        "moe_layer_freq": 3,
        "kv_lora_rank": 16,
        "qk_rope_head_dim": 8,
        "qk_nope_head_dim": 8,
        "v_head_dim": 16,
    },
    "llama4 interleave + chunks": SMALL
    | {
        "model_type": "llama4_text",
        "num_local_experts": 4,
        "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 2,
        "intermediate_size_mlp": 96,
        "attention_chunk_size": 64,
        "no_rope_layer_interval": 4,
    },
    "gemma3 sliding pattern": SMALL
    | {"model_type": "gemma3_text", "sliding_window": 32, "sliding_window_pattern": 6},
    "gemma2 alternation": SMALL | {"model_type": "gemma2", "sliding_window": 32},
    "qwen3_next attention interval": SMALL
    | MOE
    | {
        "model_type": "qwen3_next",
        "num_experts": 8,
        "full_attention_interval": 4,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 4,
        "linear_key_head_dim": 16,
        "linear_value_head_dim": 16,
        "shared_expert_intermediate_size": 32,
    },
    "jamba attention and expert periods": SMALL
    | {
        "model_type": "jamba",
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "attn_layer_period": 8,
        "attn_layer_offset": 4,
        "expert_layer_period": 2,
        "expert_layer_offset": 1,
        "mamba_d_state": 8,
        "mamba_expand": 2,
        "mamba_d_conv": 4,
    },
    "kimi_linear default attention rule": SMALL
    | MOE
    | {
        "model_type": "kimi_linear",
        "num_experts": 8,
        "kv_lora_rank": 16,
        "qk_rope_head_dim": 8,
        "qk_nope_head_dim": 8,
        "v_head_dim": 16,
        "linear_num_heads": 2,
        "linear_head_dim": 16,
    },
}


def page_pass(text: str) -> None:
    """Everything the Cost page computes for a pasted config, every section included."""
    shape = parse_config_text(text)
    work, precision = Workload(4096, 8, 4096, 64, causal=True), Precision("bf16", weights="fp8", kv="bf16")
    v = explore.view(shape, work, precision, Hardware(load_gpu("h200"), 8))
    assert v.card and v.headline and v.whole.ledger and v.flops.table and v.kv.chart.series
    assert v.serving.gpus and v.scores.metrics and v.how_its_asked
    assert all(len(v.sweep_columns(group)) > 1 for group in ("flops", "kv", "scores"))


def calls(fn, *args) -> int:
    profile = cProfile.Profile()
    profile.runcall(fn, *args)
    return pstats.Stats(profile).total_calls


def cli_pass(path) -> None:
    assert main(["cost", "--config", str(path), "--seq-len", "4096", "--gpu", "h200", "--gen-len", "64"]) == 0


@pytest.mark.parametrize("name", PATTERNS)
def test_a_layer_pattern_costs_the_same_at_ten_times_the_layers(name, tmp_path, capsys):
    texts = {L: json.dumps(PATTERNS[name] | {"num_hidden_layers": L}) for L in (1_000, 10_000, 16_777_216)}
    page_pass(texts[1_000])  # warm the process-wide caches (GPU presets, imports) first
    page = {L: calls(page_pass, text) for L, text in texts.items()}
    # Equal up to branches that depend on magnitudes (number formatting): no per-layer work.
    assert max(page.values()) <= 1.05 * min(page.values())
    paths = {}
    for L, text in texts.items():
        paths[L] = tmp_path / f"{L}.json"
        paths[L].write_text(text)
    cli_pass(paths[1_000])
    cli = {L: calls(cli_pass, path) for L, path in paths.items()}
    assert max(cli.values()) <= 1.05 * min(cli.values())


def test_a_listed_pattern_costs_at_most_linear_work():
    """layer_types lists every layer: the work may follow the list, once (never L² as before)."""

    def text(L: int) -> str:
        types = ["sliding_attention"] * (L - L // 4) + ["full_attention"] * (L // 4)
        return json.dumps(
            SMALL
            | {
                "model_type": "gpt_oss",
                "num_hidden_layers": L,
                "sliding_window": 32,
                "num_local_experts": 4,
                "num_experts_per_tok": 2,
                "layer_types": types,
            }
        )

    page_pass(text(400))
    small, large = calls(page_pass, text(400)), calls(page_pass, text(4_000))
    assert large <= 10 * small  # quadratic work would be ~100×


def test_a_hybrid_pattern_string_costs_at_most_linear_work():
    """Nemotron-H's hybrid_override_pattern lists every layer in one character: work follows it, once."""

    def text(L: int) -> str:
        pattern = ("M-M-M*-E" * L)[:L]
        return json.dumps(
            SMALL
            | MOE
            | {
                "model_type": "nemotron_h",
                "hybrid_override_pattern": pattern,
                "n_routed_experts": 4,
                "moe_shared_expert_intermediate_size": 32,
                "mamba_num_heads": 4,
                "mamba_head_dim": 16,
                "ssm_state_size": 8,
                "n_groups": 2,
            }
        )

    page_pass(text(400))
    small, large = calls(page_pass, text(400)), calls(page_pass, text(4_000))
    assert large <= 10 * small


def test_counts_by_rule_match_a_layer_by_layer_count():
    """The oracle: visit every layer of small models with awkward periods, offsets and lists."""
    import itertools

    rules = [Every(1), Every(2, 1), Every(3, 0, start=4), Every(5, 2, start=1), Every(7, 6)]
    sets = [ALL, LayerSet()] + [LayerSet(r, frozenset({0, 3, 50}), frozenset({1, 6})) for r in rules]
    for a, b, L in itertools.product(sets, sets, (1, 7, 30, 61)):
        assert a.count(L) == sum(i in a for i in range(L))
        assert a.overlap(b, L) == sum(i in a and i in b for i in range(L))
        kinds = LayerKinds(L, "sliding", "full", a)
        by_layer = [(kinds[i], i in b) for i in range(L)]
        assert kinds.census(b) == {k: by_layer.count(k) for k in set(by_layer)}
        assert kinds.counts() == {k: [c for c, _ in by_layer].count(k) for k in {c for c, _ in by_layer}}


def test_qwen_moe_at_16_million_layers_counts_by_rule():
    """The published hole: MoE on odd-numbered layers except those listed. Hand count: of layers
    0..L−1, those with i + 1 even are the L/2 odd ones; minus listed layers 1 and 7 (0 is even)."""
    L = 16_777_216
    s = parse_config_text(json.dumps(PATTERNS["qwen3_moe sparse step"] | {"num_hidden_layers": L}))
    assert s.n_moe_layers == L // 2 - 2
    assert s.is_moe_layer(3) and not s.is_moe_layer(1) and not s.is_moe_layer(L - 2) and s.is_moe_layer(L - 1)


@pytest.mark.parametrize(
    "config, fragment",
    [
        ({"layer_types": [{"a": 1}, "full_attention"]}, "lists a dict"),
        ({"layer_types": [["x"], "full_attention"]}, "lists a list"),
        ({"layer_types": [None, "full_attention"]}, "lists a NoneType"),
    ],
)
def test_layer_types_that_are_not_names_are_refused_by_key(config, fragment):
    with pytest.raises(ConfigError, match=fragment):
        parse_config_text(json.dumps(SMALL | {"num_hidden_layers": 2} | config))


def test_a_lone_surrogate_in_the_name_is_replaced(tmp_path):
    text = json.dumps(SMALL | {"num_hidden_layers": 2, "_name_or_path": "evil\ud800" + "x" * 500})
    s = parse_config_text(text)
    s.name.encode("utf-8")  # would raise UnicodeEncodeError with the surrogate kept
    assert s.name.startswith("evil?") and len(s.name) <= 80
    path = tmp_path / "c.json"
    path.write_text(text)
    out = subprocess.run(
        [sys.executable, "-m", "attn_core", "cost", "--config", str(path), "--seq-len", "64"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "evil?" in out.stdout and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "config",
    [
        SMALL | {"num_hidden_layers": 2, "layer_types": [{"a": 1}, "full_attention"]},
        SMALL | {"num_hidden_layers": 2, "sliding_window_pattern": {"p": 1}},
        SMALL | {"num_hidden_layers": 2, "layer_types": ["retention", "full_attention"]},
        SMALL | {"num_hidden_layers": 2, "layer_types": ["linear_attention", "full_attention"]},
        SMALL | {"model_type": "nemotron_h", "hybrid_override_pattern": "M*R-"},
        {"text_config": {"num_hidden_layers": [1]}},
        [1, 2, 3],
    ],
)
def test_the_cli_refuses_a_bad_config_in_one_line(config, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config))
    out = subprocess.run(
        [sys.executable, "-m", "attn_core", "cost", "--config", str(path), "--seq-len", "64"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and f"--config {path}:" in out.stderr and "Traceback" not in out.stderr


def test_the_page_sizes_a_16_million_layer_link(app):
    """Opening a link that carries the hostile config: the page answers (the model card and the
    per-type table, no per-layer strip) instead of tying up a server thread."""
    config = PATTERNS["qwen3_moe sparse step"] | {"num_hidden_layers": 16_777_216}
    at = app("pages/costs.py", co_src="paste or upload config.json", co_paste=json.dumps(config))
    assert not at.exception and at.error.len == 0
    assert any("16,777,216" in m.value or "16777216" in m.value for m in at.markdown)
