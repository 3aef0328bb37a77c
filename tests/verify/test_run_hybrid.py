"""``verify`` on a hybrid: Qwen3-Next (Gated DeltaNet in 3 of 4 layers, gated attention, MoE) and
Nemotron-H (Mamba-2, MLP and attention blocks).

Oracles, each independent of the code it checks:
- transformers' own ``Qwen3NextGatedDeltaNet``, ``Qwen3NextAttention`` and ``NemotronHMamba2Mixer``
  given the same weights:
  the same outputs over a prompt and decode steps, and the same state tensors in its own cache
  (``DynamicCache``'s ``LinearAttentionLayer``), byte for byte;
- the modules built on the meta device at the preset's true shapes: their parameters against the
  cost model's ``params()``, ``matrix_weights()`` and ``attention_params``;
- the delta rule's and the SSD scan's products enumerated chunk by chunk by hand
  (`tests/verify/test_run_verify.py`), and torch's FlopCounterMode over the core the probe times;
- the cap's arithmetic redone from the preset's numbers.
The shared checks (counts against the built modules, decode against a full prefill, the bound
below the run) run on a tiny Qwen3-Next and a tiny Nemotron-H in `tests/verify/test_run_verify.py` with the
other kinds.
"""

from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from attn_core.cost.config_keys import ConfigError
from attn_core.cost.config_reader import from_hf_config, load_preset
from attn_core.cost.dtypes import DTYPE_BYTES
from attn_core.cost.layer_config import ATTENTION_KINDS
from attn_core.cost.params import attention_params, expert_params
from attn_core.cost.serving import kv_cache_bytes, state_bytes
from attn_core.kernels.records import DTYPES
from attn_core.verify.counts import MIXER_GEMMS, prefill_counts
from attn_core.verify.deltanet import GatedDeltaNetLayer, delta_core_call
from attn_core.verify.examples import HYBRID, NEMOTRON
from attn_core.verify.layers import ATTENTION_KEYS, MIXERS, STATE_CORES, Attention, build_layers
from attn_core.verify.mamba2 import Mamba2Layer
from attn_core.verify.plan import (
    BUILT_STATE_KINDS,
    VerifyError,
    VerifyRequest,
    cut_shape,
    layer_params,
    plan_build,
    planned_peak,
)
from attn_core.verify.probe import Probe, estimate_ms
from tests.verify.test_run_verify import delta_rule_flops_by_hand, ssd_flops_by_hand

qwen3_next = pytest.importorskip(
    "transformers.models.qwen3_next.modeling_qwen3_next", reason="transformers without Qwen3-Next"
)
nemotron_h = pytest.importorskip(
    "transformers.models.nemotron_h.modeling_nemotron_h", reason="transformers without Nemotron-H"
)
from transformers import DynamicCache, NemotronHConfig, Qwen3NextConfig  # noqa: E402  (after the skips)

T, M, B = 70, 3, 2  # a full 64-token chunk and a partial one
NEXT = load_preset("qwen3-next-80b-a3b")
NEMO = load_preset("nemotron-h-8b")


pytestmark = pytest.mark.usefixtures("small_probe")


def _tiny(dtype: str = "fp32", config: dict = HYBRID):
    shape = from_hf_config(config, name="tiny")
    request = VerifyRequest(seq_len=T, batch=B, decode_steps=M, device="cpu", dtype=dtype)
    plan = plan_build(shape, request)
    return plan, build_layers(plan, request, "cpu")


def _hf_config(shape, layer_type: str) -> Qwen3NextConfig:
    m = shape.state_mixer
    return Qwen3NextConfig(
        hidden_size=shape.d_model,
        num_hidden_layers=1,
        layer_types=[layer_type],
        num_attention_heads=shape.n_heads,
        num_key_value_heads=shape.n_kv_heads,
        head_dim=shape.head_dim,
        linear_num_key_heads=m.n_key_heads,
        linear_num_value_heads=m.n_value_heads,
        linear_key_head_dim=m.key_head_dim,
        linear_value_head_dim=m.value_head_dim,
        linear_conv_kernel_dim=m.conv_kernel,
        vocab_size=shape.vocab_size,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10_000.0,
            "partial_rotary_factor": shape.rotary_dim / shape.head_dim,
        },
    )


