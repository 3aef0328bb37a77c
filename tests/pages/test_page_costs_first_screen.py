"""The Cost page's first screen says what kind of model it sizes (dense; a mixture of experts, k of
E, with the expert width; a hybrid, with its mixers), shows one decode figure with its conditions
(the cards' reconciliation in an expander), speaks one dtype, tells visitors nothing meant for
developers, and names pasted configs by their own name.

Oracles: the presets' config.json files read here (num_experts, num_experts_per_tok,
moe_intermediate_size, layer kinds), and the sidebar's own settings."""

import json
from pathlib import Path

import pytest
from apptest_helpers import open_section

PAGE = "pages/costs.py"
MODELS = Path(__file__).resolve().parents[2] / "assets" / "models"


def first_screen(at) -> str:
    """The text above the section picker: the model card, its caption, the headline metrics."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [f"{m.label} {m.value} {m.proto.help}" for m in at.metric]
    return "\n".join(parts)


def card(at) -> str:
    return next(m.value for m in at.markdown if "query heads" in m.value)


def test_a_mixture_of_experts_says_so_with_k_of_e_and_the_expert_width(app):
    config = json.loads((MODELS / "qwen3-30b-a3b.json").read_text())
    at = app(PAGE, co_model="qwen3-30b-a3b")
    assert not at.exception
    text = card(at)
    k, E, width = config["num_experts_per_tok"], config["num_experts"], config["moe_intermediate_size"]
    assert "mixture of experts" in text.lower()
    assert f"{k} of {E} experts" in text and f"expert width {width:,}" in text
    # every layer has experts: the dense width of the config is used by no layer, so it is not shown
    assert f"d_ff = {config['intermediate_size']:,}" not in text


def test_a_dense_model_says_dense(app):
    at = app(PAGE)  # llama-2-7b
    assert "dense" in card(at) and "experts" not in card(at)


def test_a_hybrid_names_its_mixers(app):
    at = app(PAGE, co_model="qwen3-next-80b-a3b")
    text = card(at)
    assert "hybrid" in text.lower() and "Gated DeltaNet" in text and "full attention" in text


def test_one_decode_figure_with_its_conditions_and_the_cards_count_in_an_expander(app):
    at = app(PAGE, co_model="qwen3-30b-a3b", co_B=4, co_T=8192)
    decode = next(m for m in at.metric if m.label.startswith("decode step"))
    conditions = decode.proto.help
    assert "B = 4" in conditions and "T = 8,192" in conditions and "fp16" in conditions
    assert "uniform routing" not in conditions  # the second decode figure lives in the expander
    folded = [m.value for e in at.expander if "cards count" in e.proto.label for m in e.markdown]
    assert any("As the cards count it" in text for text in folded)
    outside = [m.value for m in at.markdown if m.value not in folded] + [c.value for c in at.caption]
    assert not any("As the cards count it" in text for text in outside)


def page_words(at) -> str:
    """What the page says in its own words: published runs are left out (their names and precisions
    are facts of other people's runs, `gptfast-7b-bf16`, not this page's vocabulary)."""
    own = [line for line in first_screen(at).splitlines() if not line.startswith("Published on this model")]
    return "\n".join(own + [str(list(d.value.columns)) for d in at.dataframe])


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_one_dtype_vocabulary_per_view(app, dtype):
    at = app(PAGE, co_dtype=dtype, co_section="whole")
    other = "bf16" if dtype == "fp16" else "fp16"
    shown = page_words(at)
    assert other not in shown, [line for line in shown.splitlines() if other in line][:3]
    at = open_section(at, "Serving & decode", key="co_section", errors_allowed=True)
    shown = page_words(at)
    assert other not in shown, [line for line in shown.splitlines() if other in line][:3]


def test_no_instructions_for_developers(app):
    at = app(PAGE, co_section="whole")
    everything = "\n".join(
        [m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info]
    )
    assert "commit" not in everything.lower() and "assets/bench" not in everything


def paste(at, config: dict):
    at.radio(key="co_src").set_value("paste or upload config.json").run()
    at.text_area(key="co_paste").set_value(json.dumps(config)).run()
    assert not at.exception
    return card(at).split("**")[1]  # the name is the card's first bold text


def test_a_pasted_config_is_named_by_its_own_name_and_two_pastes_never_share_one(app):
    llama = json.loads((MODELS / "llama-2-7b.json").read_text())
    at = app(PAGE)
    assert paste(at, llama) == llama["_name_or_path"]
    unnamed = {k: v for k, v in llama.items() if k != "_name_or_path"}
    first = paste(at, {**unnamed, "architectures": ["LlamaForCausalLM"]})
    assert first == "LlamaForCausalLM"
    second = paste(at, {**unnamed, "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 16})
    assert second != first and second.startswith("LlamaForCausalLM")
    assert paste(at, {**unnamed, "architectures": ["LlamaForCausalLM"]}) == first  # the same paste again
