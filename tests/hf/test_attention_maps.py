"""Hugging Face models (attn_core.hf.attention_maps) on tiny random-weight configs written here, no download:
GPT-2, Llama with GQA and rotary, Mistral with a sliding window. Oracle: the model's own eager
probabilities from ``output_attentions=True`` (a separate forward, not the capture)."""

import math

import pytest
import torch
import transformers
from conftest import hf_model

from attn_core.attention import attention
from attn_core.heads import uniform_entropy
from attn_core.hf import attention_maps as hf
from attn_core.hf.capture import capture
from attn_core.hf.loading import load
from attn_core.hf.token_ids import MAX_TOKENS, parse_ids

T = 12
WINDOW = 4


def configs():
    common = {"vocab_size": 64, "initializer_range": 0.3}  # peaky maps: a wrong mask shows
    return {
        "gpt2": transformers.GPT2Config(
            n_layer=2, n_head=4, n_embd=32, n_positions=64, bos_token_id=0, eos_token_id=0, **common
        ),
        "llama-gqa": transformers.LlamaConfig(
            hidden_size=32,
            num_attention_heads=4,
            num_key_value_heads=2,
            num_hidden_layers=2,
            intermediate_size=64,
            **common,
        ),
        "mistral-window": transformers.MistralConfig(
            hidden_size=32,
            num_attention_heads=4,
            num_key_value_heads=1,
            num_hidden_layers=2,
            intermediate_size=64,
            sliding_window=WINDOW,
            **common,
        ),
    }


@pytest.fixture(scope="module", params=["gpt2", "llama-gqa", "mistral-window"])
def folder(request, tmp_path_factory):
    torch.manual_seed(0)
    model = hf_model(configs()[request.param], device="cpu")
    path = tmp_path_factory.mktemp(request.param)
    model.save_pretrained(path)
    return request.param, path


def ids():
    return torch.randint(0, 64, (1, T), generator=torch.Generator().manual_seed(1))


def test_recomputed_maps_match_the_models_own_probabilities(folder):
    name, path = folder
    loaded = load(str(path))
    assert loaded.tokenizer is None and loaded.n_params == sum(p.numel() for p in loaded.model.parameters())
    view = hf.recompute(loaded.model, ids())
    with torch.no_grad():
        own = loaded.model(ids(), output_attentions=True).attentions  # separate forward
    assert len(view.maps) == len(own) == 2
    for P, A, tol in zip(view.maps, own, view.tol, strict=True):
        assert P.shape == (4, T, T)
        assert float((P - A[0].double()).abs().max()) <= tol < 1e-4
    assert max(d / t for d, t in zip(view.max_abs_diff, view.tol, strict=True)) <= 1
    # the mask we built: causal, and in the window only for Mistral
    blocked = ~hf.allowed_mask(T, WINDOW if name == "mistral-window" else None)
    assert all(float(P[:, blocked].abs().max()) == 0 for P in view.maps)
    assert view.sliding_window == (WINDOW if name == "mistral-window" else None)
    # KV cache at this length: 2 (K and V) · layers · KV heads · head dim · tokens kept · 4 bytes
    # (float32); a sliding window keeps only its last WINDOW tokens
    kv_heads = {"gpt2": 4, "llama-gqa": 2, "mistral-window": 1}[name]
    kept = WINDOW if name == "mistral-window" else T
    assert view.n_kv_heads == kv_heads and view.kv_cache_bytes == 2 * 2 * kv_heads * 8 * kept * 4
    assert len(view.rank_one) == 3 and all(0 < r <= 1 for r in view.rank_one)
    assert all(0 <= s <= 1 for s in view.sink_share)


def test_a_wrong_mask_or_scale_is_caught(folder):
    name, path = folder
    loaded = load(str(path))
    records, _ = capture(loaded.model, ids())
    c = records[1]
    q, k = c.q.double(), c.k.double()
    # the slips: Mistral's window forgotten, or a window the other models do not have
    window = None if name == "mistral-window" else T // 2
    for mask, scale in [(hf.allowed_mask(T, window), c.scale), (hf.allowed_mask(T, c.sliding_window), 1.0)]:
        wrong = attention(q, k, k, mask, scale=scale).weights
        assert float((wrong - c.weights.double()).abs().max()) > 100 * hf.tolerance(c)


def test_entropy_and_sink_against_a_direct_computation(folder):
    _, path = folder
    model = load(str(path)).model
    view = hf.recompute(model, ids())
    with torch.no_grad():
        A = model(ids(), output_attentions=True).attentions[0][0].double()  # (H, T, T)
    rows = A[:, 1:]
    assert view.sink_share[0] == pytest.approx(float(rows[..., 0].mean()), abs=1e-5)
    H = -(rows * rows.clamp_min(1e-300).log()).sum(-1).mean()
    assert view.entropy[0] == pytest.approx(float(H), abs=1e-4)
    assert view.entropy[0] <= uniform_entropy(T) + 1e-9  # no causal row beats uniform
    assert uniform_entropy(3) == pytest.approx((math.log(2) + math.log(3)) / 2)


def test_caps_and_bad_input_are_explained(folder, tmp_path):
    _, path = folder
    with pytest.raises(ValueError, match="over this page's cap"):
        load(str(path), max_params=1000)
    with pytest.raises(ValueError, match="there is no folder"):
        load(str(tmp_path / "no-such-model"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="could not load the folder"):
        load(str(empty))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        parse_ids("1, 2, 64", 64)
    with pytest.raises(ValueError, match="whole numbers"):
        parse_ids("1, two", 64)
    with pytest.raises(ValueError, match=f"1…{MAX_TOKENS}"):
        parse_ids(" ".join(["1"] * (MAX_TOKENS + 1)), 64)
    assert parse_ids("3, 4 5", 64).tolist() == [[3, 4, 5]]


def test_a_corrupt_safetensors_header_is_named(folder, tmp_path):
    """A weights file whose header is not what safetensors expects: the message says what is wrong
    (safetensors' own words), not just an exception's class name."""
    import json
    import shutil
    import struct

    _, path = folder
    broken = tmp_path / "broken"
    shutil.copytree(path, broken)
    header = json.dumps({"lm_head.weight": {"dtype": "F32"}}).encode()  # no shape, no offsets
    (broken / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    with pytest.raises(ValueError, match=r"could not load the folder .*header") as failed:
        load(str(broken))
    assert "SafetensorError" not in str(failed.value)
