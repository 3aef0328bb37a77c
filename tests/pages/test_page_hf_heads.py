"""AppTest of the Hugging Face heads page: the seeded demo model and a tiny GPT-2 folder written
here (no download). Oracle: the model's own probabilities from ``output_attentions=True``."""

import json

import numpy as np
import pytest
import torch
import transformers
from apptest_helpers import badges, chart, metric, ok, plotly_array

from attn_core.views import hf_heads as explore

PAGE = "pages/hf_heads.py"
TOL = 1e-5  # float32 model vs float64 recomputation drawn as float32: rounding only


def own_maps(model, ids):
    with torch.no_grad():
        return [a[0].numpy() for a in model(torch.tensor([ids]), output_attentions=True).attentions]


def grid(at):
    return [plotly_array(t["z"]) for t in chart(at, "Layer")["data"]]


def test_demo_opens_checked_and_follows_the_layer_slider(app):
    at = app(PAGE, hf_src="demo")
    ok(at)
    assert any(
        "✓ matches attn_core.attention (GQA 4:2, sliding window 8) vs the model's own" in b
        for b in badges(at)
    )
    model = explore.load(explore.DEMO).model
    ids = [int(x) for x in explore.DEMO_TEXT.split()]
    own = own_maps(model, ids)
    for z, ref in zip(grid(at), own[0], strict=True):
        np.testing.assert_allclose(z, ref, atol=TOL, rtol=0)
    at.slider(key="hf_layer").set_value(1).run()
    ok(at)
    assert chart(at, "Layer 1")["layout"]["annotations"][0]["text"] == "L1H0"  # heads named by their layer
    for z, ref in zip(grid(at), own[1], strict=True):
        np.testing.assert_allclose(z, ref, atol=TOL, rtol=0)
    # 2 (K, V) · 2 layers · 2 KV heads · 16 dims · min(16 tokens, window 8) · 4 bytes
    assert metric(at, "K and V of every layer for 16 tokens") == "4,096 bytes (4.0 KiB)"


@pytest.mark.parametrize(
    ("text", "message"), [("1, x", "whole numbers"), ("1 2 100", "outside the vocabulary")]
)
def test_bad_ids_give_a_message(app, text, message):
    at = app(PAGE, hf_src="demo")
    at.text_area(key="hf_text").input(text).run()
    assert not at.exception and message in at.error[0].value


def test_a_local_gpt2_folder_and_a_missing_one(app, tmp_path, monkeypatch):
    monkeypatch.setenv(explore.MODEL_DIRS_ENV, str(tmp_path))  # the folder this server may load from
    config = transformers.GPT2Config(
        n_layer=3,
        n_head=2,
        n_embd=16,
        n_positions=64,
        vocab_size=50,
        bos_token_id=0,
        eos_token_id=0,
        initializer_range=0.3,
    )
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    model.save_pretrained(tmp_path / "gpt2-tiny")
    at = app(PAGE, hf_src="local folder or hub id")
    at.text_input(key="hf_path").input(str(tmp_path / "gpt2-tiny")).run()
    at.text_area(key="hf_text").input("5 6 7 5 6 7 5").run()
    ok(at)
    assert any("✓ matches" in b for b in badges(at))
    own = own_maps(model, [5, 6, 7, 5, 6, 7, 5])
    for z, ref in zip(grid(at), own[0], strict=True):
        np.testing.assert_allclose(z, ref, atol=TOL, rtol=0)
    at.text_area(key="hf_text").input(" ".join(["1"] * 65)).run()  # GPT-2 here has 64 positions
    assert not at.exception and "give 1…64 (the model's positions)" in at.error[0].value
    at.text_area(key="hf_text").input("5 6 7 5 6 7 5").run()
    at.button[0].click().run()  # "Open this model in the Cost calculator": the config goes with it
    assert json.loads(at.session_state["_keep_co_paste"])["n_embd"] == 16
    at = app(PAGE, hf_src="local folder or hub id")
    at.text_input(key="hf_path").input(str(tmp_path / "missing")).run()
    assert not at.exception and "there is no folder" in at.error[0].value


