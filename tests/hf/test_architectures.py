"""Heads of any architecture: tiny random checkpoints of thirteen transformers architectures, written
here with ``save_pretrained`` (no download), each opened by the Hugging Face page's loader and read
through the attention interface. Oracle: a second, independently loaded copy of each checkpoint run
by transformers with ``attn_implementation="eager"`` and ``output_attentions=True``."""

import dataclasses

import pytest
import torch
import transformers as tf
from apptest_helpers import badges
from conftest import hf_model

from attn_core.hf import attention_maps as hf
from attn_core.views import hf_heads as explore

VOCAB, T = 64, 12
SMALL = {
    "vocab_size": VOCAB,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "initializer_range": 0.3,  # peaky maps: a slip shows
    "bos_token_id": 0,
    "eos_token_id": 1,
    "pad_token_id": 2,
}
MOE = {"num_experts_per_tok": 2, "head_dim": 8}


def configs() -> dict[str, tf.PretrainedConfig]:
    """Each architecture with what makes its attention different (the name says what)."""
    return {
        "llama": tf.LlamaConfig(**SMALL),
        "mistral-window": tf.MistralConfig(**SMALL, sliding_window=4),
        "qwen2": tf.Qwen2Config(**SMALL),
        "qwen3-qknorm": tf.Qwen3Config(**SMALL, head_dim=8),
        "gemma2-softcap-window": tf.Gemma2Config(
            **SMALL, head_dim=8, sliding_window=4, attn_logit_softcapping=2.0
        ),
        "gemma3-window-qknorm": tf.Gemma3TextConfig(**SMALL, head_dim=8, sliding_window=4),
        "phi3": tf.Phi3Config(**SMALL),
        "olmo2-qknorm": tf.Olmo2Config(**SMALL),
        "granite-scale": tf.GraniteConfig(**SMALL, attention_multiplier=0.05),
        "gpt2": tf.GPT2Config(
            n_layer=2,
            n_head=4,
            n_embd=32,
            vocab_size=VOCAB,
            n_positions=64,
            initializer_range=0.3,
            bos_token_id=0,
            eos_token_id=1,
        ),
        "gpt_neox-partial-rotary": tf.GPTNeoXConfig(
            vocab_size=VOCAB,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            initializer_range=0.3,
            rotary_pct=0.5,
            bos_token_id=0,
            eos_token_id=1,
        ),
        "gpt_oss-sinks": tf.GptOssConfig(**SMALL, **MOE, num_local_experts=4, sliding_window=4),
        "qwen3_next-hybrid": tf.Qwen3NextConfig(
            **{**SMALL, "num_hidden_layers": 4},
            **MOE,
            num_experts=4,
            moe_intermediate_size=16,
            shared_expert_intermediate_size=16,
            linear_num_key_heads=2,
            linear_num_value_heads=2,
            linear_key_head_dim=8,
            linear_value_head_dim=8,
        ),
    }


# what each must report reproducing beyond plain causal attention (read from the capture)
FEATURES = {
    "mistral-window": "sliding window 4",
    "gemma2-softcap-window": "soft-capping 2",
    "gemma3-window-qknorm": "sliding window 4",
    "gpt_oss-sinks": "learned sinks",
}


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    for name, config in configs().items():
        torch.manual_seed(0)
        model = hf_model(config, device="cpu")
        for module in model.modules():  # gpt-oss: sinks that weigh (they start at 0)
            if isinstance(getattr(module, "sinks", None), torch.nn.Parameter):
                module.sinks.data = torch.linspace(-1.0, 3.0, module.sinks.numel())
        model.save_pretrained(root / name)
    return root


@pytest.fixture
def allowed(roots, monkeypatch):
    monkeypatch.setenv(explore.MODEL_DIRS_ENV, str(roots))
    return roots