def same_as_transformers(ours, theirs, cache, d_model: int, dtype: str):
    """Our linear layer and transformers' own, holding the same weights, give the same output over
    a T-token prompt and M one-token decode steps, and end with the same conv and recurrent state.
    Returns transformers' cache layer."""
    x = torch.randn(B, T + M, d_model, dtype=DTYPES[dtype])
    tol = {"fp32": 1e-5, "bf16": 2e-2}[dtype]
    with torch.inference_mode():
        torch.testing.assert_close(
            ours(x[:, :T], 0, None, None), theirs(x[:, :T], cache_params=cache), rtol=tol, atol=tol
        )
        for t in range(T, T + M):
            torch.testing.assert_close(
                ours(x[:, t : t + 1], t, None, None),
                theirs(x[:, t : t + 1], cache_params=cache),
                rtol=tol,
                atol=tol,
            )
    held = cache.layers[0]
    for mine, hf in (
        (ours.state.conv, held.conv_states[0]),
        (ours.state.recurrent, held.recurrent_states[0]),
    ):
        assert mine.shape == hf.shape and mine.dtype == hf.dtype
        torch.testing.assert_close(mine, hf, rtol=tol, atol=tol)
    return held


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_gated_deltanet_equals_transformers_and_holds_its_cache(dtype):
    """Our layer with transformers' weights: the same output over a prompt (chunked: a full chunk
    and a partial one) and over decode steps (recurrent, from the state), and the same conv and
    recurrent state tensors as transformers' own cache holds — which the cost model sizes to the
    byte (conv at the model dtype, recurrent in fp32). Both run the same torch fallbacks on the
    same numbers, so fp32 agrees to rounding (1e-5); bf16 to its 8-bit mantissa (2e-2)."""
    plan, layers = _tiny(dtype)
    ours = layers.blocks[0].mixer
    assert isinstance(ours, GatedDeltaNetLayer)
    theirs = qwen3_next.Qwen3NextGatedDeltaNet(_hf_config(plan.shape, "linear_attention"), 0)
    weights = {k.removeprefix("core."): v for k, v in ours.state_dict().items()}
    theirs.load_state_dict(weights)  # strict: every name and shape matches
    theirs.to(DTYPES[dtype])
    cache = DynamicCache(config=_hf_config(plan.shape, "linear_attention"))
    held = same_as_transformers(ours, theirs, cache, plan.shape.d_model, dtype)
    b = DTYPE_BYTES[dtype]
    one_layer = cut_shape(plan.shape, [0, 3], None)  # one linear layer, one attention layer
    assert ours.state.nbytes == held.conv_states[0].nbytes + held.recurrent_states[0].nbytes
    assert ours.state.nbytes == state_bytes(one_layer, B, b, 4)


def _nemotron_config(shape) -> NemotronHConfig:
    m = shape.state_mixer
    return NemotronHConfig(
        hidden_size=shape.d_model,
        num_hidden_layers=1,
        hybrid_override_pattern="M",
        mamba_num_heads=m.n_heads,
        mamba_head_dim=m.head_dim,
        n_groups=m.n_groups,
        ssm_state_size=m.d_state,
        conv_kernel=m.conv_kernel,
        chunk_size=m.chunk,
        use_conv_bias=m.conv_bias,
        use_bias=m.proj_bias,
        num_attention_heads=shape.n_heads,
        num_key_value_heads=shape.n_kv_heads,
        head_dim=shape.head_dim,
        vocab_size=shape.vocab_size,
    )


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_mamba2_equals_transformers_and_holds_its_cache(dtype):
    """Our Mamba-2 layer with transformers' weights (Nemotron-H's mixer): the same output over a
    prompt of T = 70 (four full chunks of 16 and a partial one) and over decode steps, and the same
    conv and recurrent state as transformers' own cache holds, sized by the cost model to the byte.
    Same fallbacks on the same numbers: fp32 to rounding (1e-5), bf16 to its mantissa (2e-2)."""
    plan, layers = _tiny(dtype, NEMOTRON)
    ours = layers.blocks[0].mixer
    assert isinstance(ours, Mamba2Layer)
    config = _nemotron_config(plan.shape)
    theirs = nemotron_h.NemotronHMamba2Mixer(config, 0)
    theirs.load_state_dict({k.removeprefix("core."): v for k, v in ours.state_dict().items()})
    theirs.to(DTYPES[dtype])
    cache = DynamicCache(config=config)
    same_as_transformers(ours, theirs, cache, plan.shape.d_model, dtype)
    one_layer = cut_shape(plan.shape, [0, 3], None)  # one Mamba-2 block, one attention block
    assert ours.state.nbytes == state_bytes(one_layer, B, DTYPE_BYTES[dtype], 4)


