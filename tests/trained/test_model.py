"""The tiny transformer (attn_core.trained.model): its forward pass, maps and gradients against a
hand-written reference forward that uses torch SDPA instead of attn_core.attention."""

import math

import pytest
import torch
import torch.nn.functional as F
from trained_reference import reference_forward

from attn_core.trained.analysis import map_check, run_trace
from attn_core.trained.model import ModelConfig, TinyTransformer

# float64 end to end: the two forwards differ only in the summation order inside attention and
# the softmax, ~T·2⁻⁵³ relative on values of order 1 (T ≤ 32), so 1e-12 absolute is ample and a
# wrong scale, mask or head split is off by more than 1e-4 (weights are N(0, 0.02²)).
TOL64 = dict(rtol=0, atol=1e-12)


def model64(**kw) -> TinyTransformer:
    return TinyTransformer(ModelConfig(**kw), seed=3).double()


def tokens(B: int, T: int, V: int = 28) -> torch.Tensor:
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(5))


@pytest.mark.parametrize(
    "kw",
    [{}, {"n_layer": 1, "n_head": 1, "n_embd": 16}, {"n_layer": 3, "n_head": 2, "n_embd": 24, "mlp": True}],
)
@pytest.mark.parametrize("T", [1, 7, 32])
def test_forward_and_maps_match_sdpa_reference(kw, T):
    model = model64(**kw)
    idx = tokens(3, T)
    logits, trace = model(idx, trace=True)
    ref_logits, ref_maps = reference_forward(model, idx)
    torch.testing.assert_close(logits, ref_logits, **TOL64)
    for layer, ref in zip(trace.layers, ref_maps, strict=True):
        torch.testing.assert_close(layer.weights, ref, **TOL64)
    assert len(trace.residuals) == model.config.n_layer + 1


def test_autograd_through_attn_core_equals_sdpa_gradients():
    model = model64(n_layer=2, n_head=4, n_embd=32, mlp=True)
    idx, targets = tokens(2, 12), tokens(2, 12).roll(1, 1)
    grads = []
    for forward in (lambda: model(idx)[0], lambda: reference_forward(model, idx)[0]):
        model.zero_grad()
        F.cross_entropy(forward().flatten(0, 1), targets.flatten()).backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    assert all(g.abs().max() > 0 for g in grads[0].values())  # every weight receives a gradient
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], **TOL64, msg=name)


def test_head_mask_zeroes_exactly_that_head():
    model = model64()
    idx = tokens(2, 10)
    mask = torch.ones(2, 4, dtype=torch.float64)
    mask[1, 2] = 0.0
    logits, trace = model(idx, head_mask=mask, trace=True)
    torch.testing.assert_close(logits, reference_forward(model, idx, mask)[0], **TOL64)
    assert trace.layers[1].output[:, 2].abs().max() == 0
    assert (logits - model(idx)[0]).abs().max() > 1e-8  # and it mattered


def test_causal_map_never_looks_ahead():
    model = TinyTransformer(ModelConfig(), seed=1)
    idx = tokens(1, 20)
    P = run_trace(model, idx).layers[0].weights[0]  # (nh, T, T)
    assert P.triu(1).abs().max() == 0
    changed = idx.clone()
    changed[0, 15:] = (changed[0, 15:] + 1) % 28  # change the future of query 14
    logits_a, logits_b = model(idx)[0], model(changed)[0]
    torch.testing.assert_close(logits_a[0, :15], logits_b[0, :15], rtol=0, atol=0)


def test_map_check_passes_and_catches_a_wrong_map():
    model = TinyTransformer(ModelConfig(), seed=2)  # float32, as trained
    trace = run_trace(model, tokens(4, 32))
    check = map_check(trace)
    assert check.max_abs_diff <= check.tol
    # negative control: a map computed without the 1/√hs scale is far outside the tolerance
    layer = trace.layers[1]
    T = layer.q.shape[-2]
    blocked = torch.ones(T, T, dtype=torch.bool).triu(1)
    unscaled = torch.softmax((layer.q @ layer.k.transpose(-1, -2) * 40).masked_fill(blocked, -math.inf), -1)
    layer.weights = unscaled
    assert map_check(trace).max_abs_diff > 10 * check.tol


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"n_layer": 9}, "n_layer = 9 is outside"),
        ({"n_embd": 30, "n_head": 4}, "not a multiple"),
        ({"block_size": 1000}, "block_size = 1000"),
        ({"vocab_size": 1}, "at least two tokens"),
    ],
)
def test_bad_config_is_explained(kw, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig(**kw)


def test_too_long_input_is_explained():
    model = TinyTransformer(ModelConfig(block_size=8))
    with pytest.raises(ValueError, match="longer than block_size 8"):
        model(tokens(1, 9))
