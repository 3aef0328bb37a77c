"""The formulas read what transformers' build says: absent keys at the class's default, and each
model_type's facts (assets/derived/model_types.json) held against a fresh meta build.

Oracle: transformers' own build on the meta device (attn_core/anatomy), never the record itself."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("transformers", reason="the oracle is transformers' own build")

from attn_core.anatomy.compare import compare_config
from attn_core.anatomy.derive import derive
from attn_core.cost.config_reader import from_hf_config, list_built_presets
from attn_core.cost.models_list import models_rows, models_text
from attn_core.cost.params import model_params
from attn_core.cost.type_facts import recorded_facts, recorded_types

TINY = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 256,
}


def _untied_by_default() -> list[str]:
    """Recorded types whose class leaves the head untied when a config does not say (the formulas'
    own fallback is tied): the cases an absent key would be misread in."""
    return [t for t in recorded_types() if recorded_facts(t).tie_word_embeddings is False]


@pytest.mark.parametrize("model_type", ["llama", "qwen2", "mistral", "qwen3"])
def test_absent_tie_key_reads_the_class_default_like_the_build(model_type):
    assert model_type in _untied_by_default()  # the case holds: the class default differs from True
    config = {"model_type": model_type, **TINY}  # tie_word_embeddings left out
    built = derive(config).params_total
    check = compare_config(config)
    assert model_params(check.shape).total == built and check.agrees
    # the torch-free path reads the class's tie default from the recorded facts: a head of its own,
    # as the build has (other absent keys, e.g. Qwen3's head_dim, only the completed config reads)
    assert not from_hf_config(config).tie_embeddings and derive(config).params_by_part.get("head")


def _sample(n: int = 4, seed: int = 7) -> list[str]:
    """A seeded sample of recorded types (the full regeneration is scripts/derive_model_types.py)."""
    return random.Random(seed).sample(recorded_types(), n)


@pytest.mark.parametrize("model_type", _sample())
def test_recorded_facts_equal_a_fresh_build(model_type):
    fresh = derive({"model_type": model_type}).facts
    recorded = recorded_facts(model_type)
    # formulas_cover is the record's verdict on the formulas, not a fact of the module tree
    assert {**fresh.to_json(), "formulas_cover": None} == {**recorded.to_json(), "formulas_cover": None}


def test_models_lists_built_presets_without_false_zeros():
    rows = {r["name"]: r for r in models_rows()}
    for name in list_built_presets():
        row = rows[name]
        for column in ("d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff"):
            assert row[column] != 0
        assert row["d_model"] and row["n_heads"]  # every built preset's config names its width and heads
    text = models_text()
    for line in text.splitlines()[1:]:
        assert " 0 " not in f" {line} "