def test_gated_attention_equals_transformers():
    """The gated attention layer (query and gate per head from one map, QK-norm, rotary over the
    first d_h / 4 channels, o · sigmoid(gate) before O) against transformers' with the same
    weights, over a causal prompt. transformers' norms scale by 1 + w where ours scale by w, and
    its eps is 1e-6 against ours at fp32's machine epsilon: 1e-5 covers both in fp32."""
    plan, layers = _tiny()
    ours = layers.blocks[3].mixer
    assert isinstance(ours, Attention) and ours.gated and plan.shape.rotary_dim == 4
    theirs = qwen3_next.Qwen3NextAttention(_hf_config(plan.shape, "full_attention"), 0)
    q_width, kv = 2 * plan.shape.q_width, plan.shape.kv_width
    Wq, Wk, Wv = ours.qkv.weight.split([q_width, kv, kv])
    theirs.load_state_dict(
        {
            "q_proj.weight": Wq,
            "k_proj.weight": Wk,
            "v_proj.weight": Wv,
            "o_proj.weight": ours.o.weight,
            "q_norm.weight": ours.q_norm.weight - 1,
            "k_norm.weight": ours.k_norm.weight - 1,
        }
    )
    theirs.config._attn_implementation = "eager"
    rope = qwen3_next.Qwen3NextRotaryEmbedding(theirs.config)
    x = torch.randn(B, T, plan.shape.d_model)
    causal = torch.full((T, T), float("-inf")).triu(1)[None, None]  # additive: 0 = may attend
    with torch.inference_mode():
        want, _ = theirs(x, rope(x, torch.arange(T)[None]), causal)
        got = ours(x, 0, layers.cos, layers.sin)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_true_shapes_hold_the_cost_models_parameters():
    """The preset's layers at their true shapes, on the meta device (nothing allocated): the Gated
    DeltaNet layer holds params() with matrix_weights() in its maps, as transformers' layer does;
    the gated attention layer holds attention_params (Q and gate d × 2h·d_h, QK-norms)."""
    config = _hf_config(NEXT, "linear_attention")
    with torch.device("meta"):
        delta = GatedDeltaNetLayer(NEXT, "gdn")
        hf_delta = qwen3_next.Qwen3NextGatedDeltaNet(config, 0)
        attention = Attention(NEXT, "full")
        hf_attention = qwen3_next.Qwen3NextAttention(config, 0)
    m = NEXT.state_mixer
    assert (
        sum(p.numel() for p in delta.parameters())
        == m.params()
        == sum(p.numel() for p in hf_delta.parameters())
    )
    assert sum(p.numel() for p in delta.parameters() if p.ndim == 2) == m.matrix_weights()
    n_attention = sum(p.numel() for p in attention.parameters())
    assert n_attention == attention_params(NEXT).total == sum(p.numel() for p in hf_attention.parameters())
    assert sum(g.k * g.n for g in MIXER_GEMMS["gdn"](NEXT, 1)) == m.matrix_weights()
    assert sum(g.k * g.n for g in MIXER_GEMMS["full"](NEXT, 1)) == attention_params(NEXT).weights
    with torch.device("meta"):  # Nemotron-H's Mamba-2 layer, against transformers' own
        mamba = Mamba2Layer(NEMO, "mamba2")
        hf_mamba = nemotron_h.NemotronHMamba2Mixer(_nemotron_config(NEMO), 0)
    m2 = NEMO.state_mixer
    assert (
        sum(p.numel() for p in mamba.parameters())
        == m2.params()
        == sum(p.numel() for p in hf_mamba.parameters())
    )
    assert sum(p.numel() for p in mamba.parameters() if p.ndim == 2) == m2.matrix_weights()
    assert sum(g.k * g.n for g in MIXER_GEMMS["mamba2"](NEMO, 1)) == m2.matrix_weights()


