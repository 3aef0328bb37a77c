"""The long-input section both heads pages share: a model's attention at up to 4,096 tokens, read
tile by tile (``attn_core.views.long_heads``), never as an L × L map.

Opt-in: nothing runs until the visitor turns the long read on, so the pages' default views stay
as fast as before. The budget (memory and seconds) decides how many tokens may be read; the page
states it and the estimate of the input before anything runs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from attn_core.views import long_heads as lh
from lab_ui import figures, view_cache, widgets
from lab_ui.badges import oracle_badge, table
from lab_ui.head_maps import head_grid
from lab_ui.page import compute

MAX_TEXT_CHARS = 60_000  # the shipped sample is ~18,000 characters; 4,096 ids fit in ~20,000
SUMMARIES = {"mass (each row block sums to 1)": "mass", "max weight in the tile": "max"}
# Long views, shared by all sessions: at most 2, LONG_VIEW_BYTES together (one may be all of it).
LONG_VIEWS_KEPT, LONG_VIEW_BYTES = 2, 160 * 2**20
LONG_VIEWS = view_cache.ViewCache(max_entries=LONG_VIEWS_KEPT, max_bytes=LONG_VIEW_BYTES)
LONG_VIEWS.max_entry_bytes = LONG_VIEW_BYTES
METRICS = ("sink share", "previous token", "mean distance, tokens", "local share", "entropy, nats")


def tile_for(L: int) -> int:
    """The map's tile B: 64 tokens at 1,024 tokens and beyond (a 4,096-token map is 64 × 64 tiles per
    head), else L / 16 so that a short context still gets a 16 × 16 map."""
    return lh.TILE if L >= 16 * lh.TILE else max(1, L // 16)


def _tile_labels(view: lh.LongHeadsView) -> list[str]:
    """Each map tile's first query/key position (and its token), the grid's axis labels."""
    B = view.tile
    return [f"{a * B}:{view.tokens[a * B]}" for a in range(-(-view.length // B))]


def _inputs(m: lh.LongModel, key: str, budget: lh.Budget) -> lh.LongInput | None:
    longest = lh.longest_input(m, budget)
    opens = lh.default_length(m, budget)
    st.caption(
        f"Budget of one read on this server: {budget.max_bytes / 2**20:,.0f} MiB beyond the loaded model "
        f"and {budget.max_seconds:,.0f} s; this server measured ×{budget.slowdown:.1f} the fitted time "
        f"(a small calibration, timed at first use). For **{m.name}** it allows **{longest:,} tokens** "
        f"(this section reads at most {m.context:,} of the model's positions) and opens on {opens:,}, "
        f"estimated at most {lh.DEFAULT_SHARE:.0%} of the seconds; the budget decides, not a fixed cap."
    )
    if longest < 1:
        st.error("This model does not fit the budget at even one token.")
        return None
    kind = "text" if m.tokenizer is not None else ("letters" if m.kind is lh.Kind.TRAINED else "token ids")
    if kind == "token ids":
        st.caption(
            f"**{m.name}** has no tokenizer: this box takes token ids 0…{m.vocab_size - 1}, and opens on one "
            "id per character of the sample (its code point modulo the vocabulary)."
        )
    left, right = st.columns([3, 1])
    with left:
        text = st.text_area(
            f"long input ({kind}; opens on Pride and Prejudice, ch. 1–3, public domain)",
            value=lh.sample_input(m, longest),
            key=f"{key}_ids" if kind == "token ids" else f"{key}_text",  # prose never lands in an ids box
            max_chars=MAX_TEXT_CHARS,
            height=120,
        )
    with right:
        n = widgets.number("tokens to read", 1, longest, min(opens, m.context), key=f"{key}_n")
    inp = compute(lh.read_input, m, text, n, inputs=f"the long input ({kind})")
    if inp is None:
        return None
    est = lh.estimate(m, inp.idx.shape[1], budget, tile=tile_for(inp.idx.shape[1]))
    (st.caption if est.fits else st.error)(
        est.message + (f" ({inp.dropped:,} tokens past the first {n:,} are not read.)" if inp.dropped else "")
    )
    return inp if est.fits else None


def _read(m: lh.LongModel, inp: lh.LongInput, budget: lh.Budget) -> lh.LongHeadsView | None:
    """The long view, kept in LONG_VIEWS; a progress bar follows each layer while it is read."""
    tile = tile_for(inp.idx.shape[1])
    bar = st.progress(0.0, text=f"reading {inp.idx.shape[1]:,} tokens, one layer at a time…")

    def on_layer(done: int, total: int) -> None:
        bar.progress(done / total, text=f"layer {done} of {total} read…")

    name = f"{lh.long_view.__module__}.{lh.long_view.__qualname__}"
    # the measured slowdown only decides what fits: a re-measurement never re-reads a kept view
    key = view_cache.fingerprint(m, inp, budget.max_bytes, budget.max_seconds, tile=tile)

    def read() -> lh.LongHeadsView:
        return lh.long_view(m, inp, budget, tile=tile, on_layer=on_layer)

    view = compute(LONG_VIEWS.get, name, key, read, fresh=True, inputs="the long input")
    bar.empty()
    return view


def long_section(m: lh.LongModel, key: str) -> None:
    """The whole section for one model; ``key`` prefixes its widgets (one per page)."""
    budget = lh.measured_budget()
    inp = _inputs(m, key, budget)
    if inp is None or not widgets.toggle("read the long input", key=f"{key}_on"):
        st.caption(
            "Turn on *read the long input* to compute every head's tile map (opt-in: it takes seconds)."
        )
        return
    view = _read(m, inp, budget)
    if view is None:
        return
    done = f"{len(view.layers)} of {view.layers_asked} layers"
    st.caption(
        f"{view.length:,} tokens read in {view.seconds:,.1f} s; {done} × {view.n_heads} heads, "
        f"tiles of {view.tile} × {view.tile} tokens. No L × L matrix was formed: the maps come from the lab's "
        "tiled online softmax (two passes over the tiles, the row log-sum-exp kept), docs/cards.md card 15."
    )
    if view.stopped:
        st.warning(
            f"{done}, stopped at the time limit ({budget.max_seconds:,g} s): this server is busier than "
            "its measured speed. The layers read are shown; read fewer tokens for all of them."
        )
    layer = (
        widgets.slider("layer", 0, len(view.layers) - 1, 0, key=f"{key}_layer") if len(view.layers) > 1 else 0
    )
    label = widgets.radio("tile summary", list(SUMMARIES), key=f"{key}_sum", horizontal=True)
    tm = view.layers[layer]
    maps = getattr(tm, SUMMARIES[label])
    figures.show(
        figures.cached(
            head_grid,
            maps[None],
            _tile_labels(view),
            f"Tile map of layer {layer}: every head, {label}",
            layer,
        ),
        key=f"{key}_grid",
    )
    _zoom(m, view, layer, key)
    _scores(view, layer, key)


def _zoom(m: lh.LongModel, view: lh.LongHeadsView, layer: int, key: str) -> None:
    st.markdown("**One region at full resolution** (computed on demand for that region only)")
    n = -(-view.length // view.tile)
    c = st.columns(4)
    with c[0]:
        head = widgets.number("head", 0, view.n_heads - 1, 0, key=f"{key}_zh")
    with c[1]:
        a = widgets.number("query tile", 0, n - 1, n - 1, key=f"{key}_za")
    with c[2]:
        b = widgets.number("first key tile", 0, n - 1, n - min(n, 4), key=f"{key}_zb")  # the diagonal
    with c[3]:
        span = widgets.number("key tiles", 1, n, min(n, 4), key=f"{key}_zs")
    rows, cols = lh.tile_bounds(view, a, b)
    last = lh.tile_bounds(view, a, min(b + span, n) - 1)[1]
    cols = (cols[0], last[1])
    reg = compute(view_cache.view, lh.region, m, view, layer, head, rows, cols, inputs="the region")
    if reg is None:
        return
    mapped = float(view.layers[layer].mass[head, a, b : b + span].sum())
    oracle_badge(
        "this region's mean row sum vs the tile map's mass of the same tiles",
        abs(float(reg.weights.sum(-1).mean()) - mapped),
        1e-5,
    )
    title = f"L{layer}H{head}: queries {rows[0]}…{rows[1] - 1}, keys {cols[0]}…{cols[1] - 1}"
    figures.show(_region_figure(reg, title), key=f"{key}_region")
    st.caption(
        f"Mass of these keys per query: {float(reg.weights.sum(-1).mean()):.6f} on average, recomputed here "
        f"from q, k and the rows' log-sum-exp; the map's tiles ({a}, {b}…{min(b + span, n) - 1}) hold "
        f"{mapped:.6f}."
        + (
            " q and k were not kept for this input, so the forward ran again up to this layer."
            if reg.recaptured
            else ""
        )
    )


def _region_figure(reg: lh.Region, title: str):
    rows = [f"{reg.rows[0] + i}:{t}" for i, t in enumerate(reg.row_tokens)]
    cols = [f"{reg.cols[0] + j}:{t}" for j, t in enumerate(reg.col_tokens)]
    return figures.heatmap(
        reg.weights, cols, rows, title=title, zmin=0, zmax=1, value_name="weight", height=560
    )


def _scores(view: lh.LongHeadsView, layer: int, key: str) -> None:
    st.markdown("**Head scores by layer** (rows t ≥ 1; the same definitions as the short maps above)")
    rows = pd.DataFrame(view.head_rows)
    metric = widgets.selectbox("score", METRICS, key=f"{key}_metric")
    by_head = {f"head {h}": rows[rows["head"] == h][metric].tolist() for h in range(view.n_heads)}
    fig = figures.lines(
        list(range(len(view.layers))), by_head, title=f"{metric} by layer", x_title="layer", y_title=metric
    )
    figures.show(fig.update_xaxes(dtick=1), key=f"{key}_bylayer")
    table(rows.round(4), "long_head_scores.csv", key=f"{key}_scores", hide_index=True)
    st.caption(
        f"Sink share: weight on token 0. Mean distance: Σ_j P[t, j]·(t − j). Local share: weight on the last "
        f"{view.band} keys t − {view.band - 1}…t. A single average can hide where a head works: the profiles "
        "below show each score along the sequence."
    )
    prof = pd.DataFrame(lh.profile_rows(view, layer))
    series = {f"head {h}": prof[prof["head"] == h][metric].tolist() for h in range(view.n_heads)}
    x = prof[prof["head"] == 0]["from position"].tolist()
    fig = figures.lines(
        x,
        series,
        title=f"Layer {layer}: {metric} by query position",
        x_title="query position t",
        y_title=metric,
    )
    figures.show(fig, key=f"{key}_profile")
    dist = pd.DataFrame(lh.distance_rows(view, layer))
    series = {f"head {h}": dist[dist["head"] == h]["mass"].tolist() for h in range(view.n_heads)}
    labels = [
        f"{lo}…{hi - 1}"
        for lo, hi in zip(
            dist[dist["head"] == 0]["distance from"], dist[dist["head"] == 0]["distance to"], strict=True
        )
    ]
    fig = figures.bars(
        labels,
        series,
        title=f"Layer {layer}: where the mass lies, by distance t − j",
        x_title="tokens back",
        y_title="share of the mass",
    )
    figures.show(fig, key=f"{key}_distance")
