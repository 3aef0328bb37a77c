"""The long-sequence capture paths and view (attn_core.hf.qk_capture, trained.analysis.capture_qk,
attn_core.views.long_heads) on tiny random Hugging Face models (GPT-2, Llama with GQA, Mistral
with a sliding window; no download), the seeded demo and the shipped trained model.

Oracles: the short page's eager capture (``capture.capture``: the q and k the model's own
eager attention received) and its float64 recompute (``attention_maps.recompute``: dense maps);
the trained model's own traced q, k and weights; heads' metrics on those dense maps; a dispatch
probe for the memory claim; and the budget's own arithmetic for refusals.
"""

from __future__ import annotations

import time

import pytest
import torch
import transformers
from tile_reference import LargestStorage, tiles_of

from attn_core import heads
from attn_core.hf import attention_maps as hf
from attn_core.hf.capture import capture
from attn_core.hf.loading import Loaded
from attn_core.hf.qk_capture import capture_qk
from attn_core.limits import Busy
from attn_core.trained import checkpoint
from attn_core.trained.analysis import capture_qk as trained_capture_qk
from attn_core.trained.analysis import run_trace
from attn_core.views import long_heads as lh
from attn_core.views import long_inputs

T, WINDOW, VOCAB = 40, 4, 64
# Later layers' q and k come from hidden states that went through SDPA (or the online kernel)
# instead of eager attention: the two float32 outputs differ by rounding, ~d·u·max|v| ≈ 16·6e-8,
# carried through a few weight matrices of norm ≲ 10 at init 0.3: ≲ 1e-5 relative. 1e-4 of
# max|q| leaves 10× room and stays 1,000× below a wrong mask, scale or rotary (O(0.1) relative).
REL_TOL = 1e-4
# The tile maps run in float32 on those q, k; the recompute in float64: a weight's float32 error
# is ≲ (d + 4)·u·(|s| + |lse|) ≈ 20·6e-8·20 ≈ 2.4e-5, plus the q, k difference above through the
# scores (≲ 1e-4 · |s| ≲ 1e-3 relative on a weight of ≤ 1 at these |s| ≲ 10): 2e-3 absolute.
MAP_TOL = 2e-3


def configs():
    common = {"vocab_size": VOCAB, "initializer_range": 0.3}  # peaky maps: a wrong mask shows
    layer = {"num_hidden_layers": 2, "intermediate_size": 64, "hidden_size": 32, "num_attention_heads": 4}
    return {
        "gpt2": transformers.GPT2Config(
            n_layer=2, n_head=4, n_embd=32, n_positions=64, bos_token_id=0, eos_token_id=0, **common
        ),
        "llama-gqa": transformers.LlamaConfig(num_key_value_heads=2, **layer, **common),
        "mistral-window": transformers.MistralConfig(
            num_key_value_heads=1, sliding_window=WINDOW, **layer, **common
        ),
    }


@pytest.fixture(scope="module", params=["gpt2", "llama-gqa", "mistral-window"])
def loaded(request):
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(
            configs()[request.param], attn_implementation="eager"
        )
    model.eval()
    return Loaded(model, None, request.param, sum(p.numel() for p in model.parameters()), 0.0, False)


class CharTokenizer:
    """The two calls read_input makes of a Hugging Face tokenizer: ids per character (ASCII)."""

    def __call__(self, text: str) -> dict:
        return {"input_ids": [ord(ch) % 128 for ch in text]}

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(i) for i in ids)


def ids(n: int = T, vocab: int = VOCAB) -> torch.Tensor:
    return torch.randint(0, vocab, (1, n), generator=torch.Generator().manual_seed(1))


def test_the_long_capture_hands_over_the_q_and_k_eager_attention_received(loaded):
    eager, _ = capture(loaded.model, ids())
    long = capture_qk(loaded.model, ids())
    assert len(long) == len(eager) == 2
    for layer, (e, c) in enumerate(zip(eager, long, strict=True)):
        assert c.q.shape == e.q.shape[1:] and c.k.shape == e.k.shape[1:]  # KV heads not repeated
        assert (c.scale, c.sliding_window) == (e.scale, e.sliding_window)
        tol = 0.0 if layer == 0 else REL_TOL  # layer 0 reads the embeddings themselves
        assert float((c.q - e.q[0]).abs().max()) <= tol * float(e.q.abs().max())
        assert float((c.k - e.k[0]).abs().max()) <= tol * float(e.k.abs().max())
    first = capture_qk(loaded.model, ids(), layers=1)
    assert len(first) == 1 and torch.equal(first[0].q, long[0].q)