def test_folders_outside_the_model_roots_are_refused_alike(app, tmp_path, monkeypatch):
    """A visitor may not load, nor probe for, folders elsewhere on the server: an existing folder
    and a missing one get the same refusal."""
    monkeypatch.setenv(explore.MODEL_DIRS_ENV, str(tmp_path / "models"))
    messages = []
    for source in (
        "/etc",
        "/no/such/folder",
        str(tmp_path),
        "../../..",
        "~/.ssh",
        str(tmp_path / "models/../x"),
    ):
        at = app(PAGE, hf_src="local folder or hub id")
        at.text_input(key="hf_path").input(source).run()
        assert not at.exception
        messages.append(at.error[0].value)
    assert all("only from its model folders" in m for m in messages)
    assert len({m for m in messages}) == 1  # the same words whether the folder exists or not


def test_a_visitors_models_are_let_go_after_the_page_keeps_its_last_two(app, tmp_path, monkeypatch):
    """The page keeps the last MAX_CACHED models visitors opened; the first of three must then be
    freed, not held by the shared view cache (which counts a model as no bytes). Oracle: a weak
    reference to the first model, dead after a full collection."""
    import gc
    import weakref

    monkeypatch.setenv(explore.MODEL_DIRS_ENV, str(tmp_path))
    config = transformers.GPT2Config(
        n_layer=1, n_head=2, n_embd=16, n_positions=64, vocab_size=100, bos_token_id=0, eos_token_id=0
    )
    at = app(PAGE, hf_src="local folder or hub id")
    first = None
    for name in ("a", "b", "c"):
        transformers.AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path / name)
        at.text_input(key="hf_path").input(str(tmp_path / name)).run()
        ok(at)
        first = first or weakref.ref(explore._CACHE[str(tmp_path / "a")].model)
    assert explore.MAX_CACHED == 2 and str(tmp_path / "a") not in explore._CACHE
    gc.collect()
    assert first() is None, "the first visitor's model is still held after the page let it go"


def word_tokenizer(vocab_size: int) -> transformers.PreTrainedTokenizerFast:
    """A tiny word-level tokenizer (its own words, the rest unknown), written with a model folder."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["[UNK]", "the", "a", "of", "and", "to", "in", "it", "is", "was"][:vocab_size]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")


def test_a_model_without_a_tokenizer_switches_the_long_box_to_token_ids(app, tmp_path, monkeypatch):
    """After a model with a tokenizer (the long box holds prose), a folder without one: the long box
    holds token ids that the model reads (the ids of the sample, checked here by parsing them), no
    error, and the page says why."""
    monkeypatch.setenv(explore.MODEL_DIRS_ENV, str(tmp_path))
    config = transformers.GPT2Config(
        n_layer=1, n_head=2, n_embd=16, n_positions=64, vocab_size=50, bos_token_id=0, eos_token_id=0
    )
    model = transformers.AutoModelForCausalLM.from_config(config)
    model.save_pretrained(tmp_path / "with-tokenizer")
    word_tokenizer(50).save_pretrained(tmp_path / "with-tokenizer")
    model.save_pretrained(tmp_path / "ids-only")
    at = app(PAGE, hf_src="local folder or hub id")
    at.text_input(key="hf_path").input(str(tmp_path / "with-tokenizer")).run()
    ok(at)
    assert next(a.value for a in at.text_area if a.key.startswith("hf_long")).startswith(
        "PRIDE AND PREJUDICE"
    )
    at.text_input(key="hf_path").input(str(tmp_path / "ids-only")).run()
    ok(at)
    assert not at.error
    box = next(a for a in at.text_area if a.key.startswith("hf_long"))
    ids = [int(x) for x in box.value.split()]
    assert ids and all(0 <= i < 50 for i in ids)
    assert any("no tokenizer" in c.value and "token ids" in c.value for c in at.caption)
