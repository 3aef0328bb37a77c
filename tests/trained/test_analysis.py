"""Head analysis (attn_core.trained.analysis) and the shipped checkpoint.

Oracles: hand-built attention patterns with known scores; closed forms for the uniform causal
head; the circuits read off the model's own forward pass on one- and two-token inputs (not off
the weight slices the code uses); ablation by weight surgery instead of the head mask; every map
recomputed in plain torch."""

import math

import pytest
import torch

from attn_core.trained import checkpoint
from attn_core.trained.analysis import (
    PROBE_N,
    ablation,
    circuits,
    head_scores,
    induction_score,
    map_check,
    mean_entropy,
    previous_token_score,
    probe_batch,
    run_trace,
    sink_share,
)
from attn_core.trained.model import ModelConfig, TinyTransformer
from attn_core.trained.tasks import TaskId, no_lookup_loss
from attn_core.trained.training import eval_loss

T = 2 * PROBE_N  # the probe's length: ^ x₁…x₁₆ x₁…x₁₅


@pytest.fixture(scope="module")
def shipped():
    return checkpoint.load()


def uniform_causal(T: int) -> torch.Tensor:
    return torch.ones(T, T, dtype=torch.float64).tril() / torch.arange(1, T + 1, dtype=torch.float64)[:, None]


# ------------------------------------------------------------ scores on hand-built patterns


def test_hand_built_heads_score_one():
    prev = torch.zeros(T, T, dtype=torch.float64)
    prev[0, 0] = 1
    prev[torch.arange(1, T), torch.arange(T - 1)] = 1  # every query reads t − 1
    assert previous_token_score(prev) == 1 and sink_share(prev) == pytest.approx(1 / (T - 1))

    induction = uniform_causal(T).clone()
    for t in range(PROBE_N + 1, T):  # second copy: read the token after x's first occurrence
        induction[t] = 0
        induction[t, t - PROBE_N + 1] = 1
    assert induction_score(induction, PROBE_N) == 1

    sink = torch.zeros(T, T, dtype=torch.float64)
    sink[:, 0] = 1
    assert sink_share(sink) == 1 and mean_entropy(sink) == 0
    assert previous_token_score(sink) == pytest.approx(1 / (T - 1))  # only row 1's t − 1 is token 0


def test_uniform_head_closed_forms():
    P = uniform_causal(T)
    # row t spreads 1/(t+1) over t + 1 keys
    assert previous_token_score(P) == pytest.approx(sum(1 / (t + 1) for t in range(1, T)) / (T - 1))
    assert induction_score(P, PROBE_N) == pytest.approx(
        sum(1 / (t + 1) for t in range(PROBE_N + 1, T)) / (T - PROBE_N - 1)
    )
    assert mean_entropy(P) == pytest.approx(sum(math.log(t + 1) for t in range(1, T)) / (T - 1))


# ------------------------------------------------------------------- the shipped checkpoint

# Induction threshold 0.5: on the probe a query in the second copy has 18…32 keys, and a head
# spreading its weight evenly puts 1/(t+1) on the induction target — mean 0.04 (the closed form
# above). 0.5 means the head puts most of its weight on that one key, ≥ 12× the uniform head;
# a random-init model (weights N(0, 0.02²): scores ≈ 0, nearly uniform maps) must stay below
# 2× uniform.
INDUCTION_THRESHOLD = 0.5


def test_shipped_model_has_an_induction_head_and_random_init_does_not(shipped):
    uniform = float(induction_score(uniform_causal(T), PROBE_N))
    trained = head_scores(shipped.model)
    random = head_scores(TinyTransformer(shipped.model.config, seed=0))
    assert trained.induction.max() > INDUCTION_THRESHOLD
    assert random.induction.max() < 2 * uniform < INDUCTION_THRESHOLD / 5
    # the induction head sits in layer 1: it needs layer 0's previous-token output (K-composition)
    assert int(trained.induction.argmax()) // shipped.model.config.n_head == 1
    assert trained.previous_token[0].max() > INDUCTION_THRESHOLD  # …and layer 0 has such a head


def test_shipped_model_is_past_the_phase_change(shipped):
    assert shipped.train_config.task is TaskId.INDUCTION
    assert eval_loss(shipped.model, TaskId.INDUCTION) < no_lookup_loss(PROBE_N) / 2
    assert len(shipped.losses) == shipped.train_config.steps
    assert checkpoint.DEFAULT_CHECKPOINT.stat().st_size < 1_000_000