def test_the_view_matches_the_short_pages_dense_maps(loaded):
    m = lh.from_hf(loaded)
    inp = lh.read_input(m, " ".join(map(str, ids()[0].tolist())))
    view = lh.long_view(m, inp, tile=8, band=3)
    dense = hf.recompute(loaded.model, ids()).maps  # per layer (Hq, T, T), float64
    assert len(view.layers) == len(dense) == 2 and view.length == T
    for layer, (tm, P) in enumerate(zip(view.layers, dense, strict=True)):
        mass, mx = tiles_of(P, 8)
        assert float((tm.mass.double() - mass).abs().max()) <= MAP_TOL
        assert float((tm.max.double() - mx).abs().max()) <= MAP_TOL
        rows = [r for r in view.head_rows if r["layer"] == layer]
        for h, row in enumerate(rows):
            assert row["sink share"] == pytest.approx(float(heads.sink_share(P[h])), abs=MAP_TOL)
            assert row["previous token"] == pytest.approx(
                float(heads.previous_token_score(P[h])), abs=MAP_TOL
            )
            assert row["local share"] == pytest.approx(float(heads.local_share(P[h], 3)), abs=MAP_TOL)
            assert row["mean distance, tokens"] == pytest.approx(
                float(heads.mean_distance(P[h])), abs=T * MAP_TOL
            )
    if loaded.name == "mistral-window":  # nothing beyond the window
        assert all(r["distance to"] <= WINDOW for r in lh.distance_rows(view, 1) if r["mass"] > 0)


def test_region_through_the_view_kept_or_recaptured(loaded, monkeypatch):
    m = lh.from_hf(loaded)
    inp = lh.read_input(m, " ".join(map(str, ids()[0].tolist())))
    P = hf.recompute(loaded.model, ids()).maps[1]
    kept = lh.long_view(m, inp, tile=8)
    monkeypatch.setattr(long_inputs, "KEEP_CAPTURES_BYTES", 0)
    bare = lh.long_view(m, inp, tile=8)
    assert kept.captures is not None and bare.captures is None
    rows, cols = lh.tile_bounds(kept, 3, 2)
    assert (rows, cols) == ((24, 32), (16, 24))
    for view, recaptured in [(kept, False), (bare, True)]:
        r = lh.region(m, view, 1, 3, rows, cols)
        assert r.recaptured == recaptured and r.row_tokens == inp.tokens[24:32]
        assert float((r.weights.double() - P[3, 24:32, 16:24]).abs().max()) <= MAP_TOL
    with pytest.raises(ValueError, match="outside the 5 × 5 map"):
        lh.tile_bounds(kept, 5, 0)
    with pytest.raises(ValueError, match="layer 2 is outside"):
        lh.region(m, kept, 2, 0, rows, cols)


def test_no_l_by_l_tensor_while_capturing_and_mapping():
    m = lh.demo()
    L = 1024
    inp = lh.read_input(m, lh.sample_input(m, L), L)
    with LargestStorage() as seen:
        view = lh.long_view(m, inp)
    assert view.length == L and len(view.layers) == 2
    # a single float L × L (a map, a score matrix, the model's own additive mask) is 4·L² bytes
    assert seen.largest <= 4 * L * L // 4
    with LargestStorage() as short:
        capture(m.model, inp.idx[:, :L])  # the short page's capture keeps (Hq, L, L) per layer
    assert short.largest >= 4 * 4 * L * L


def test_the_trained_model_through_the_same_view():
    model = checkpoint.load().model
    m = lh.from_trained(model, "shipped")
    assert m.context == model.config.block_size and m.kind is lh.Kind.TRAINED
    text = lh.sample_input(m)
    assert text.startswith("^") and len(text) == m.context
    inp = lh.read_input(m, text)
    trace = run_trace(model, inp.idx)
    for layer, c in zip(trace.layers, trained_capture_qk(model, inp.idx), strict=True):
        assert torch.equal(c.q, layer.q[0]) and torch.equal(c.k, layer.k[0])
    seen = []
    view = lh.long_view(m, inp, tile=4, on_layer=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]
    for layer, tm in enumerate(view.layers):
        P = trace.layers[layer].weights[0].double()  # the model's own (nh, T, T) weights
        rows = [r for r in view.head_rows if r["layer"] == layer]
        assert [r["previous token"] for r in rows] == pytest.approx(
            heads.previous_token_score(P).tolist(), abs=1e-5
        )
        assert [r["entropy, nats"] for r in rows] == pytest.approx(heads.mean_entropy(P).tolist(), abs=1e-4)
        edges, _ = tm.profiles(8)
        expected = heads.position_profile(heads.row_previous(P), edges)
        table = lh.profile_rows(view, layer, 8)
        got = torch.tensor([[r["previous token"] for r in table if r["head"] == h] for h in range(4)])
        assert float((got.double() - expected).abs().max()) <= 1e-5  # float32 weights, means of ≤ 4 rows


