"""The text report says what kind of model it is in its first lines, labels the per-layer FLOPs
block with the layer it shows where layers differ, and its whole-model line sums its terms.
Oracles: the config's own counts (k of E, layer kinds) and the whole-model total."""

from __future__ import annotations

import json
import re
from pathlib import Path

from attn_core.cost.cli import _run as analytic_run
from attn_core.cost.cli import build_parser

CONFIGS = Path(__file__).parents[1] / "data" / "configs"


def _text(name: str) -> str:
    args = build_parser().parse_args(["cost", "--config", str(CONFIGS / f"{name}.json"), "--seq-len", "8192"])
    return analytic_run(args)


def test_moe_says_k_of_e_first():
    c = json.loads((CONFIGS / "qwen3-30b-a3b.json").read_text())
    first = _text("qwen3-30b-a3b").splitlines()[0]
    assert f"{c['num_experts_per_tok']} of {c['num_experts']} routed experts" in first


def test_dense_says_dense_first():
    assert "dense" in _text("llama-3-8b").splitlines()[0]


def test_hybrid_names_its_mixers_and_per_layer_block_its_layer():
    c = json.loads((CONFIGS / "nemotron-3-nano-30b-a3b.json").read_text())
    text = _text("nemotron-3-nano-30b-a3b")
    first = text.splitlines()[0]
    assert "hybrid" in first and "Mamba-2" in first
    assert f"{c['layers_block_type'].count('mamba')} Mamba-2" in first
    per_layer = next(line for line in text.splitlines() if line.startswith("FLOPs of one"))
    assert "attention layer" in per_layer


def _tflop(s: str) -> float:
    return float(s.replace(",", ""))


def test_whole_model_line_sums_to_its_total():
    """The terms named on the whole-model line add up to its total (a hybrid's mixers included)."""
    line = next(x for x in _text("nemotron-3-nano-30b-a3b").splitlines() if x.startswith("Prefill FLOPs"))
    total, *terms = (_tflop(v) for v in re.findall(r"([\d,.]+) TFLOP", line))
    assert abs(sum(terms) - total) <= 0.05 * len(terms)  # each term rounded to 0.1 TFLOP


def test_windowed_model_labels_growth_rate_and_gives_the_average_at_t():
    """gpt-oss-120b: 18 sliding (128) + 18 full layers; at T = 8,192 the average per token is the
    cache at T over T (oracle: the cache's own bytes line), below the growth rate."""
    text = _text("gpt-oss-120b")
    lines = text.splitlines()
    grow = next(x for x in lines if "per token, growth rate" in x)
    avg = next(x for x in lines if "average per token at T" in x)
    every = next(x for x in lines if x.strip().startswith("all B sequences"))
    cache = int(every.split()[3].replace(",", ""))
    assert int(avg.split()[5].replace(",", "")) == cache // 8192
    assert int(avg.split()[5].replace(",", "")) < int(grow.split()[4].replace(",", ""))


def _description(name: str) -> str:
    return next(x for x in _text(name).splitlines() if x.startswith(("Qwen", "deepseek", "openai", "meta")))


def test_all_moe_description_gives_the_expert_width_not_an_unused_d_ff():
    """Qwen3-30B-A3B: every layer has experts (moe_intermediate_size 768); its intermediate_size
    (6,144) is no layer's width, so the line names the experts' width and no dense layer."""
    c = json.loads((CONFIGS / "qwen3-30b-a3b.json").read_text())
    line = _description("qwen3-30b-a3b")
    assert f"{c['intermediate_size']:,}" not in line
    assert f"{c['moe_intermediate_size']:,}" in line and "no dense layer" in line


def test_moe_with_dense_layers_gives_both_widths():
    """DeepSeek-V3: the first first_k_dense_replace layers are dense (intermediate_size wide), the
    rest hold experts of moe_intermediate_size."""
    c = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    line = _description("deepseek-v3")
    assert f"d_ff={c['intermediate_size']:,}" in line and f"{c['first_k_dense_replace']} dense layers" in line
    assert f"{c['moe_intermediate_size']:,}" in line


def test_per_layer_block_names_the_layer_it_shows():
    """DeepSeek-V3: 61 layers, all attention, the first first_k_dense_replace dense: the block
    shows one of the L − 3 = 58 layers with experts, and says so (not '61 of 61; the layers differ')."""
    c = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    title = next(x for x in _text("deepseek-v3").splitlines() if x.startswith("FLOPs of one"))
    n = c["num_hidden_layers"] - c["first_k_dense_replace"]
    assert f"with its experts ({n} such of {c['num_hidden_layers']} layers" in title
