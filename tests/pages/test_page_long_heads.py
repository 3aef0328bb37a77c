"""AppTest of the long-input section on both heads pages. Oracles: the model's own dense
probabilities (``output_attentions=True`` on the demo; the trained model's own trace), from which
the tile maps, a zoomed region and the scores are recomputed here independently."""

import itertools

import numpy as np
import torch
from apptest_helpers import badges, chart, frame, ok, plotly_array

from attn_core.trained.analysis import run_trace
from attn_core.views import long_heads
from attn_core.views import trained_heads as trained
from lab_ui.long_heads import tile_for

N = 256  # tokens read in the test: dense maps of this size are cheap to recompute


def dense_tile_mass(P: np.ndarray, B: int) -> np.ndarray:
    """(H, L, L) weights → (H, n, n): Σ over each tile / rows in its row block."""
    H, L, _ = P.shape
    n = -(-L // B)
    out = np.zeros((H, n, n))
    for a in range(n):
        for b in range(n):
            rows = P[:, a * B : (a + 1) * B, b * B : (b + 1) * B]
            out[:, a, b] = rows.sum((1, 2)) / rows.shape[1]
    return out


def test_hf_demo_long_read_is_opt_in_and_matches_the_dense_maps(app):
    at = app("pages/hf_heads.py", hf_src="demo")
    ok(at)
    assert not [c for c in at.get("plotly_chart") if "tile summary" in c.proto.spec]  # nothing ran yet
    assert any("it allows **4,096 tokens**" in c.value for c in at.caption)  # the budget decides
    at.number_input(key="hf_long_n").set_value(N).run()
    at.toggle(key="hf_long_on").set_value(True).run()
    ok(at)
    m = long_heads.demo()
    text = at.text_area(key="hf_long_ids").value
    ids = long_heads.read_input(m, text, N).idx
    with torch.no_grad():
        own = m.model(ids, output_attentions=True).attentions
    B = tile_for(N)
    grid = [plotly_array(t["z"]) for t in chart(at, "Tile map of layer 0")["data"]]
    ref = dense_tile_mass(own[0][0].double().numpy(), B)
    assert len(grid) == ref.shape[0]
    for z, r in zip(grid, ref, strict=True):
        np.testing.assert_allclose(z, r, atol=1e-5, rtol=0)
    # the zoomed region: head 0, the last query tile against the last four key tiles, at full resolution
    assert any("✓" in b and "tile map's mass" in b for b in badges(at))
    region = plotly_array(chart(at, "L0H0: queries")["data"][0]["z"])
    n = -(-N // B)
    P = own[0][0, 0].numpy()
    np.testing.assert_allclose(region, P[(n - 1) * B : N, (n - 4) * B : N], atol=1e-5, rtol=0)
    # the score table: sink share of layer 1's heads from the dense maps, rows t ≥ 1
    table = frame(at, "KV head")
    got = table[table["layer"] == 1]["sink share"].to_numpy()
    np.testing.assert_allclose(got, own[1][0, :, 1:, 0].mean(-1).numpy(), atol=1e-4)


def test_a_region_past_the_map_gets_a_message_and_the_maps_stay(app):
    at = app("pages/hf_heads.py", hf_src="demo")
    at.number_input(key="hf_long_n").set_value(64).run()
    at.toggle(key="hf_long_on").set_value(True).run()
    at.number_input(key="hf_long_zh").set_value(3).run()
    ok(at)
    ids = at.text_area(key="hf_long_ids")
    ids.input("1 2 x").run()
    assert not at.exception and any("whole numbers" in e.value for e in at.error)
    assert at.subheader[-1].value.startswith("Long inputs")  # the rest of the page is still there


def test_trained_page_profile_shows_where_the_previous_token_head_holds(app):
    at = app("pages/trained_heads.py")
    at.radio(key="th_section").set_value(trained.Section.LONG).run()
    ok(at)
    model = trained.shipped().model
    at.toggle(key="th_long_on").set_value(True).run()
    ok(at)
    text = at.text_area(key="th_long_text").value
    m = long_heads.from_trained(model, "shipped checkpoint")
    idx = long_heads.read_input(m, text, m.context).idx
    P = torch.stack([lt.weights[0] for lt in run_trace(model, idx).layers]).double()  # (layer, head, T, T)
    at.selectbox(key="th_long_metric").set_value("previous token").run()
    ok(at)
    spec = chart(at, "Layer 0: previous token by query position")
    T = idx.shape[1]
    prev = P[0].diagonal(offset=-1, dim1=-2, dim2=-1)  # (head, T − 1): P[t, t − 1] for t ≥ 1
    for h, trace in enumerate(spec["data"]):
        x = plotly_array(trace["x"]).astype(int)
        y = plotly_array(trace["y"])
        edges = [*list(x), T]
        want = [float(prev[h, lo - 1 : hi - 1].mean()) for lo, hi in itertools.pairwise(edges)]
        np.testing.assert_allclose(y, want, atol=1e-5)


def test_a_read_past_its_time_limit_draws_the_layers_it_finished(app, monkeypatch):
    """A budget of 0.5 s and a read slowed to 0.6 s per layer (as on a loaded server): the demo's
    first layer is drawn (equal to the dense maps) with "1 of 2 layers, stopped at the time limit"."""
    import time

    from attn_core.views import long_inputs

    monkeypatch.setattr(long_inputs, "DEFAULT_BUDGET", long_heads.Budget(max_seconds=0.5))
    monkeypatch.setattr(long_inputs, "_measured", (1.0, time.monotonic()))  # measured: as fitted
    fast = long_heads.tile_maps

    def slow(*args, **kwargs):
        time.sleep(0.6)
        return fast(*args, **kwargs)

    monkeypatch.setattr(long_heads, "tile_maps", slow)
    at = app("pages/hf_heads.py", hf_src="demo")
    at.number_input(key="hf_long_n").set_value(64).run()
    at.toggle(key="hf_long_on").set_value(True).run()
    ok(at)
    assert any("1 of 2 layers, stopped at the time limit (0.5 s" in w.value for w in at.warning)
    m = long_heads.demo()
    ids = long_heads.read_input(m, at.text_area(key="hf_long_ids").value, 64).idx
    with torch.no_grad():
        own = m.model(ids, output_attentions=True).attentions
    grid = [plotly_array(t["z"]) for t in chart(at, "Tile map of layer 0")["data"]]
    ref = dense_tile_mass(own[0][0].double().numpy(), tile_for(64))
    for z, r in zip(grid, ref, strict=True):
        np.testing.assert_allclose(z, r, atol=1e-5, rtol=0)
    table = frame(at, "KV head")
    assert set(table["layer"]) == {0}  # the scores of the layer read, none invented for layer 1