def test_the_budget_decides_the_longest_input():
    m = lh.demo()
    small = lh.Budget(max_bytes=40 * 2**20, max_seconds=60)
    n = lh.longest_input(m, small)
    assert 0 < n < m.context
    assert lh.estimate(m, n, small).fits and not lh.estimate(m, n + 1, small).fits
    est = lh.estimate(m, n + 1, small)
    assert est.message.startswith(f"this input: {n + 1:,} tokens, {est.bytes / 2**20:,.1f} MiB")
    assert "budget: 40 MiB, 60 s" in est.message and "Over the budget" in est.message
    inp = lh.read_input(m, lh.sample_input(m, n + 1), n + 1)
    with pytest.raises(lh.OverBudget, match="Over the budget"):
        lh.long_view(m, inp, small)
    assert lh.estimate(m, 4096).bytes > lh.estimate(m, 1024).bytes  # grows with L
    assert lh.estimate(m, 4096, layers=1).seconds < lh.estimate(m, 4096).seconds


def test_text_in_is_checked_and_cut():
    m = lh.demo()
    inp = lh.read_input(m, "3, 4 5 99", 3)
    assert inp.idx.tolist() == [[3, 4, 5]] and inp.tokens == ["3", "4", "5"] and inp.dropped == 1
    for text, n, message in [
        ("1 100", None, "outside the vocabulary"),
        ("1 two", None, "whole numbers"),
        ("", None, "0 tokens"),
        (" ".join(["1"] * 4097), None, "4097 tokens"),
    ]:
        with pytest.raises(ValueError, match=message):
            lh.read_input(m, text, n)
    assert len(lh.sample_input(m, 100).split()) == 100
    # a model with a tokenizer reads the prose and keeps its first n tokens (one per character here)
    chars = lh.LongModel(**{**vars(m), "tokenizer": CharTokenizer(), "vocab_size": 128})
    prose = lh.sample_input(chars, 50)
    assert prose == lh.sample_text()  # the whole prose: read_input cuts it
    inp = lh.read_input(chars, prose, 50)
    assert "".join(inp.tokens) == prose[:50] and inp.dropped == len(prose) - 50
    trained = lh.from_trained(checkpoint.load().model, "shipped")
    with pytest.raises(ValueError, match="only the letters"):
        lh.read_input(trained, "abc!")
    assert "public domain" in " ".join((long_inputs.SAMPLE.parent / "README.md").read_text().lower().split())
    assert len(lh.sample_text().split()) > 3000


# -- one long read at a time, within its seconds, its view kept --------------------------------
def _trained():
    m = lh.from_trained(checkpoint.load().model, "shipped")
    return m, lh.read_input(m, lh.sample_input(m))


def test_a_second_long_read_is_busy_at_once_and_short_views_still_run():
    """While one long read runs (held inside its first layer's callback), a second one is told
    the server is busy at once rather than queued behind it, a zoom that would re-run the forward
    too, and a short view of the trained model (its own traced forward) is not held up."""
    import threading
    import time

    m, inp = _trained()
    inside, release = threading.Event(), threading.Event()
    first: list = []

    def hold(done: int, total: int) -> None:
        inside.set()
        release.wait(30)

    reader = threading.Thread(target=lambda: first.append(lh.long_view(m, inp, tile=4, on_layer=hold)))
    reader.start()
    try:
        assert inside.wait(30)
        start = time.perf_counter()
        with pytest.raises(Busy, match="another long read is running"):
            lh.long_view(m, inp, tile=8)
        trace = run_trace(m.model, inp.idx)  # the trained heads page's short view
        assert time.perf_counter() - start < 10 and len(trace.layers) == m.n_layers
    finally:
        release.set()
        reader.join(30)
    view = first[0]
    assert len(view.layers) == m.n_layers
    bare = lh.LongHeadsView(**{**view.__dict__, "captures": None})  # a zoom must re-run the forward
    assert lh.region(m, bare, 0, 0, (0, 4), (0, 4)).recaptured  # the slot is free again


def test_a_long_read_past_its_seconds_keeps_the_layers_it_finished():
    """The estimate fits the budget but the read runs slower (here: the budget's seconds spent in
    the first layer's callback, as on a loaded server): it stops after the layer that crossed the
    budget and returns that layer, equal to the same layer of a read with no time limit."""
    m, inp = _trained()
    est = lh.estimate(m, inp.idx.shape[1], tile=4)
    budget = lh.Budget(max_seconds=max(0.2, est.seconds * 1.01))
    assert lh.estimate(m, inp.idx.shape[1], budget, tile=4).fits
    seen = []

    def slow(done: int, total: int) -> None:
        seen.append((done, total))
        time.sleep(budget.max_seconds + 0.1)

    view = lh.long_view(m, inp, budget, tile=4, on_layer=slow)
    assert seen == [(1, m.n_layers)] and view.stopped
    assert len(view.layers) == 1 and view.layers_asked == m.n_layers == 2
    assert [r["layer"] for r in view.head_rows] == [0] * m.n_heads
    full = lh.long_view(m, inp, tile=4)  # the slot was released; no time limit reached
    assert not full.stopped and len(full.layers) == m.n_layers
    assert torch.equal(view.layers[0].mass, full.layers[0].mass)
    assert view.captures is not None and lh.region(m, view, 0, 0, (0, 4), (0, 4)).weights.shape == (4, 4)


