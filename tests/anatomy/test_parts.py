"""Active parameters of a mixture of experts read from transformers' build: the routed experts
found by the module tree's structure (a ModuleList of E experts, or fused experts whose tensors
lead with E), k from the config's own top-k key. Oracle: a hand count from the config, and the
maker's published figure (tests/data/configs/published.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the build needs transformers")

from attn_core.anatomy.build import build_on_meta, text_config
from attn_core.anatomy.parts import param_parts

CONFIGS = Path(__file__).parents[1] / "data" / "configs"


def _parts(name: str):
    cfg = text_config(json.loads((CONFIGS / f"{name}.json").read_text()))
    return param_parts(build_on_meta(cfg), cfg)


def test_gemma4_26b_a4b_fused_experts_are_routed_not_router():
    """Gemma 4's experts sit beside its dense MLP as one fused module (gate_up (E, 2f, d), down
    (E, d, f)) with top_k_experts = 8 of num_experts = 128: hand count from the config."""
    t = json.loads((CONFIGS / "gemma-4-26b-a4b.json").read_text())["text_config"]
    d, f, E, k, L = t["hidden_size"], t["moe_intermediate_size"], t["num_experts"], t["top_k_experts"], 30
    routed = L * E * (2 * f * d + d * f)
    p = _parts("gemma-4-26b-a4b")
    assert p.experts == (k, E)
    assert p.by_part["routed experts"] == routed
    assert p.by_part["router"] == L * (E * d + d + E)  # proj (E, d), scale (d), per-expert scale (E)
    assert p.active == p.total - routed + routed * k // E
    published = json.loads((CONFIGS / "published.json").read_text())["gemma-4-26b-a4b"]
    # 3.8B, rounded to 0.1B: unverified (published.json: read only on a third party's copy of the card)
    assert published["verified"] is False
    assert abs(p.active / published["active"] - 1) < 0.02


@pytest.mark.parametrize("name", ["mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-120b"])
def test_moe_active_near_published(name):
    """Active parameters of released MoE configs within the maker's rounding of their figure."""
    pub = json.loads((CONFIGS / "published.json").read_text())[name]
    p = _parts(name)
    assert p.experts is not None
    assert abs(p.total / pub["total"] - 1) < 0.02
    active = p.active - (p.by_part["embeddings"] if pub.get("active_excludes") == "input embeddings" else 0)
    assert abs(active / pub["active"] - 1) < 0.04


def test_minimax_m2_near_its_makers_230b_and_10b():
    """MiniMax-M2's README: "230 billion total parameters with 10 billion active parameters" (the
    maker's rounding: 230 to the nearest 10B, 10 to the nearest 1B; its 3 MTP layers left out, as
    transformers builds the model without them)."""
    pub = json.loads((CONFIGS / "published.json").read_text())["minimax-m2"]
    p = _parts("minimax-m2")
    assert p.experts == (8, 256)
    assert abs(p.total - pub["total"]) <= 5e9
    assert round((p.active - p.by_part["embeddings"]) / 1e9) == pub["active"] / 1e9


def test_llama4_maverick_near_its_makers_400b_and_17b():
    """Meta's "17B active parameters, 128 experts, 400B total" (rounded to 1B and 100B; with the
    vision tower, as Scout's 109B is): 1 of 128 experts in every second layer, a shared expert."""
    from attn_core.anatomy.towers import tower_params

    config = json.loads((CONFIGS / "llama-4-maverick.json").read_text())
    pub = json.loads((CONFIGS / "published.json").read_text())["llama-4-maverick"]
    p = _parts("llama-4-maverick")
    assert p.experts == (1, 128)
    assert round((p.total + sum(tower_params(config).values())) / 1e11) == pub["total"] / 1e11
    assert round(p.active / 1e9) == pub["active"] / 1e9


def test_glm45_air_near_its_makers_106b_and_12b():
    """Z.ai's README: GLM-4.5-Air "106 billion total parameters and 12 billion active parameters".
    The total to its rounding; the 12B is the active count with neither the input embeddings nor
    the output head (12.2B; with either table it would round to 13B): the maker counts neither."""
    pub = json.loads((CONFIGS / "published.json").read_text())["glm-4.5-air"]
    p = _parts("glm-4.5-air")
    assert p.experts == (8, 128)
    assert abs(p.total / pub["total"] - 1) < 0.01  # 106.85B
    bare = p.active - p.by_part["embeddings"] - p.by_part["head"]
    assert round(bare / 1e9) == pub["active"] / 1e9
    assert round((bare + p.by_part["head"]) / 1e9) == 13
