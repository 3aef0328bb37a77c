"""``verify``: a model's layers built at true shape, run, and compared with the cost model.

Oracles, each independent of the code it checks:
- the built torch modules themselves: their parameter numels (bytes, and FLOPs per token as
  2 × the matrix weights a token multiplies) and their cache tensors' shapes;
- torch's FlopCounterMode over the real prefill and decode step (every mm/addmm that ran);
- attention pairs counted by brute force over the mask each layer kind allows;
- the incremental decode checked against a full causal prefill of the same tokens;
- a seeded simulation of uniform top-k routing for the expected touched experts;
- for a Gated DeltaNet layer (a tiny Qwen3-Next), its core's products enumerated chunk by chunk
  by hand (`tests/verify/test_run_hybrid.py` checks the layer against transformers' own).
No time is asserted: only that the bound, a lower bound by construction, is below the run.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time

import numpy as np
import pytest
import torch
from conftest import hf_numel
from torch.utils.flop_counter import FlopCounterMode

from attn_core.cost.config_reader import from_hf_config, load_preset
from attn_core.cost.dtypes import DTYPE_BYTES
from attn_core.cost.serving import experts_touched_expected
from attn_core.kernels.records import DTYPES
from attn_core.verify import cli as verify_cli
from attn_core.verify.counts import decode_counts, prefill_counts
from attn_core.verify.deltanet import GatedDeltaNetLayer
from attn_core.verify.examples import HYBRID, LLAMA, NEMOTRON
from attn_core.verify.layers import Attention, Layers, MoEMLP, build_layers
from attn_core.verify.mamba2 import Mamba2Layer
from attn_core.verify.peak import COLD_BYTES, PEAK_N, STREAM_BYTES
from attn_core.verify.plan import (
    DEFAULT_DECODE_STEPS,
    DEFAULT_SEQ_LEN,
    MAX_LAYERS,
    VerifyError,
    VerifyRequest,
    plan_build,
    select_device,
)
from attn_core.verify.probe import Probe, bound_ms, estimate_ms
from attn_core.verify.run import verify

DENSE = LLAMA
MOE = {
    "model_type": "qwen2_moe",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 96,
    "moe_intermediate_size": 32,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "shared_expert_intermediate_size": 48,
    "vocab_size": 100,
}
# Gemma 3: a sliding window (smaller than T, so the band mask runs), QK-norm, four norms a layer.
SLIDING = {
    "model_type": "gemma3_text",
    "num_hidden_layers": 3,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 1,
    "head_dim": 16,
    "intermediate_size": 96,
    "sliding_window": 5,
    "sliding_window_pattern": 3,
    "vocab_size": 100,
}
CHUNKED = {
    "model_type": "llama4_text",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "intermediate_size": 32,
    "intermediate_size_mlp": 96,
    "attention_chunk_size": 6,
    "no_rope_layers": [1, 0],
    "num_local_experts": 4,
    "num_experts_per_tok": 1,
    "interleave_moe_layer_step": 2,
    "vocab_size": 100,
}
CONFIGS = {
    "dense": DENSE,
    "moe": MOE,
    "sliding": SLIDING,
    "chunked": CHUNKED,
    "hybrid": HYBRID,
    "nemotron": NEMOTRON,
}
T, M, B = 16, 3, 2


pytestmark = pytest.mark.usefixtures("small_probe")


def _shape(name: str):
    return from_hf_config(CONFIGS[name], name=name)


def _built(name: str, **kw):
    request = VerifyRequest(seq_len=T, batch=B, decode_steps=M, device="cpu", **kw)
    plan = plan_build(_shape(name), request)
    return request, plan, build_layers(plan, request, "cpu")


def _matrices(module: torch.nn.Module) -> int:
    """Numel of the 2-D weights of a module: what one token multiplies when it runs it."""
    return sum(p.numel() for p in module.parameters() if p.ndim == 2)


def _per_token_matrices(layers: Layers) -> int:
    """Matrix weights one token multiplies, read off the modules: the mixer, then the dense MLP
    or the router + k routed experts (all alike) + shared experts + the shared gate (a Nemotron-H
    block has one of the two)."""
    total = 0
    for block in layers.blocks:
        total += _matrices(block.mixer) if block.mixer is not None else 0
        mlp = block.mlp
        if mlp is None:
            continue
        if isinstance(mlp, MoEMLP):
            total += mlp.router.weight.numel() + mlp.top_k * _matrices(mlp.experts[0])
            total += sum(_matrices(s) for s in mlp.shared)
            total += mlp.shared_gate.weight.numel() if mlp.shared_gate is not None else 0
        else:
            total += _matrices(mlp)
    return total


def _pairs(kind: str, shape, queries: range, n_keys: int) -> int:
    """Allowed (query, key) pairs by brute force over positions."""
    count = 0
    for i in queries:
        for j in range(n_keys):
            ok = j <= i
            if kind == "sliding":
                ok = ok and j > i - shape.sliding_window
            if kind == "chunked":
                ok = ok and j // shape.attention_chunk_size == i // shape.attention_chunk_size
            count += ok
    return count


def _attention_flops(layers: Layers, queries: range, n_keys: int) -> int:
    """4·h·d_h per allowed pair (QKᵀ and PV), per attention layer, from each one's own shape."""
    total = 0
    for block in layers.blocks:
        if isinstance(block.mixer, Attention):
            s = block.mixer.shape
            total += 4 * s.n_heads * s.head_dim * _pairs(block.mixer.kind, s, queries, n_keys)
    return total