def test_the_estimate_scales_with_the_measured_slowdown_and_the_default_leaves_a_margin():
    """Oracle: the estimate's seconds times the slowdown (the cost model is linear in it), and the
    default length found by counting up from 1 until half the seconds are passed."""
    m = lh.demo()
    quiet, busy = lh.Budget(max_seconds=2.0), lh.Budget(max_seconds=2.0, slowdown=7.5)
    for L in (64, 1000, 4096):
        assert lh.estimate(m, L, busy).seconds == pytest.approx(7.5 * lh.estimate(m, L, quiet).seconds)
    n = lh.default_length(m, busy)
    assert lh.estimate(m, n, busy).seconds <= busy.max_seconds * lh.DEFAULT_SHARE
    step = next(L for L in range(1, m.context + 1) if lh.estimate(m, L, busy).seconds > 1.0)
    assert n == step - 1 and n < lh.longest_input(m, busy) <= lh.longest_input(m, quiet)


def test_the_calibration_is_timed_once_and_kept(monkeypatch):
    """The slowdown is measured / predicted seconds of the calibration workload (≥ 1), measured at
    first use and reused until it is ``CALIBRATION_KEEP_S`` old; a slower machine gets a larger one."""
    runs = []

    def run(factor: float):
        def timed() -> tuple[float, float]:
            runs.append(factor)
            return 0.01 * factor, 0.01

        return timed

    monkeypatch.setattr(long_inputs, "_measured", None)
    monkeypatch.setattr(long_inputs, "_calibration_run", run(4.0))
    assert long_inputs.calibrate() == pytest.approx(4.0)
    count = len(runs)
    assert long_inputs.measured_budget().slowdown == pytest.approx(4.0) and len(runs) == count  # kept
    monkeypatch.setattr(long_inputs, "_calibration_run", run(0.5))  # a faster machine than the fit
    old = time.monotonic() - long_inputs.CALIBRATION_KEEP_S - 1
    monkeypatch.setattr(long_inputs, "_measured", (4.0, old))  # measured long enough ago
    assert long_inputs.calibrate() == 1.0  # measured again, never below the fitted constants
    monkeypatch.undo()
    monkeypatch.setattr(long_inputs, "_measured", None)  # measured here, forgotten after the test
    slowdown = long_inputs.calibrate()  # the real workload on this machine
    assert 1.0 <= slowdown < 1000


def test_long_views_over_the_shared_caches_bound_are_kept(monkeypatch):
    """A long view larger than one result of the shared view cache is kept in the long store:
    the next rerun gets the same object, the input is not read again."""
    from lab_ui import long_heads as page
    from lab_ui import view_cache

    m, inp = _trained()
    first = page.LONG_VIEWS.view(lh.long_view, m, inp, tile=4)
    monkeypatch.setattr(view_cache.CACHE, "max_entry_bytes", view_cache.size_of(first) - 1)
    calls = []
    capture = lh._capture
    monkeypatch.setattr(lh, "_capture", lambda m: calls.append(1) or capture(m))  # a read would call it
    again = page.LONG_VIEWS.view(lh.long_view, m, inp, tile=4)
    assert again is first and not calls
    assert view_cache.size_of(first) > view_cache.CACHE.max_entry_bytes  # the shared cache would drop it


def test_a_long_read_of_a_hugging_face_model_never_holds_up_its_short_maps(loaded):
    """The capture is per thread (attn_core.hf.capture.recording): while one visitor's long
    read of a model is held inside its first layer, another visitor's short map of the same loaded
    model runs to its end and equals the one computed when nothing else runs."""
    import threading
    import time

    m = lh.from_hf(loaded)
    inp = lh.read_input(m, " ".join(map(str, ids()[0].tolist())))
    alone = hf.recompute(loaded.model, ids()).maps
    inside, release = threading.Event(), threading.Event()

    def hold(done: int, total: int) -> None:
        inside.set()
        release.wait(30)

    reader = threading.Thread(target=lambda: lh.long_view(m, inp, tile=8, on_layer=hold))
    reader.start()
    try:
        assert inside.wait(30)
        start = time.perf_counter()
        beside = hf.recompute(loaded.model, ids()).maps
        assert time.perf_counter() - start < 10
    finally:
        release.set()
        reader.join(30)
    assert all(torch.equal(a, b) for a, b in zip(alone, beside, strict=True))