def ids() -> torch.Tensor:
    return torch.randint(3, VOCAB, (1, T), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("name", list(configs()))
def test_every_architecture_reads_cleanly_against_transformers_eager(allowed, name):
    loaded = explore.load(str(allowed / name))  # the page's loader
    assert loaded.tokenizer is None  # no tokenizer files were saved: token ids, never "0 tokens"
    text = " ".join(map(str, ids()[0].tolist()))
    view = explore.hf_view(loaded, text)
    v = view.view
    assert v.not_reproduced == [], v.not_reproduced  # the red badge's list is empty
    assert all(d <= t for d, t in zip(v.max_abs_diff, v.tol, strict=True))  # the green badge
    if name in FEATURES:
        assert FEATURES[name] in v.features and FEATURES[name] in view.oracle
    oracle = tf.AutoModelForCausalLM.from_pretrained(allowed / name, attn_implementation="eager").eval()
    with torch.no_grad():
        own = oracle(ids(), output_attentions=True).attentions
    own = [a for a in own if a is not None]  # a hybrid's linear layers return none
    assert len(own) == len(v.maps) >= 1
    for P, A, tol in zip(v.maps, own, v.tol, strict=True):
        assert float((P - A[0].double()).abs().max()) <= tol


def test_the_hybrid_reads_only_its_attention_layers(allowed):
    view = explore.hf_view(explore.load(str(allowed / "qwen3_next-hybrid")), "5 6 7 8")
    config = configs()["qwen3_next-hybrid"]
    full = [i for i, kind in enumerate(config.layer_types) if kind == "full_attention"]
    assert view.view.layers == full and view.view.n_decoder_layers == 4


def test_dropping_the_sinks_or_the_softcap_would_show(allowed):
    """What the badge guards: the same capture recomputed without the model's sinks or soft-cap
    differs from the model's probabilities by far more than the tolerance."""
    for name, field in (("gpt_oss-sinks", "sinks"), ("gemma2-softcap-window", "softcap")):
        records, _ = hf.capture(explore.load(str(allowed / name)).model, ids())
        c = records[0]
        wrong = hf.recompute_weights(dataclasses.replace(c, **{field: None}))
        assert float((wrong - c.weights[0].double()).abs().max()) > 100 * hf.tolerance(c)


def test_what_is_not_reproduced_is_named(allowed):
    records, _ = hf.capture(explore.load(str(allowed / "llama")).model, ids())
    c = records[0]
    assert hf.not_reproduced(c) == []
    odd = dataclasses.replace(
        c, unexpressed=("alibi_slopes",), own_allowed=torch.ones(T, T, dtype=torch.bool)
    )
    assert hf.not_reproduced(odd) == [
        "the argument 'alibi_slopes'",
        "the model's own mask (not causal within its window)",
    ]


@pytest.mark.parametrize("name", ["gpt_oss-sinks", "gpt_neox-partial-rotary", "qwen3_next-hybrid"])
def test_the_page_opens_them_with_a_green_badge(app, allowed, name):
    at = app("pages/hf_heads.py", hf_src="local folder or hub id")
    at.text_input(key="hf_path").input(str(allowed / name)).run()
    at.text_area(key="hf_text").input("5 6 7 8 9 5 6 7 8").run()
    assert not at.exception and at.error.len == 0, [e.value for e in at.error]
    shown = badges(at)
    assert any(b.startswith(":green-badge[✓ matches attn_core.attention") for b in shown), shown
    assert not any("NOT REPRODUCED" in b for b in shown)
    if name == "gpt_oss-sinks":
        assert any("learned sinks" in b for b in shown)
    if name == "qwen3_next-hybrid":  # its linear-attention layers have no map, and the page says so
        assert any("Attention layers: 3 of 4" in c.value for c in at.caption)


def test_the_probe_fits_a_short_model_and_matches_output_attentions(allowed):
    """GPT-2 here has 64 positions: the probe shortens to n = 31 (BOS + 2 · 31 = 63 tokens). Its
    scores against a direct computation from transformers' own output_attentions."""
    loaded = explore.load(str(allowed / "gpt2"))
    scores = explore.head_probe(loaded)
    ids, n = scores.ids, scores.period
    assert n == 31 and ids.shape == (1, 63) and torch.equal(ids[0, 1 : n + 1], ids[0, n + 1 :])
    oracle = tf.AutoModelForCausalLM.from_pretrained(allowed / "gpt2", attn_implementation="eager").eval()
    with torch.no_grad():
        A = torch.stack(oracle(ids, output_attentions=True).attentions)[:, 0].double()  # (layer, H, T, T)
    induction = torch.stack([A[:, :, t, t - n + 1] for t in range(n + 1, 2 * n + 1)], -1).mean(-1)
    previous = torch.stack([A[:, :, t, t - 1] for t in range(1, 2 * n + 1)], -1).mean(-1)
    sink = A[:, :, 1:, 0].mean(-1)
    for ours, direct in ((scores.induction, induction), (scores.previous, previous), (scores.sink, sink)):
        torch.testing.assert_close(ours, direct, atol=1e-5, rtol=0)  # float32 model vs float64 recompute
    best = scores.top("previous token", 1)[0]
    layer, head = int(best[0][1 : best[0].index("H")]), int(best[0][best[0].index("H") + 1 :])
    assert best[1] == pytest.approx(float(previous[layer, head])) == pytest.approx(float(previous.max()))


def test_the_probe_sequence_repeats_its_random_half_with_or_without_bos():
    """attn_core.hf.probe.probe_ids: [BOS, r, r] with r drawn from the whole vocabulary, the same
    draw on every call (seeded); without a BOS id the sequence starts at r (still period n)."""
    from attn_core.hf.probe import probe_ids

    with_bos = probe_ids(50_000, bos=1, n=40, batch=3)
    assert with_bos.shape == (3, 81) and (with_bos[:, 0] == 1).all()
    assert torch.equal(with_bos[:, 1:41], with_bos[:, 41:])
    assert torch.equal(with_bos, probe_ids(50_000, bos=1, n=40, batch=3))  # seeded
    assert len(set(with_bos[:, 1:41].flatten().tolist())) > 100  # spread over the vocabulary
    bare = probe_ids(50_000, bos=None, n=40, batch=3)
    assert bare.shape == (3, 80) and torch.equal(bare[:, :40], bare[:, 40:])
    assert torch.equal(bare, with_bos[:, 1:])