@pytest.mark.parametrize("tokens", [1, 5, 64, 70, 129, 300])
def test_core_flops_equal_the_hand_count(tokens):
    """The cost model's closed forms (pairs n·C² + r² inside chunks, the state products per token)
    against the products enumerated chunk by chunk, prefill and decode: Gated DeltaNet (C = 64)
    and Mamba-2 (Q = 128)."""
    m = NEXT.state_mixer
    H, dk, dv = m.n_value_heads, m.key_head_dim, m.value_head_dim
    assert m.core_flops(tokens) == delta_rule_flops_by_hand(H, dk, dv, tokens)
    assert m.core_flops(tokens, decode=True) == delta_rule_flops_by_hand(H, dk, dv, tokens, decode=True)
    s = NEMO.state_mixer
    args = (s.n_heads, s.head_dim, s.d_state, s.n_groups, tokens, s.chunk)
    assert s.core_flops(tokens) == ssd_flops_by_hand(*args)
    assert s.core_flops(tokens, decode=True) == ssd_flops_by_hand(*args, decode=True)


def test_the_probed_core_runs_the_counted_products():
    """FlopCounterMode over the core the probe times (a prompt of T tokens): its batched products
    are the hand count over the chunks torch runs (T padded to 2 × 64) less the two UT solves per
    chunk, which torch runs as triangular solves; one decode step runs no batched product."""
    shape = from_hf_config(HYBRID)
    m = shape.state_mixer
    H, dk, dv = m.n_value_heads, m.key_head_dim, m.value_head_dim
    prompt = delta_core_call(shape, T, T, B, torch.float32, "cpu")
    step = delta_core_call(shape, 1, T + 1, B, torch.float32, "cpu")
    for run, want in (
        (prompt, delta_rule_flops_by_hand(H, dk, dv, 128) - 2 * H * 2 * 64 * 64 * (dk + dv)),
        (step, 0),
    ):
        with FlopCounterMode(display=False) as counter:
            out = run()
        by_op = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
        assert by_op.get("aten.bmm", 0) == B * want
        assert out.shape[-1] == m.value_dim and torch.isfinite(out).all()


