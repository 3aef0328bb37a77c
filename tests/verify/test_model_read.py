"""`verify` (attn_core.verify.model_read) of a model the formulas do not read (a tiny LFM2, built by transformers' own config
class): its counts come from the model itself and say so (``counts_by`` "model").

The oracle for the prefill's FLOPs is a hand count from the config's dimensions: per layer, 2·T·in·out
for each linear map (LFM2's short-conv block: in_proj d × 3d and out_proj d × d; attention: Q, K,
V, O; the gated MLP: 3·d·F), and 4·h·d_h·T(T + 1)/2 for the causal pairs of an attention layer."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers", reason="the model-derived path needs transformers")

from attn_core.verify.cli import main

d, F, h, kv, V, T, M = 64, 96, 4, 2, 128, 9, 3
LFM2 = dict(model_type="lfm2", hidden_size=d, intermediate_size=F, block_auto_adjust_ff_dim=False,
            num_hidden_layers=3, num_attention_heads=h, num_key_value_heads=kv, vocab_size=V,
            full_attn_idxs=[1], layer_types=["conv", "full_attention", "conv"],
            tie_word_embeddings=False)  # fmt: skip  # both keys, as the shipped preset has them


def test_lfm2_is_verified_with_counts_from_the_model(tmp_path, capsys):
    config, out = tmp_path / "config.json", tmp_path / "out.json"
    config.write_text(json.dumps(LFM2))
    rc = main(["--config", str(config), "--seq-len", str(T), "--decode-steps", str(M), "--json", str(out)])
    assert rc == 0, capsys.readouterr().err
    r = json.loads(out.read_text())
    assert r["counts_by"] == "model" and r["built_by"] == "transformers" and r["layers_built"] == 3
    assert "lfm2" in r["formulas_unread"]
    dh = d // h
    conv = 2 * T * (d * 3 * d + d * d)
    attention = 2 * T * d * (2 * h * dh + 2 * kv * dh) + 4 * h * dh * T * (T + 1) // 2
    mlp = 2 * T * 3 * d * F
    assert r["prefill"]["flops"] == 2 * conv + attention + 3 * mlp
    assert r["prefill"]["measured_ms"] > 0 and r["decode_step"]["bound_ms"] > 0
    assert "counts from the model itself" in capsys.readouterr().out


def test_a_config_neither_reads_is_refused_in_one_line(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "no_such_type", "hidden_size": 8}))
    assert main(["--config", str(config)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_cache_bytes_rescale_all_but_the_fp32_state():
    """The anatomy reads the cache at bf16 (2 bytes); at fp32 it doubles, except the state already
    kept in fp32, which stays as it is."""
    from attn_core.anatomy.derive import derive

    a = derive(LFM2)
    per_token = sum(g.count * g.cache.per_token for g in a.groups)
    fixed = sum(g.count * g.cache.fixed for g in a.groups)
    fp32 = sum(g.count * g.cache.fixed_fp32 for g in a.groups)
    assert per_token > 0 and fixed > 0
    assert a.cache_bytes(T, 2, 4, 3) == 2 * (2 * (per_token * T + fixed - fp32) + fp32)


def test_one_layer_asked_still_reaches_the_first_attention_layer(tmp_path, capsys):
    """Layer 0 is a conv layer: the first layers alone would hold no attention (transformers' mask
    builder fails on them, and they are not the model), so 2 are built. Hand count as above."""
    config, out = tmp_path / "config.json", tmp_path / "out.json"
    config.write_text(json.dumps(LFM2))
    args = ["--config", str(config), "--seq-len", str(T), "--decode-steps", str(M), "--layers", "1"]
    assert main([*args, "--json", str(out)]) == 0, capsys.readouterr().err
    r = json.loads(out.read_text())
    dh = d // h
    attention = 2 * T * d * (2 * h * dh + 2 * kv * dh) + 4 * h * dh * T * (T + 1) // 2
    assert r["layers_built"] == 2
    assert r["prefill"]["flops"] == 2 * T * (d * 3 * d + d * d) + attention + 2 * 2 * T * 3 * d * F
