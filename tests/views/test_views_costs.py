"""The Cost page's text and tables (attn_core.views.costs_text, attn_core.views.costs_whole) and the
published runs beside its bounds (attn_core.views.published), for Llama 2 7B on one A100 80GB.

Oracles: the cards' formulas worked out here with the model's published sizes (L = 32, d = 4,096,
h = H_kv = 32, d_h = 128, d_ff = 11,008, vocabulary 32,000; card 11's T* = 2d + 1.5·d_ff, card 13's
2·L·H_kv·d_h·b); transformers' Llama 2 7B, DeepSeek-V3 and Gemma 3 built from their config classes
(parameters counted on the meta device, MLA widths, the layer pattern); the published run's own
figure (gpt-fast, 104.9 tokens/s) against the A100 80GB datasheet's 2,039 GB/s, worked out here;
assets/published/runs.json read here with json.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
import transformers
from conftest import hf_numel

from attn_core.cost.config_reader import load_preset
from attn_core.cost.gpus import load_gpu
from attn_core.cost.inputs import Hardware, Workload
from attn_core.cost.report import cost_report
from attn_core.views import costs_card, costs_text, costs_whole, published

ROOT = Path(__file__).resolve().parents[2]
L, D, H, DH, DFF, VOCAB, T = 32, 4096, 32, 128, 11008, 32000, 4096


@cache
def llama():
    return cost_report(
        load_preset("llama-2-7b"),
        Workload(T, 1),
        hardware=Hardware(load_gpu("a100-80gb")),
        preset="llama-2-7b",
    )


def test_headline_kv_cache_and_crossover_are_cards_13_and_11():
    rows = {label: (value, note) for label, value, note in costs_card.headline(llama())}
    per_token = 2 * L * H * DH * 2
    assert rows["KV cache / token"] == ("512 KiB", f"{per_token:,} B")
    assert rows["KV cache, B × T"][0] == "2 GiB" and f"{per_token * T:,} B" in rows["KV cache, B × T"][1]
    assert rows["crossover T*"][0] == f"{2 * D + 1.5 * DFF:,.0f}" == "24,704"
    assert costs_text.kv_formula(llama().model, 2) == f"2·L·H_kv·d_h·b = 2·{L}·{H}·{DH}·2"


def test_the_flops_table_is_card_11_per_layer():
    table, _ = costs_text.flops_table(llama().model, T, 1)
    expected = [8 * T * D * D, 4 * T * T * D, 6 * T * D * DFF]
    assert table["all pairs (FLOP)"] == [f"{x:,}" for x in (*expected, sum(expected))]
    causal_attention = 4 * D * T * (T + 1) // 2  # only the allowed pairs
    assert table["causal (FLOP)"][1] == f"{causal_attention:,}"


def test_parameters_are_what_transformers_builds_for_llama_2_7b():
    config = transformers.LlamaConfig(
        hidden_size=D,
        intermediate_size=DFF,
        num_hidden_layers=L,
        num_attention_heads=H,
        num_key_value_heads=H,
        vocab_size=VOCAB,
        tie_word_embeddings=False,
    )
    total = hf_numel(config)
    rows = costs_whole.params_rows(llama())
    by_part = dict(zip(rows["part"], rows["total"], strict=True))
    assert by_part["total / active"] == f"{total:,}" == "6,738,415,616"
    assert by_part["embedding table"] == by_part["output head"] == f"{VOCAB * D:,}"
    assert all(diff == 0 for _, diff in costs_whole.whole_checks(llama()))
    names, totals, _ = costs_whole.param_parts(llama())
    assert sum(totals) == total and len(names) == len(totals)
    line, _ = costs_card.model_card(llama(), "fp16")
    assert "**MHA**" in line and f"({total:,})" in line and f"d_ff = {DFF:,}" in line


def test_an_mla_model_is_answered_with_its_latent_width():
    c = transformers.DeepseekV3Config()
    r = cost_report(load_preset("deepseek-v3"), Workload(T, 1), hardware=Hardware(load_gpu("a100-80gb")))
    answer = costs_text.mla_answer(r)
    per_head = c.num_attention_heads * (c.qk_nope_head_dim + c.qk_rope_head_dim + c.v_head_dim)
    assert f"keeps {c.kv_lora_rank + c.qk_rope_head_dim} numbers" in answer and f"= {per_head:,}." in answer


def test_gemma_3s_layer_strip_is_transformers_pattern():
    c = transformers.Gemma3TextConfig(num_hidden_layers=62)
    cells = costs_whole.layer_cells(load_preset("gemma-3-27b"))
    assert cells == [t.removesuffix("_attention") for t in c.layer_types]


def test_published_gpt_fast_row_is_priced_against_the_bandwidth_bound():
    band = published.cost_band(llama())
    assert "published by others" in band.title
    rows = band.rows
    i = rows["published"].index('104.9 tokens/s, "1397.31 GB/s"')
    # each step reads the weights but the input embedding table (one row per token) and the KV
    # cache, whose context runs from the 5-token prompt to 204 tokens: 104.5 on average
    read = 2 * (6_738_415_616 - VOCAB * D) + 2 * L * H * DH * 2 * 104.5
    bound = 2039e9 / read
    assert rows["bound"][i] == f"≤ {bound:.1f} tok/s/user"
    assert rows["attained"][i] == f"{100 * 104.9 / bound:.1f}%"
    assert any("gptfast-7b-bf16" in line for line in band.lines)


def test_kernel_rows_are_the_files_kernel_runs_never_above_the_peak():
    runs = json.loads((ROOT / "assets/published/runs.json").read_text())["runs"]
    kernels = published.kernel_rows()
    assert len(kernels.rows["kernel"]) == sum(r["regime"] == "kernel" for r in runs)
    for attained in kernels.rows["attained"]:
        assert attained.startswith("—") or 0 < float(attained.rstrip("%")) <= 100
    assert "published by others" in kernels.title


@pytest.mark.parametrize("batch", [1, 8])
def test_a_batched_what_if_says_the_prefill_rows_are_at_batch_1(batch):
    r = cost_report(load_preset("llama-2-7b"), Workload(T, batch), hardware=Hardware(load_gpu("a100-80gb")))
    lines = published.cost_band(r).lines
    assert any("batch 8" in line for line in lines) is (batch == 8)
    assert ("batched decode" in lines[0]) is (batch == 8)
