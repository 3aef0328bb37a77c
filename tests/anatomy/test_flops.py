"""Forward FLOPs counted from the model itself (attn_core/anatomy/flops.py) against a hand count
from each config's dimensions, written here, and the formulas held against them (check.py).

The oracle: 2 FLOPs per multiply-add of each nn.Linear (2·T·in·out), 4·h·d_h per query–key pair
(QKᵀ and PV) over the whole T × T rectangle in prefill and T + 1 keys at a decode step, and a
mixture of experts at exactly k of its E experts per token. T and P are odd and unequal, so a
count that swaps them or drops the + 1 fails."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers", reason="the model-derived path needs transformers")

from attn_core.anatomy.build import build_on_meta, text_config
from attn_core.anatomy.compare import compare_config
from attn_core.anatomy.derive import derive
from attn_core.anatomy.flops import model_flops
from attn_core.anatomy.parts import param_parts

T, P = 7, 5  # prompt tokens, tokens cached at the decode step
d, h, kv, dh, V = 64, 4, 2, 16, 128
LLAMA = dict(
    model_type="llama",
    hidden_size=d,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=h,
    num_key_value_heads=kv,
    vocab_size=V,
    tie_word_embeddings=False,
)
QWEN3_MOE = dict(
    model_type="qwen3_moe",
    hidden_size=d,
    intermediate_size=96,
    moe_intermediate_size=32,
    num_experts=8,
    num_experts_per_tok=2,
    num_hidden_layers=2,
    num_attention_heads=h,
    num_key_value_heads=kv,
    head_dim=dh,
    vocab_size=V,
    tie_word_embeddings=False,
)
QWEN3_NEXT = dict(
    model_type="qwen3_next",
    hidden_size=d,
    intermediate_size=96,
    moe_intermediate_size=32,
    shared_expert_intermediate_size=48,
    num_experts=4,
    num_experts_per_tok=2,
    num_hidden_layers=4,
    num_attention_heads=h,
    num_key_value_heads=kv,
    head_dim=dh,
    vocab_size=V,
    linear_num_value_heads=4,
    linear_num_key_heads=2,
    linear_key_head_dim=16,
    linear_value_head_dim=8,
    full_attention_interval=4,
    tie_word_embeddings=False,
)


def _count(config, t=T, p=P):
    cfg = text_config(config)
    model = build_on_meta(cfg)
    return model_flops(cfg, model, param_parts(model, cfg).experts, t, p)


def _attention(tokens, q_width=h * dh, gate=False):
    """Q (twice as wide with an output gate), K, V, O maps over ``tokens`` tokens."""
    return 2 * tokens * d * ((2 if gate else 1) * q_width + 2 * kv * dh + q_width)


def test_llama_flops_are_the_hand_count():
    f = _count(LLAMA)
    ff = 96
    for layer in f.prefill:
        assert layer == {
            "attention projections": _attention(T),
            "attention core": 4 * h * dh * T * T,
            "mlp": 2 * T * 3 * d * ff,
        }
    for layer in f.decode:
        assert layer == {
            "attention projections": _attention(1),
            "attention core": 4 * h * dh * (P + 1),
            "mlp": 2 * 3 * d * ff,
        }
    assert (f.head_prefill, f.head_decode) == (2 * T * d * V, 2 * d * V)
    assert f.counted_by == "the meta forward"


def test_moe_experts_count_at_k_of_e():
    """The meta forward's routing is on meta data: the experts must count k·T times one expert
    (gate, up, down: 3·d·F), not 0 (grouped_mm, uncounted) nor E·T."""
    f = _count(QWEN3_MOE)
    E, k, F = 8, 2, 32
    for layer in f.prefill:
        assert layer["routed experts"] == 2 * k * T * 3 * d * F
        assert layer["router"] == 2 * T * d * E
    for layer in f.decode:
        assert layer["routed experts"] == 2 * k * 3 * d * F
    assert compare_config(QWEN3_MOE).agrees, compare_config(QWEN3_MOE).lines()


def test_qwen3_next_hybrid_flops():
    f = _count(QWEN3_NEXT)
    Hk, Hv, dk, dv, k, F, Fs = 2, 4, 16, 8, 2, 32, 48
    maps = 2 * T * (d * (2 * Hk * dk + 2 * Hv * dv) + d * 2 * Hv + Hv * dv * d)  # qkvz, ba, out
    moe = {
        "routed experts": 2 * k * T * 3 * d * F,
        "shared experts": 2 * T * (3 * d * Fs + d),  # + its gate
        "router": 2 * T * d * 4,
    }
    for layer in f.prefill[:3]:
        assert layer["mixer projections"] == maps
        assert layer["mixer core"] > 0  # the chunked delta rule's products (torch's fallback)
        assert {p: layer[p] for p in moe} == moe
    assert f.prefill[3] == {
        "attention projections": _attention(T, gate=True),
        "attention core": 4 * h * dh * T * T,
        **moe,
    }


def test_a_differing_part_is_flagged_with_both_figures():
    """Qwen3-Next's core: the formulas count the delta rule's ideal chunked products, transformers'
    torch fallback pads the chunk to 64 tokens: the check must name it, never agree silently."""
    check = compare_config(QWEN3_NEXT)
    flagged = [x for x in check.differences if x.unit == "FLOPs"]
    assert any("linear mixer core" in x.what for x in flagged)
    counted = derive(QWEN3_NEXT).flops.total("prefill")
    core = next(x for x in flagged if "prefill" in x.what and "core" in x.what)
    assert core.derived == counted["mixer core"] and core.analytic != core.derived
    assert not any("attention" in x.what or "experts" in x.what for x in flagged), [x.text for x in flagged]


def test_llama_check_agrees_on_flops():
    check = compare_config(LLAMA)
    assert not [x.text for x in check.differences if x.unit == "FLOPs"]
    assert (
        derive(LLAMA).to_json()["flops"]["prefill_by_part"]["head"] == 2 * 16 * d * V
    )  # the anatomy's T = 16


def test_gpt2_conv1d_maps_count_as_projections_not_core():
    """GPT-2's maps are Conv1D (a 2-D weight run by addmm), not nn.Linear: they are projections.
    Hand count: c_attn d → 3d and c_proj d → d; the core 4·d per pair (h·d_h = d)."""
    gpt2 = dict(model_type="gpt2", n_embd=d, n_head=h, n_layer=1, n_positions=32, vocab_size=V, n_inner=96)
    (layer,) = _count(gpt2).prefill
    assert layer["attention projections"] == 2 * T * d * (3 * d + d)
    assert layer["attention core"] == 4 * d * T * T
    assert layer["mlp"] == 2 * T * 2 * d * 96
    assert compare_config(gpt2).agrees


def test_mla_decodes_naive_in_transformers_and_the_check_says_so():
    """transformers' DeepSeek-V3 re-projects all P + 1 latents at a decode step (naive MLA); the
    formulas count the absorbed form. Hand count of the naive step per layer: q d → h(n + r),
    the latent d → r_kv + r, its up-projection r_kv → h(n + v) over P + 1 tokens, o h·v → d,
    the MLP 3·d·ff, and P + 1 pairs of 2h(n + r + v)."""
    r_kv, rope, nope, v, ff = 32, 8, 16, 16, 96
    ds = dict(
        model_type="deepseek_v3",
        hidden_size=d,
        intermediate_size=ff,
        num_hidden_layers=1,
        num_attention_heads=h,
        num_key_value_heads=h,
        kv_lora_rank=r_kv,
        q_lora_rank=None,
        qk_rope_head_dim=rope,
        qk_nope_head_dim=nope,
        v_head_dim=v,
        first_k_dense_replace=1,
        n_routed_experts=4,
        num_experts_per_tok=2,
        vocab_size=V,
        tie_word_embeddings=False,
    )
    (layer,) = _count(ds).decode
    maps = d * h * (nope + rope) + d * (r_kv + rope) + (P + 1) * r_kv * h * (nope + v) + h * v * d
    assert layer["attention projections"] == 2 * maps
    assert layer["attention core"] == (P + 1) * 2 * h * (nope + rope + v)
    assert layer["mlp"] == 2 * 3 * d * ff
    check = compare_config(ds)
    assert check.agrees and check.differences  # not a misread, and not silent
    assert all("naive form" in x.convention for x in check.differences)


def test_llama4_runs_every_expert_and_the_check_says_so():
    """transformers' Llama 4 runs all E routed experts on every token (scores zero the unchosen).
    Hand count: E · 2·T·3·d·ff_expert; the formulas' k of E is a convention, noted, not a misread."""
    E, ff_e = 4, 32
    l4 = dict(
        model_type="llama4_text",
        hidden_size=d,
        intermediate_size=ff_e,
        intermediate_size_mlp=96,
        num_hidden_layers=1,
        num_attention_heads=h,
        num_key_value_heads=kv,
        head_dim=dh,
        num_local_experts=E,
        num_experts_per_tok=1,
        interleave_moe_layer_step=1,
        vocab_size=V,
        tie_word_embeddings=False,
    )
    (layer,) = _count(l4).prefill
    assert layer["routed experts"] == E * 2 * T * 3 * d * ff_e
    check = compare_config(l4)
    assert check.agrees and any("every routed expert" in (x.convention or "") for x in check.differences)


def test_a_map_applied_through_its_weight_counts_as_a_projection():
    """Jamba's Mamba mixer applies dt_proj as ``weight @ x``: the counter books it on the mixer.
    Hand count of the mixer's maps: in_proj d → 2·d_in, x_proj d_in → r + 2N, dt_proj r → d_in,
    out_proj d_in → d, each 2·T·in·out."""
    d_in, N, r = 2 * d, 8, 4
    jamba = dict(
        model_type="jamba",
        hidden_size=d,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=h,
        num_key_value_heads=kv,
        mamba_d_state=N,
        mamba_expand=2,
        mamba_dt_rank=r,
        attn_layer_period=2,
        attn_layer_offset=1,
        expert_layer_period=2,
        expert_layer_offset=1,
        num_experts=2,
        vocab_size=V,
        use_mamba_kernels=False,
    )
    mamba = _count(jamba).prefill[0]
    assert mamba["mixer projections"] == 2 * T * (d * 2 * d_in + d_in * (r + 2 * N) + r * d_in + d_in * d)