def delta_rule_flops_by_hand(H_v: int, d_k: int, d_v: int, T: int, C: int = 64, decode: bool = False) -> int:
    """The delta rule's products for one sequence, enumerated as the chunked algorithm runs them
    (2 FLOPs per multiply-add). Per value head and chunk of c tokens: inside the chunk the c × c
    blocks QKᵀ and (βK)Kᵀ (2c²·d_k each), the UT transform applied to the decayed βK and to βV
    (counted as full c × c products: 2c²·d_k, 2c²·d_v) and the masked scores times the new values
    (2c²·d_v); against the running state S (d_k × d_v): the read-out Q·S, the correction K·S and
    the update Kᵀ·V_new (2c·d_k·d_v each). Decode (recurrent): one token, the three state products."""
    if decode:
        return H_v * 3 * 2 * d_k * d_v * T
    total, left = 0, T
    while left:
        c = min(C, left)
        total += 2 * c * c * d_k * 3 + 2 * c * c * d_v * 2 + 3 * 2 * c * d_k * d_v
        left -= c
    return H_v * total


def ssd_flops_by_hand(H: int, P: int, N: int, G: int, T: int, Q: int, decode: bool = False) -> int:
    """Mamba-2's scan (state-space duality) for one sequence, enumerated as the chunked algorithm
    runs it (2 FLOPs per multiply-add), per chunk of c tokens: C·Bᵀ per group of B and C (2c²·N
    each of G), the masked scores times x per head (2c²·P each of H), the chunk's state Bᵀ·x and the
    read-out C·h per head (2c·N·P each). Decode: one token, the update Δ·B·x and the read-out C·h
    per head (2·P·N each)."""
    if decode:
        return H * 2 * 2 * P * N * T
    total, left = 0, T
    while left:
        c = min(Q, left)
        total += 2 * c * c * N * G + 2 * c * c * P * H + 2 * 2 * c * N * P * H
        left -= c
    return total


def _core_flops(layers: Layers, tokens: int, decode: bool = False) -> int:
    """Σ over the built linear layers of their hand-counted cores, from each one's shape."""
    total = 0
    for block in layers.blocks:
        if isinstance(block.mixer, GatedDeltaNetLayer):
            m = block.mixer.core.m
            total += delta_rule_flops_by_hand(
                m.n_value_heads, m.key_head_dim, m.value_head_dim, tokens, decode=decode
            )
        elif isinstance(block.mixer, Mamba2Layer):
            m = block.mixer.core.m
            total += ssd_flops_by_hand(m.n_heads, m.head_dim, m.d_state, m.n_groups, tokens, m.chunk, decode)
    return total