def test_the_preset_is_cut_to_one_linear_and_one_attention_layer():
    """Qwen3-Next's first attention layer is its 4th; 4 layers of 512 experts are ~24 GiB of fp32,
    so the default 2 GiB builds layers 0 (Gated DeltaNet) and 3 (full attention) with the routed
    experts whose planned peak (weights, cache, activations, expert modules) fits, k and width kept."""
    plan = plan_build(NEXT, VerifyRequest())
    assert plan.layer_indices == (0, 3) and plan.shape.layer_kinds.each(2) == ("gdn", "full")
    assert plan.shape.moe.top_k == 10 and plan.shape.moe.expert_d_ff == 512
    one = expert_params(NEXT, 512) * 4  # one routed expert, fp32
    assert 10 <= plan.experts_built < 512
    assert plan.weight_bytes - plan.peak.weights == 0 and plan.peak_bytes <= 2 * 2**30
    more = cut_shape(NEXT, (0, 3), plan.experts_built + 1)
    grown = planned_peak(more, VerifyRequest(), "cpu")
    assert grown.total > 2 * 2**30 and grown.weights - plan.peak.weights == 2 * (
        one + NEXT.d_model * 4
    )  # + a router row
    assert plan.cache_bytes == kv_cache_bytes(plan.shape, 256 + 8, 1, 4) + state_bytes(plan.shape, 1, 4, 4)
    assert any("layers 0 (Gated DeltaNet) and 3 (full attention) of 48" in n for n in plan.notes)
    asked = plan_build(NEXT, VerifyRequest(layers=1))
    assert asked.layer_indices == (0, 3) and any(
        "the first layer holds no attention" in n for n in asked.notes
    )
    with pytest.raises(VerifyError, match="does not hold the k = 10 routed experts"):
        plan_build(NEXT, VerifyRequest(memory_bytes=2**30 // 4))
    tiny = plan_build(from_hf_config(HYBRID), VerifyRequest())
    assert tiny.layer_indices == (0, 1, 2, 3) and tiny.notes == ()


def test_nemotron_is_cut_to_one_block_of_each_kind():
    """Nemotron-H 8B's first 8 blocks (M-M-M-M*: four Mamba-2, three MLP, the first attention) are
    over 2 GiB of fp32, so verify builds its first Mamba-2, MLP and attention blocks (0, 1, 7)."""
    plan = plan_build(NEMO, VerifyRequest())
    first8 = cut_shape(NEMO, 8, None)
    assert layer_params(first8) * 4 > 2 * 2**30
    assert plan.layer_indices == (0, 1, 7) and plan.shape.layer_kinds.each(3) == ("mamba2", "mlp", "full")
    assert plan.kinds_built == "1 Mamba-2, 1 MLP, 1 full attention"
    assert any("layers 0 (Mamba-2), 1 (MLP) and 7 (full attention) of 52" in n for n in plan.notes)


def test_the_tables_agree():
    """A kind is built when MIXERS has its module and MIXER_GEMMS its products; a linear kind also
    needs its probed core (STATE_CORES), and the plan refuses every other linear kind by name."""
    assert set(MIXERS) == set(MIXER_GEMMS) == set(ATTENTION_KINDS) | set(BUILT_STATE_KINDS)
    assert set(STATE_CORES) == set(BUILT_STATE_KINDS) == {"gdn", "mamba2"}
    assert set(ATTENTION_KEYS) == set(ATTENTION_KINDS)


def test_estimate_adds_the_probed_core():
    """Every product at R FLOP/s, every mixer call (attention or core) at t s: the estimate is
    (FLOPs − attention − core FLOPs) / R + calls × t."""
    plan, layers = _tiny()
    counts = prefill_counts(plan.shape, T, B, 4)
    R, t = 1e9, 1e-4
    probe = Probe("cpu", "fp32", matmul_flop_per_s=R, bandwidth_bytes_per_s=1e9)
    probe.gemm_flop_per_s = {g.probe_shape: R for g in counts.gemms}
    probe.attention_s = {(c.kind, c.q_len, c.kv_len): t for c in counts.attention}
    m = plan.shape.state_mixer
    core = 3 * B * delta_rule_flops_by_hand(m.n_value_heads, m.key_head_dim, m.value_head_dim, T)
    attention = B * 4 * plan.shape.q_width * T * (T + 1) // 2
    assert {(c.kind, c.count) for c in counts.attention} == {("gdn", 3), ("full", 1)}
    assert estimate_ms(counts, probe) == pytest.approx(1e3 * ((counts.flops - attention - core) / R + 4 * t))


@pytest.mark.parametrize(
    "config, rotary",
    [
        ({"partial_rotary_factor": 0.25}, 4),
        ({"rotary_pct": 0.5}, 8),
        ({"partial_rotary_factor": 1}, None),
        ({"rope_parameters": {"partial_rotary_factor": 0.75}}, 12),
        ({}, None),
    ],
)
def test_rotary_width_is_read_from_the_config(config, rotary):
    base = {k: v for k, v in HYBRID.items() if k != "partial_rotary_factor"}
    assert from_hf_config(base | config).rotary_dim == rotary
    assert NEXT.rotary_dim == 64  # ⌊256 × 0.25⌋


@pytest.mark.parametrize("bad", [0, 1.5, -0.25, "half", True, float("nan")])
def test_a_bad_rotary_fraction_is_named(bad):
    with pytest.raises(ConfigError, match="partial_rotary_factor"):
        from_hf_config(HYBRID | {"partial_rotary_factor": bad})


def _hybrid_page_stub():
    """The Cost page's check under a tiny Qwen3-Next."""
    from attn_core.cost.config_reader import from_hf_config
    from attn_core.verify.examples import HYBRID
    from lab_ui import cost_verify

    cost_verify.check_on_this_machine(from_hf_config(HYBRID, name="tiny-next"))


def test_cost_page_button_checks_a_hybrid():
    from streamlit.testing.v1 import AppTest

    from tests.verify.test_run_verify import open_check, wait_for_check

    at = open_check(AppTest.from_function(_hybrid_page_stub, default_timeout=120).run())
    at.selectbox(key="co_vf_T").set_value(64)
    wait_for_check(at.button(key="co_vf_run").click().run())
    assert not at.exception and not at.error
    df = at.dataframe[0].value
    assert list(df["phase"]) == ["prefill, 1 × 64 tokens", "one decode step, 67 cached"]
    assert set(df["bound ≤ measured"]) == {"yes"}
    assert "Gated DeltaNet" in " ".join(m.value for m in at.markdown)
