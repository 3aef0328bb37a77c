"""The shared view cache (lab_ui/view_cache.py): keys follow content, memory stays bounded, and a
session never sees a figure computed for other inputs.

Oracles: the same computation run with the cache emptied (a state computed from scratch), the
pickled size of what the cache holds (an independent measure of its bytes), and call counters."""

from __future__ import annotations

import pickle
import threading
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from apptest_helpers import chart, heatmap_z

from attn_core.trained.memo import per_model
from attn_core.views import inputs, playground
from lab_ui import view_cache
from lab_ui.view_cache import ViewCache, fingerprint, size_of


@pytest.fixture(autouse=True)
def empty_cache():
    view_cache.CACHE.clear()
    view_cache.CACHE.check_writes = True
    yield
    view_cache.CACHE.check_writes = False
    view_cache.CACHE.clear()


@dataclass(frozen=True)
class Box:
    x: torch.Tensor
    label: str


# ------------------------------------------------------------------------------------ keys


def test_equal_content_in_distinct_objects_is_one_key():
    a = Box(torch.arange(6.0).reshape(2, 3), "a")
    b = Box(torch.arange(6.0).reshape(2, 3).clone(), "a")
    assert a.x is not b.x
    assert fingerprint(a, 1, scale=0.5) == fingerprint(b, 1, scale=0.5)


@pytest.mark.parametrize(
    "other",
    [
        Box(torch.tensor([[0.0, 1, 2], [3, 4, 5 + 2**-21]]), "a"),  # one element, by one float32 ulp
        Box(torch.arange(6.0).reshape(3, 2), "a"),  # shape
        Box(torch.arange(6, dtype=torch.float64).reshape(2, 3), "a"),  # dtype
        Box(torch.arange(6.0).reshape(2, 3), "b"),  # a string field
    ],
)
def test_any_changed_input_is_another_key(other):
    assert fingerprint(Box(torch.arange(6.0).reshape(2, 3), "a")) != fingerprint(other)


def test_object_arrays_are_keyed_by_their_elements_not_their_pointers():
    a = np.array(["x", None], dtype=object)
    key = fingerprint(a)
    a[0] = "y"  # same buffer of pointers? no: a new pointer, but the content is what must count
    assert fingerprint(a) != key
    assert fingerprint(np.array(["x", None], dtype=object)) == key


def test_numbers_of_different_types_and_argument_order_are_different_keys():
    assert fingerprint(1) != fingerprint(1.0) != fingerprint("1")
    assert fingerprint(1, 2) != fingerprint(2, 1)
    assert fingerprint(a=1) != fingerprint(b=1)


def test_a_model_trained_further_is_a_new_key():
    model = torch.nn.Linear(3, 2)
    before = fingerprint(model)
    assert fingerprint(model) == before
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    assert fingerprint(model) != before
    # and the per-model memo of attn_core recomputes after the step too
    calls = []
    per_model(model, "k", lambda: calls.append(1))
    per_model(model, "k", lambda: calls.append(1))
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    per_model(model, "k", lambda: calls.append(1))
    assert len(calls) == 2


# ---------------------------------------------------------------------------- the cache


def test_one_computation_per_state_and_errors_are_not_kept():
    cache, calls = ViewCache(), []

    def square(x: int) -> int:
        calls.append(x)
        if x < 0:
            raise ValueError("negative")
        return x * x

    assert [cache.view(square, 3) for _ in range(5)] == [9] * 5
    assert calls == [3]
    for _ in range(2):
        with pytest.raises(ValueError):
            cache.view(square, -1)
    assert calls == [3, -1, -1]