@pytest.mark.parametrize("name", list(CONFIGS))
def test_counts_equal_the_built_modules(name):
    request, plan, layers = _built(name)
    b = DTYPE_BYTES[request.dtype]
    assert plan.layers_built == plan.model_layers == len(layers.blocks)
    # FLOPs: 2 × matrix weights per token × tokens + brute-force attention pairs
    prefill = prefill_counts(plan.shape, T, B, b)
    expected = 2 * _per_token_matrices(layers) * B * T + B * _attention_flops(layers, range(T), T)
    assert prefill.flops == expected + B * _core_flops(layers, T)
    context = T + 1
    step = decode_counts(plan.shape, context, B, b)
    expected = 2 * _per_token_matrices(layers) * B + B * _attention_flops(
        layers, range(context, context + 1), context + 1
    )
    assert step.flops == expected + B * _core_flops(layers, 1, decode=True)
    # bytes: every parameter but the routed experts a token skips (the floor), plus the cache
    params = sum(p.numel() for p in layers.parameters())
    skipped = sum(
        (len(blk.mlp.experts) - blk.mlp.top_k) * sum(p.numel() for p in blk.mlp.experts[0].parameters())
        for blk in layers.blocks
        if isinstance(blk.mlp, MoEMLP)
    )
    assert params * b == plan.weight_bytes

    def cache_bytes(tokens: int) -> int:
        """Σ layers: tokens held × a key and a value per KV head, read off each layer's cache tensor
        (B, H_kv, T_max, d_h); a linear layer's state tensors. A window of W (or a chunk of C) holds
        W − 1 (C − 1) past tokens, as transformers' DynamicSlidingWindowLayer does: the next query
        brings its own key."""
        caps = {
            "sliding": plan.shape.sliding_window and plan.shape.sliding_window - 1,
            "chunked": plan.shape.attention_chunk_size and plan.shape.attention_chunk_size - 1,
        }
        total = 0
        for blk in layers.blocks:
            if isinstance(blk.mixer, GatedDeltaNetLayer | Mamba2Layer):
                total += blk.mixer.state.conv.nbytes + blk.mixer.state.recurrent.nbytes
            if not isinstance(blk.mixer, Attention):
                continue
            K, V = blk.mixer.cache
            assert K.shape == V.shape == (B, K.shape[1], T + M, K.shape[3])
            total += (
                min(tokens, caps.get(blk.mixer.kind) or tokens)
                * (K[0, :, 0].numel() + V[0, :, 0].numel())
                * B
                * b
            )
        return total

    assert plan.cache_bytes == cache_bytes(T + M)
    assert prefill.bytes == (params - skipped) * b + cache_bytes(T)
    assert step.bytes == (params - skipped) * b + cache_bytes(context)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_flop_counter_sees_the_counted_matrix_products(name):
    """FlopCounterMode over the real prefill and decode step: its matmul FLOPs equal the cost
    model's projections + MLP (each token runs exactly k experts, whatever the router picks). A
    Gated DeltaNet core's batched products (bmm) are what the hand count says, for the chunks as
    torch runs them (the last one padded to C) and without the two UT solves, which it runs as
    triangular solves rather than products; its recurrent decode step runs none."""
    request, plan, layers = _built(name)
    b = DTYPE_BYTES[request.dtype]
    x, step = torch.randn(B, T, plan.shape.d_model), torch.randn(B, 1, plan.shape.d_model)
    deltas = [blk.mixer.core.m for blk in layers.blocks if isinstance(blk.mixer, GatedDeltaNetLayer)]
    linear = any(isinstance(blk.mixer, GatedDeltaNetLayer | Mamba2Layer) for blk in layers.blocks)
    for tokens, run, counts in (
        (range(T), lambda: layers(x, 0), prefill_counts(plan.shape, T, B, b)),
        (range(T, T + 1), lambda: layers(step, T), decode_counts(plan.shape, T, B, b)),
    ):
        with torch.inference_mode(), FlopCounterMode(display=False) as counter:
            run()
        by_op = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
        kinds = ("mm", "addmm") if linear else ("mm", "addmm", "bmm")  # a linear core's are its own
        matmuls = sum(n for op, n in by_op.items() if op.split(".")[1] in kinds)
        core = B * _core_flops(layers, len(tokens), decode=len(tokens) == 1)
        attention = counts.flops - matmuls - core
        assert attention == B * _attention_flops(layers, tokens, tokens.stop)
        assert sum(g.flops for g in counts.gemms) == pytest.approx(matmuls, rel=1e-12)
        if deltas:
            C = 64
            padded, chunks = -(-len(tokens) // C) * C, -(-len(tokens) // C)
            solves = sum(
                m.n_value_heads * chunks * 2 * C * C * (m.key_head_dim + m.value_head_dim) for m in deltas
            )
            ran = sum(
                delta_rule_flops_by_hand(m.n_value_heads, m.key_head_dim, m.value_head_dim, padded)
                for m in deltas
            )
            assert by_op.get("aten.bmm", 0) == (B * (ran - solves) if len(tokens) > 1 else 0)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_decode_with_the_cache_equals_the_full_prefill(name):
    """The last row of a causal prefill over T + 1 tokens equals prefill(T) then one decode step:
    the cache, rotary positions and each kind's keys agree. fp32 over a few layers of width 64:
    reassociation differences are ~1e-6 relative; 1e-4 leaves room without hiding a wrong key."""
    request, plan, layers = _built(name)
    x = torch.randn(B, T + 1, plan.shape.d_model)
    with torch.inference_mode():
        full = layers(x, 0)[:, -1]
        layers(x[:, :T], 0)
        step = layers(x[:, T:], T)[:, 0]
    torch.testing.assert_close(step, full, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["dense", "moe", "hybrid", "nemotron"])
def test_verify_bound_is_below_the_run_and_json_keys(name, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIGS[name]))
    out = tmp_path / "verify.json"
    args = [
        "--config",
        str(config),
        "--seq-len",
        str(T),
        "--batch",
        "1",
        "--decode-steps",
        str(M),
        "--device",
        "cpu",
        "--json",
        str(out),
    ]
    assert verify_cli.main(args) == 0
    data = json.loads(out.read_text())
    assert {"device", "layers_built", "experts_built", "probe", "prefill", "decode_step"} <= set(data)
    assert data["device"] == "cpu" and data["layers_built"] == _shape(name).n_layers
    # what was built: transformers' own modules of the config (every layer fits), counted on
    # transformers' own build of it; the named model held against that build: these configs leave
    # out tie_word_embeddings, which the formulas read as tied and Llama's and Qwen2-MoE's classes
    # as untied (a separate head), and the check says so
    assert data["built_by"] == "transformers" and data["params_built"] == hf_numel(CONFIGS[name], base=True)
    check = data["model_check"]
    assert check["model_derived"]["built_by"] == "transformers"
    # the FLOPs counted from the model: a Gated DeltaNet core differs (transformers' torch fallback
    # pads each chunk to 64 tokens; the formulas count the ideal chunked products), named, never silent
    named = [d["what"] for d in check["differences"] if not d["what"].endswith("linear mixer core")]
    assert check["agrees"] or named[:2] in ([], ["parameters, total", "parameters, head"])
    assert data["counts_by"] == "formulas"
    assert data["experts_built"] == (8 if name in ("moe", "hybrid") else None)
    assert {"matmul_flop_per_s", "bandwidth_bytes_per_s"} <= set(data["probe"])
    if name in ("hybrid", "nemotron"):  # the linear core, probed at the prompt and at one decode step
        cores = data["probe"]["state_core_ms"]
        assert {(c["q_len"], c["kv_len"]) for c in cores} == {(T, T), (1, T + (M - 1) // 2 + 1)}
    for phase in ("prefill", "decode_step"):
        p = data[phase]
        assert {"flops", "bytes", "bound_ms", "estimate_ms", "measured_ms"} <= set(p)
        assert 0 < p["bound_ms"] <= p["measured_ms"]
        assert p["estimate_ms"] > 0
    shape = from_hf_config(CONFIGS[name])
    assert data["prefill"]["flops"] == prefill_counts(shape, T, 1, 4).flops


def test_estimate_is_counts_over_probed_rates():
    """With every product probed at R FLOP/s and every attention call at t s, the estimate is
    (FLOPs − attention FLOPs) / R + calls × t: the products cover exactly the cost model's rest."""
    _, plan, layers = _built("moe")
    counts = prefill_counts(plan.shape, T, B, 4)
    R, t = 1e9, 1e-4
    probe = Probe("cpu", "fp32", matmul_flop_per_s=R, bandwidth_bytes_per_s=1e9)
    probe.gemm_flop_per_s = {g.probe_shape: R for g in counts.gemms}
    probe.attention_s = {(c.kind, c.q_len, c.kv_len): t for c in counts.attention}
    attention = B * _attention_flops(layers, range(T), T)
    n_calls = len(layers.blocks)
    assert estimate_ms(counts, probe) == pytest.approx(1e3 * ((counts.flops - attention) / R + n_calls * t))
    assert bound_ms(counts, probe) == pytest.approx(1e3 * max(counts.flops / R, counts.bytes / 1e9))


def test_expected_experts_matches_a_seeded_routing_simulation():
    """E(1 − (1 − k/E)^N) against N tokens each picking k distinct experts uniformly at random:
    20,000 trials put the simulated mean within ~0.02 of the truth (standard error < 0.01)."""
    rng = np.random.default_rng(0)
    for E, k, N in ((8, 2, 3), (128, 8, 4), (64, 6, 16)):
        trials = [len({e for _ in range(N) for e in rng.choice(E, k, replace=False)}) for _ in range(20_000)]
        # sampling k without replacement per token: a given expert is missed with prob (1 − k/E)
        assert np.mean(trials) == pytest.approx(experts_touched_expected(E, k, N), abs=0.05)


def test_the_cap_cuts_layers_then_experts_keeping_k_and_width(monkeypatch):
    for sizes, size in ((PEAK_N, 16), (COLD_BYTES, 1 << 14), (STREAM_BYTES, 1 << 14)):
        monkeypatch.setitem(sizes, "cpu", size)  # a probe smaller than the layers: the cap cuts them
    shape = _shape("moe")
    full = plan_build(shape, VerifyRequest(seq_len=T, decode_steps=M))
    one = plan_build(shape, VerifyRequest(seq_len=T, decode_steps=M, layers=1))
    one_layer = plan_build(
        shape,
        VerifyRequest(seq_len=T, decode_steps=M, memory_bytes=(full.peak_bytes + one.peak_bytes) // 2),
    )
    assert full.layers_built == 2 and one_layer.layers_built == 1 and one_layer.experts_built == 8
    k_only = plan_build(
        dataclasses.replace(shape, moe=dataclasses.replace(shape.moe, n_experts=2)),
        VerifyRequest(seq_len=T, decode_steps=M, layers=1),
    )
    cap = (k_only.peak_bytes + one.peak_bytes) // 2
    squeezed = plan_build(shape, VerifyRequest(seq_len=T, decode_steps=M, memory_bytes=cap))
    assert squeezed.layers_built == 1 and 2 <= squeezed.experts_built < 8
    assert squeezed.shape.moe.top_k == 2 and squeezed.shape.moe.expert_d_ff == 32
    assert squeezed.peak_bytes <= cap
    assert any("routed experts" in n for n in squeezed.notes)
    with pytest.raises(VerifyError, match="does not hold the k = 2 routed experts"):
        plan_build(shape, VerifyRequest(seq_len=T, decode_steps=M, memory_bytes=k_only.peak_bytes - 1))
    with pytest.raises(VerifyError, match="cap"):
        plan_build(_shape("dense"), VerifyRequest(memory_bytes=1000))


def test_what_is_not_built_is_refused_by_name():
    odd = from_hf_config(DENSE | {"head_dim": 15})
    with pytest.raises(VerifyError, match="even width, got 15"):
        plan_build(odd, VerifyRequest())
    # partial rotary: ⌊16 × 0.5625⌋ = 9 channels turn
    odd_partial = from_hf_config(DENSE | {"head_dim": 16, "partial_rotary_factor": 0.5625})
    with pytest.raises(VerifyError, match="even width, got 9"):
        plan_build(odd_partial, VerifyRequest())
    with pytest.raises(VerifyError, match="dtype"):
        plan_build(_shape("dense"), VerifyRequest(dtype="fp8"))
    for preset, mixer in (("jamba-1.5-mini", "Mamba"), ("kimi-linear-48b-a3b", "Kimi Delta Attention")):
        with pytest.raises(VerifyError, match=f"state-space layers \\({mixer}\\) are not built"):
            plan_build(load_preset(preset), VerifyRequest())


def test_device_selection(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert select_device("auto") == "cpu"
    assert select_device("cpu") == "cpu"
    with pytest.raises(VerifyError, match="no CUDA device"):
        select_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert select_device("auto") == "cuda"
    assert select_device("cpu") == "cpu"


@pytest.mark.parametrize(
    "args, says",
    [
        (["--model", "nope"], "unknown model"),
        (["--model", "llama-3-8b", "--seq-len", "0"], "--seq-len"),
        (["--model", "deepseek-v3"], "latent attention"),
        (["--model", "gpt-oss-120b"], "sinks"),
        (["--model", "jamba-1.5-mini"], "(Mamba) are not built by verify yet"),
        (["--model", "kimi-linear-48b-a3b"], "(Kimi Delta Attention) are not built by verify yet"),
        (["--model", "llama-3-8b", "--memory-gib", "0.1"], "cap"),
        (["--model", "llama-3-8b", "--dtype", "int4"], "--dtype"),
        (["--model", "llama-3-8b", "--config", "x.json"], "not allowed"),
    ],
)
def test_cli_bad_arguments_one_line_exit_2(args, says, capsys):
    assert verify_cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err


def test_cli_constants_mirror_the_engine():
    assert tuple(DTYPES) == verify_cli.DTYPES
    engine = (DEFAULT_SEQ_LEN, DEFAULT_DECODE_STEPS, MAX_LAYERS)
    assert engine == (verify_cli.DEFAULT_SEQ_LEN, verify_cli.DEFAULT_DECODE_STEPS, verify_cli.MAX_LAYERS)
    assert math.isclose(verify_cli.DEFAULT_MEMORY_GIB * 2**30, VerifyRequest().memory_bytes)


def _cost_page_stub():
    """What the Cost page adds: one line under a sized model (here a tiny one, given as a shape
    alone: the lab's layers are built)."""
    from attn_core.cost.config_reader import from_hf_config
    from attn_core.verify.examples import LLAMA
    from lab_ui import cost_verify

    cost_verify.check_on_this_machine(from_hf_config(LLAMA, name="tiny"))


def open_check(at):
    """Open the check's expander of a page that has run once (its panel is drawn only while open)."""
    at.session_state["co_vf_open"] = True
    return at.run()


def wait_for_check(at, seconds: float = 120):
    """Rerun the page while its check runs in the child (showing its time and a Stop button), as
    the page's polling fragment does."""
    start = time.monotonic()
    while at.info and at.info[0].value.startswith("Running") and time.monotonic() - start < seconds:
        assert at.button(key="co_vf_stop") is not None
        time.sleep(0.5)
        at.run()
    return at


def test_cost_page_button_runs_a_check_and_shows_the_table():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_cost_page_stub, default_timeout=120).run()
    assert not at.exception and not at.selectbox  # closed: nothing drawn, nothing planned
    open_check(at)
    assert not at.exception and not at.dataframe  # nothing runs before the button
    at.selectbox(key="co_vf_T").set_value(64)
    assert "Planned peak" in at.caption[1].value and "expected to take up to" in at.caption[1].value
    wait_for_check(at.button(key="co_vf_run").click().run())
    assert not at.exception and not at.error
    df = at.dataframe[0].value
    assert list(df["phase"]) == ["prefill, 1 × 64 tokens", "one decode step, 67 cached"]
    assert set(df["bound ≤ measured"]) == {"yes"}
    assert all(e.endswith("%") for e in df["error"])


@pytest.mark.parametrize(
    "name, built",
    [
        ("moe", "2/2 layers, 8/8 experts"),
        ("hybrid", "4/4 layers (3 Gated DeltaNet, 1 full attention), 8/8 experts"),
    ],
)
def test_benchmark_rows_smoke(name, built):
    """benchmarks/verify_cost.py's Markdown rows for one tiny check: one per phase, every column."""
    from tests.conftest import load_benchmark

    bench = load_benchmark("verify_cost")
    result = verify(_shape(name), VerifyRequest(seq_len=T, decode_steps=M))
    lines = bench.rows(result)
    assert len(lines) == 2 and all(
        line.count("|") == bench.HEADER.splitlines()[0].count("|") for line in lines
    )
    assert f"| {built} |" in lines[0] and "yes" in lines[0]


def test_gated_deltanet_module_matches_cost_model_params():
    """Groundwork for building Gated DeltaNet layers in verify: transformers' own module, built on
    the meta device from the Qwen3-Next preset's config, holds exactly the parameters the cost
    model counts for one layer (and its matrices are the cost model's `matrix_weights`)."""
    qwen3_next = pytest.importorskip(
        "transformers.models.qwen3_next.modeling_qwen3_next", reason="transformers without Qwen3-Next"
    )
    from transformers import Qwen3NextConfig

    shape = load_preset("qwen3-next-80b-a3b")
    m = shape.state_mixer
    cfg = Qwen3NextConfig(
        hidden_size=shape.d_model,
        linear_num_key_heads=m.n_key_heads,
        linear_num_value_heads=m.n_value_heads,
        linear_key_head_dim=m.key_head_dim,
        linear_value_head_dim=m.value_head_dim,
        linear_conv_kernel_dim=m.conv_kernel,
    )
    with torch.device("meta"):
        layer = qwen3_next.Qwen3NextGatedDeltaNet(cfg, 0)
    numel = sum(p.numel() for p in layer.parameters())
    assert numel == m.params()
    matrices = sum(mod.weight.numel() for mod in layer.modules() if isinstance(mod, torch.nn.Linear))
    assert matrices == m.matrix_weights()