def test_every_map_equals_a_plain_torch_recomputation(shipped):
    trace = run_trace(shipped.model, probe_batch(8))
    check = map_check(trace)
    blocked = torch.ones(T, T, dtype=torch.bool).triu(1)
    diffs = []
    for layer in trace.layers:
        q, k = layer.q.double(), layer.k.double()
        ref = torch.softmax(
            (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).masked_fill(blocked, -math.inf), -1
        )
        diffs.append(float((ref - layer.weights.double()).abs().max()))
    assert check.per_layer == pytest.approx(diffs, rel=0, abs=1e-12)
    assert max(diffs) <= check.tol < 1e-3  # float32 forward, float64 oracle


def test_ablation_matches_weight_surgery_and_breaks_the_circuit(shipped):
    model, n_head = shipped.model, shipped.model.config.n_head
    base, change = ablation(model, TaskId.INDUCTION)
    assert base == eval_loss(model, TaskId.INDUCTION)
    # the induction circuit: layer 0's previous-token head feeds layer 1's induction heads. Layer 1
    # may hold several induction heads (each one alone is then cheap to lose), but without the
    # previous-token head none of them can find its target: the loss goes back above the phase
    # threshold, by more than 1 nat.
    prev = int(head_scores(model).previous_token[0].argmax())
    assert change[0, prev] > 1.0 and base + change[0, prev] > no_lookup_loss(PROBE_N) / 2
    layer1_off = torch.ones(2, n_head)
    layer1_off[1] = 0
    assert eval_loss(model, TaskId.INDUCTION, head_mask=layer1_off) > no_lookup_loss(PROBE_N) / 2
    assert change.min() > -0.1  # no head of a trained model is much better gone
    # independent route: zero the ablated head's columns of W_O in a copy of the model
    hs = model.config.head_size
    for layer, head in [(0, prev), (1, n_head - 1)]:
        surgery = TinyTransformer(model.config)
        surgery.load_state_dict(model.state_dict())
        with torch.no_grad():
            surgery.h[layer].attn.c_proj.weight[:, head * hs : (head + 1) * hs] = 0
        expected = eval_loss(surgery, TaskId.INDUCTION) - base
        assert float(change[layer, head]) == pytest.approx(expected, abs=1e-5)


# ------------------------------------------------------------------------------- circuits


def test_circuits_against_the_models_own_forward():
    torch.manual_seed(0)
    model = TinyTransformer(ModelConfig(n_layer=1, n_head=2, n_embd=16, block_size=4), seed=4).double()
    with torch.no_grad():  # zero positions so a token's residual is its embedding alone
        model.wpe.weight.zero_()
        for p in model.parameters():
            p.mul_(20)  # weights of order 0.4 so the values are not all ≈ 0
    V, head = model.config.vocab_size, 1
    c = circuits(model, 0, head)
    assert c.qk.shape == c.ov.shape == (V, V)
    # QK[a, b]: the scaled score of query token a on key token b, from the forward's q and k
    a, b = torch.arange(V).repeat_interleave(V), torch.arange(V).repeat(V)
    trace = model(torch.stack([b, a], 1), trace=True)[1].layers[0]
    scores = (trace.q[:, head, 1] * trace.k[:, head, 0]).sum(-1) / math.sqrt(model.config.head_size)
    torch.testing.assert_close(c.qk.flatten(), scores, rtol=1e-10, atol=1e-12)
    # OV[b]: what the head adds to the logits when it reads token b alone (one-token input)
    only = torch.zeros(1, 2, dtype=torch.float64)
    only[0, head] = 1
    with_head = model(torch.arange(V)[:, None], head_mask=only)[0][:, 0]
    without = model(torch.arange(V)[:, None], head_mask=torch.zeros(1, 2, dtype=torch.float64))[0][:, 0]
    torch.testing.assert_close(c.ov, with_head - without, rtol=1e-10, atol=1e-12)


def test_shipped_checkpoint_round_trips(shipped, tmp_path):
    from attn_core.trained.training import TrainState, new_run

    state = new_run(shipped.model.config, shipped.train_config)
    state.model.load_state_dict(shipped.model.state_dict())
    state = TrainState(state.model, state.optimizer, shipped.train_config, 3, [3.0, 2.5, 2.0], 1.5)
    back = checkpoint.load(checkpoint.save(state, tmp_path / "x.safetensors"))
    for name, tensor in shipped.model.state_dict().items():
        assert torch.equal(back.model.state_dict()[name], tensor), name
    assert (
        back.losses == [3.0, 2.5, 2.0] and back.elapsed_s == 1.5 and back.train_config == shipped.train_config
    )


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all", b"\x10\x00\x00\x00\x00\x00\x00\x00{}"])
def test_bad_checkpoint_files_are_explained(tmp_path, content):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(content)
    with pytest.raises(ValueError, match=r"bad\.safetensors"):
        checkpoint.load(bad)
    with pytest.raises(ValueError, match="cannot read"):
        checkpoint.load(tmp_path / "missing.safetensors")
