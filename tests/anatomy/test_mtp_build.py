"""The formulas' MTP layer (attn_core/cost/params.py mtp_layer_params) against transformers' own MTP
model: `transformers.modeling_layers.MtpModel`, built on the meta device from the main model (each
MTP layer an enorm, an hnorm, a 2d → d map, a decoder layer like the main model's and a post norm;
embedding and head shared with the main model, so not counted). The main model's build has no MTP
layers: they are beside it, which is why the headline total leaves them out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the build needs transformers")

from transformers.modeling_layers import MtpModel

from attn_core.anatomy.build import build_on_meta, text_config
from attn_core.cost.config_reader import from_hf_config
from attn_core.cost.params import mtp_layer_params

CONFIGS = Path(__file__).parents[1] / "data" / "configs"


def _mtp_built(config: dict, n: int) -> int:
    """Parameters of transformers' n MTP layers, plus their routers' score-correction biases
    (buffers in transformers, parameters in the formulas and in DeepSeek's checkpoint)."""
    main = build_on_meta(text_config(config))
    mtp = MtpModel(main, n)
    own = sum(
        p.numel()
        for name, p in mtp.named_parameters()
        if not name.startswith(("embed_tokens", "shared_head"))
    )
    bias = sum(b.numel() for name, b in mtp.named_buffers() if name.endswith("e_score_correction_bias"))
    assert not any(name.startswith("mtp") for name, _ in main.named_parameters())  # not in the main build
    return own + bias


def test_deepseek_v3_mtp_layer_matches_transformers_mtp_model():
    # DeepSeek-V3's own sizes, cut to 5 layers and 16 experts so the build is quick
    c = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    c = c | {"num_hidden_layers": 5, "n_routed_experts": 16, "num_nextn_predict_layers": 2}
    c.pop("quantization_config")
    assert 2 * mtp_layer_params(from_hf_config(c)) == _mtp_built(c, 2)


def _minimax_mtp_layer_by_hand(c: dict) -> int:
    """One MiniMax-M2 MTP layer from its config: a 2d × d map and three d-wide RMS norms, then a
    decoder layer like the last — attention (h·d_h query and output maps, H_kv·d_h key and value
    maps, per-layer QK-norm over all heads), 256 SwiGLU experts, a d × E router, two norms."""
    d, h, kv, dh = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    E, f = c["num_local_experts"], c["intermediate_size"]
    attention = 2 * d * h * dh + 2 * d * kv * dh + h * dh + kv * dh
    return 2 * d * d + 3 * d + attention + E * 3 * d * f + d * E + 2 * d


def test_minimax_m2_sized_by_the_build_names_and_sizes_its_mtp_modules(capsys):
    """MiniMax-M2's type has no expert layout in the formulas, so the build answers; its 3 MTP
    modules of 1 layer (num_mtp_modules × mtp_transformer_layers) are named and sized there too."""
    from attn_core.anatomy.cli import main

    path = CONFIGS / "minimax-m2.json"
    c = json.loads(path.read_text())
    assert main(["cost", "--config", str(path), "--seq-len", "4096", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["sized_by"] == "build"
    assert j["nextn_layers_left_out"] == c["num_mtp_modules"] * c["mtp_transformer_layers"] == 3
    assert j["mtp_params_per_layer"] == _minimax_mtp_layer_by_hand(c)
    assert j["mtp_in_params"] is False
    assert main(["cost", "--config", str(path), "--seq-len", "4096"]) == 0
    text = capsys.readouterr().out
    assert (
        f"next-token prediction (MTP): 3 layer(s) the config declares, {_minimax_mtp_layer_by_hand(c):,}"
        in text
    )


def test_glm45_air_mtp_layer_from_transformers_completed_config(capsys):
    """GLM-4.5-Air's config as written names no MTP key, but transformers' Glm4MoeConfig completes
    it with one (num_nextn_predict_layers = 1, its default; the release has one): the build's
    answer names it. Hand count of one layer: a 2d × d map, three norms, then a decoder layer like
    the last — attention with biased q, k, v maps, 128 routed experts and one shared expert of
    width 1,408, a d × 128 router, two norms."""
    from attn_core.anatomy.build import completed_config
    from attn_core.anatomy.cli import main

    path = CONFIGS / "glm-4.5-air.json"
    c = json.loads(path.read_text())
    assert not any("mtp" in k or "nextn" in k for k in c)
    assert completed_config(c)["num_nextn_predict_layers"] == 1
    d, h, kv, dh = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    E, f = c["n_routed_experts"], c["moe_intermediate_size"]
    attention = 2 * d * h * dh + h * dh + 2 * (d * kv * dh + kv * dh)
    one = 2 * d * d + 3 * d + attention + (E + c["n_shared_experts"]) * 3 * d * f + d * E + 2 * d
    assert main(["cost", "--config", str(path), "--seq-len", "4096", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["sized_by"] == "build"
    assert (j["nextn_layers_left_out"], j["mtp_params_per_layer"]) == (1, one)


def test_a_malformed_mtp_key_leaves_the_builds_answer_standing(tmp_path, capsys):
    """A non-numeric MTP count on a config only the build sizes: the figures still come, without
    an MTP line (oracle: the same answer's parameters as the well-formed config's)."""
    from attn_core.anatomy.cli import main

    c = json.loads((CONFIGS / "minimax-m2.json").read_text()) | {"num_mtp_modules": "three"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(c))
    assert main(["cost", "--config", str(path), "--seq-len", "64", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["sized_by"] == "build" and j["nextn_layers_left_out"] == 0 and j["params"] > 0