def test_sessions_asking_at_once_share_one_computation():
    cache, calls, gate = ViewCache(), [], threading.Event()

    def slow(x: int) -> int:
        calls.append(x)
        gate.wait(5)
        return x + 1

    out: list[int] = []
    threads = [threading.Thread(target=lambda: out.append(cache.view(slow, 1))) for _ in range(8)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(10)
    assert out == [2] * 8 and calls == [1]


def test_memory_stays_bounded_over_a_thousand_states():
    """1,000 distinct Playground states (random Q, K, V of varying sizes) through a cache with a
    small byte cap: entries and bytes stay within their caps, by the cache's own count and by
    the pickled size of everything it holds."""
    cache = ViewCache(max_entries=64, max_bytes=2 * 2**20)
    g = torch.Generator().manual_seed(0)
    for seed in range(1000):
        L, S, d = (int(n) for n in torch.randint(2, 24, (3,), generator=g))
        qkv = inputs.random_qkv(L, S, d, d, 1, 1, seed)
        cache.view(playground.view, qkv, None, d**-0.5)
        assert cache.nbytes <= cache.max_bytes
        assert all(n <= cache.max_entries for n in cache.entries().values())
    held = cache.values()
    assert 0 < len(held) <= 64
    pickled = sum(len(pickle.dumps(v)) for v in held)
    assert pickled <= cache.max_bytes, pickled
    assert sum(size_of(v) for v in held) == cache.nbytes
    assert cache.misses == 1000 and cache.hits == 0


def test_one_result_over_the_entry_cap_is_returned_not_kept():
    cache = ViewCache(max_bytes=2**20)
    big = cache.view(torch.zeros, 2**19)  # 2 MiB of float32
    assert big.numel() == 2**19 and cache.values() == [] and cache.nbytes == 0


def make_ones(n: int) -> torch.Tensor:
    return torch.ones(n)


def test_verify_names_a_view_a_page_wrote_into():
    cache = ViewCache()
    cache.check_writes = True
    x = cache.view(make_ones, 3)
    cache.view(make_ones, 4)
    assert cache.verify() == []
    x[0] = 5.0
    assert cache.verify() == [f"{__name__}.make_ones"]


# ------------------------------------------------------------------------------- AppTest

PLAYGROUND = "pages/playground.py"
RANDOM = {"in_src": "random", "in_L": "5", "in_S": "6"}


def weights(at) -> list:
    assert not at.exception, [e.message for e in at.exception]
    return heatmap_z(chart(at, "Weights P")).tolist()


def test_two_sessions_with_different_inputs_never_see_each_others_figures(app):
    a = app(PLAYGROUND, **RANDOM, in_seed=1)
    b = app(PLAYGROUND, **RANDOM, in_seed=2)
    a_first, b_first = weights(a), weights(b)
    assert a_first != b_first
    a.run()
    b.run()
    assert weights(a) == a_first and weights(b) == b_first
    assert view_cache.CACHE.hits > 0  # the reruns were served from the shared cache
    view_cache.CACHE.clear()  # the oracle: each state computed from scratch
    assert weights(app(PLAYGROUND, **RANDOM, in_seed=1)) == a_first
    assert weights(app(PLAYGROUND, **RANDOM, in_seed=2)) == b_first


def test_a_session_with_the_same_inputs_is_served_the_same_view(app):
    a = app(PLAYGROUND, **RANDOM, in_seed=3)
    misses = view_cache.CACHE.misses
    b = app(PLAYGROUND, **RANDOM, in_seed=3)
    assert weights(a) == weights(b)
    assert view_cache.CACHE.misses == misses  # the second session computed nothing new


def set_scale(at, i):
    at.selectbox(key="in_scale").set_value(["1/√d_k", "1/d_k"][i % 2])


def set_text(at, i):
    at.text_area(key="th_text").set_value(["^abcdabcd", "^abcdefgh"][i % 2])


def set_hf_text(at, i):
    if i == 0:  # the demo model: token ids
        at.radio(key="hf_src").set_value("demo model built here (fastest)").run()
    at.text_area(key="hf_text").set_value(["1 2 3 1 2 3", "4 5 6 7 8 9"][i % 2])


@pytest.mark.parametrize(
    ("page", "change", "title"),
    [
        (PLAYGROUND, set_scale, "Weights P"),
        ("pages/trained_heads.py", set_text, "Every head"),
        ("pages/hf_heads.py", set_hf_text, "Layer 0"),
    ],
)
def test_a_changed_input_always_changes_what_is_shown(app, page, change, title):
    """Back and forth between two inputs: every rerun shows the figure of its own input (the one
    computed from scratch), never the previous one's, whether the state was cached or not."""
    at = app(page)
    shown = {}
    for i in range(4):
        change(at, i)
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        spec = chart(at, title)["data"]
        if i % 2 in shown:
            assert spec == shown[i % 2]  # served from the cache: equal to its first computation
        shown[i % 2] = spec
    assert shown[0] != shown[1]
    view_cache.CACHE.clear()
    at.run()  # the last input computed from scratch
    assert chart(at, title)["data"] == shown[1]


def test_projector_mode_is_part_of_a_figures_key(app):
    plain = app("pages/trained_heads.py")
    big = app("pages/trained_heads.py", projector="true")
    sizes = [chart(at, "Every head")["layout"]["font"]["size"] for at in (plain, big)]
    assert sizes[0] < sizes[1]


def test_no_page_writes_into_a_shared_view(app):
    """Every page at its defaults, twice (the second run is served from the cache), then every
    stored value is re-fingerprinted: a page that modified a view or figure in place shows here."""
    from lab_ui.nav import PAGES

    for info in PAGES:
        at = app(info.path)
        at.run()
        assert not at.exception, (info.path, [e.message for e in at.exception])
    assert len(view_cache.CACHE.entries()) >= 8  # the views of most pages were stored and checked
    assert view_cache.CACHE.verify() == []


def test_evicted_views_in_reference_cycles_are_freed_without_waiting_for_python(monkeypatch):
    """With the interpreter's own collector off (the server runs without Streamlit's post-run
    collection, and a full pass is rare), views that point back at themselves are still freed once
    evicted: the cache collects after every COLLECT_BYTES given back. Counted with weak references
    to each view's 1 MiB array (the array dies only when its cycle is collected)."""
    import gc
    import weakref

    mib = 2**20
    monkeypatch.setattr(view_cache, "COLLECT_BYTES", 4 * mib)
    cache = ViewCache(max_entries=64, max_bytes=8 * mib)
    alive: list[weakref.ref] = []

    def cyclic_view(i: int) -> dict:
        view = {"scores": np.full(mib // 8, float(i))}  # 1 MiB of float64
        view["self"] = view  # a reference cycle: refcounting alone never frees it
        alive.append(weakref.ref(view["scores"]))
        return view

    gc.collect()
    gc.disable()
    try:
        for i in range(40):
            cache.get("cyclic", bytes([i]), lambda i=i: cyclic_view(i))
        live = sum(ref() is not None for ref in alive)
    finally:
        gc.enable()
    # kept: at most 8 MiB of views (~7 of 1 MiB + charges); plus at most 4 MiB evicted and not yet
    # collected. Without the cache's own collection all 40 would still be alive.
    assert cache.nbytes <= 8 * mib
    assert live <= 8 + 4, live
