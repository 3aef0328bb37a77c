"""Hugging Face heads: a real causal LM's attention, recomputed by attn_core and checked against
the model's own probabilities."""

import pandas as pd
import streamlit as st

from attn_core.views import hf_heads, long_heads
from attn_core.views.hf_heads import LOAD_CAP_S, MAX_PARAMS, MAX_TOKENS
from lab_ui import figures, hf_inputs, view_cache, widgets
from lab_ui.badges import error_table, oracle_badge, table
from lab_ui.head_maps import head_grid, one_head
from lab_ui.long_heads import long_section
from lab_ui.open_page import open_costs
from lab_ui.page import compute, header, require, run_section

TITLE = "Hugging Face heads"
INTRO = (
    "A causal LM's attention, read where every transformers model hands its queries and keys to its "
    "attention function (after rotary embedding and any QK-norm, KV heads not repeated): the weights are "
    "recomputed by `attn_core.attention` with the model's scale, soft-capping and learned sinks, a causal "
    "mask we build, its GQA grouping and its sliding windows — then compared with the model's own "
    "probabilities. The page opens on **SmolLM2-135M-Instruct**, a pretrained model installed with the "
    "app (no download): its sinks, previous-token and induction heads are real."
)
FIX = "the input above (the model stays loaded)"


def load_model(source: str):
    """The model, with a progress bar while SmolLM2 loads for the first time in this server."""
    if source != hf_heads.SHIPPED or hf_heads.shipped_loaded():
        with st.spinner("loading the model…"):
            # fresh: load keeps its own bounded store of models (the view cache counts a model as
            # no bytes, so it must not hold one)
            return compute(hf_heads.load, source, fresh=True, inputs="the model folder or hub id")
    how = (
        "reading its cached float32 weights, about 10 s on a busy server"
        if hf_heads.shipped_cached()
        else "reading its 4-bit GGUF file, the first time on this machine: about 35 s on a busy server"
    )
    bar = st.progress(0.0, text=f"loading SmolLM2-135M once per server, {how} (README)…")

    def progress(fraction: float, stage: str) -> None:
        bar.progress(min(fraction, 1.0), text=f"SmolLM2: {stage}…")

    loaded = compute(hf_heads.load, source, progress=progress, inputs="the model")
    bar.empty()
    return loaded


def maps(view: hf_heads.HFView) -> None:
    v, worst = view.view, view.worst_layer
    oracle_badge(f"{view.oracle} (worst layer: {v.layers[worst]})", v.max_abs_diff[worst], v.tol[worst])
    if v.not_reproduced:
        st.markdown(":red-badge[✗ NOT REPRODUCED: " + "; ".join(v.not_reproduced) + "]")
    only = (
        f" Attention layers: {', '.join(map(str, v.layers))} of {v.n_decoder_layers}"
        " (the others have no map)."
        if view.n_layers < v.n_decoder_layers
        else ""
    )
    st.caption(
        "Tolerance per layer: the model's float rounding, 2·d·u·scale·max‖q‖·max‖k‖ + 8u with u the unit "
        "roundoff of its dtype (Higham's bound for a length-d dot product). Anything the model adds that "
        "the recomputation does not reproduce (an argument it does not know, a mask of its own) is named "
        "in a red badge." + only
    )
    index = widgets.slider("layer", 0, view.n_layers - 1, 0, key="hf_layer") if view.n_layers > 1 else 0
    layer = v.layers[index]
    P = v.maps[index]
    title = f"Layer {layer}: every head (row: query, column: key)"
    figures.show(figures.cached(head_grid, P[None], view.tokens, title, layer), key="hf_grid")
    head = widgets.slider("head", 0, P.shape[0] - 1, 0, key="hf_head") if P.shape[0] > 1 else 0
    figures.show(one_head(P[head], view.tokens, f"Layer {layer}, head {head}"), key="hf_one")
    group = P.shape[0] // v.n_kv_heads
    st.caption(
        f"{P.shape[0]} query heads share {v.n_kv_heads} KV heads: head {head} reads KV head {head // group}. "
        + (f"Sliding window: query i reads keys i − {v.sliding_window - 1}…i." if v.sliding_window else "")
    )


def layer_by_layer(view: hf_heads.HFView) -> None:
    st.subheader("Layer by layer")
    v, layers = view.view, view.view.layers
    left, right = st.columns(2)
    with left:
        series = {"sink share (weight on token 0)": v.sink_share}
        fig = figures.lines(
            layers, series, title="Sink share by layer", x_title="layer", y_title="mean weight on token 0"
        )
        figures.show(fig.update_xaxes(dtick=1), key="hf_sink")
        st.caption(
            "Card 18: the weight every query parks on the first token, mean over heads and rows t ≥ 1."
        )
    with right:
        series = {"mean entropy": v.entropy, "uniform causal head": [view.uniform_entropy] * view.n_layers}
        fig = figures.lines(layers, series, title="Entropy by layer", x_title="layer", y_title="nats")
        figures.show(fig.update_xaxes(dtick=1), key="hf_entropy")
        st.caption(
            "Card 17: mean −Σ p ln p over heads and rows t ≥ 1; the line is a head that spreads evenly."
        )
    fig = figures.lines(
        list(range(view.n_layers + 1)),
        {"‖X − 1x̄ᵀ‖ / ‖X‖": v.rank_one},
        title="Residual stream: distance from rank 1",
        x_title="after layer (0 = embeddings)",
        y_title="relative distance",
    )
    figures.show(fig.update_xaxes(dtick=1), key="hf_rank")
    error_table(view.layer_rows, "layers.csv", "hf_layers", ("max |Δ| vs the model", "tolerance"))


def kv_cache(view: hf_heads.HFView) -> None:
    st.subheader("KV cache at this length")
    v, T = view.view, len(view.tokens)
    kept = min(T, v.sliding_window) if v.sliding_window else T
    st.metric(
        f"K and V of every layer for {T} tokens",
        f"{v.kv_cache_bytes:,} bytes ({v.kv_cache_bytes / 2**10:,.1f} KiB)",
    )
    st.caption(
        f"2 (K and V) × {view.n_layers} layers × {v.n_kv_heads} KV heads × {v.head_dim} dims × {kept} "
        "tokens kept"
        + (f" (the sliding window keeps the last {v.sliding_window})" if v.sliding_window else "")
        + " × 4 bytes (float32 here). The Cost calculator sizes it for any length, dtype and batch."
    )


def probe(loaded) -> None:
    """The model's heads on the standard probe (its own view call, on the loaded model)."""
    st.subheader("Induction, previous-token and sink heads: the standard probe")
    with st.spinner("running the probe…"):
        scores = compute(view_cache.view, hf_heads.head_probe, loaded, inputs="the model")
    if scores is None:
        return
    n = scores.period
    st.caption(
        f"TransformerLens's test: BOS, then {n} random token ids, then the same {n} again (seeded; the same "
        "ids on every visit). Induction: mean weight a second-copy token puts on the token *after* its "
        "earlier occurrence. Previous token: mean weight on t − 1. Sink: mean weight on position 0 (BOS), "
        "rows t ≥ 1. Scores by position on real text come from the long-input section below."
    )
    tops = {name: scores.top(name) for name in hf_heads.SCORES}
    st.markdown(
        "  \n".join(
            f"**Top {name} heads:** " + ", ".join(f"{head} ({value:.2f})" for head, value in top)
            for name, top in tops.items()
        )
    )
    name = widgets.radio("score", hf_heads.SCORES, key="hf_probe_score", horizontal=True)
    s = scores.by_name()[name]
    layers, heads = [str(layer) for layer in scores.layers], [str(h) for h in range(s.shape[1])]
    fig = figures.heatmap(
        s.T,
        layers,
        heads,
        title=f"{name} score of every head",
        x_title="layer",
        y_title="head",
        value_name=name,
        zmin=0,
        zmax=1,
    )
    figures.show(fig, key="hf_probe_map")
    table(pd.DataFrame(scores.rows()), "head_scores.csv", key="hf_probe", hide_index=True)


def long_inputs(model: long_heads.LongModel) -> None:
    long_section(model, "hf_long")


def inputs() -> tuple:
    """(the model's source, the loaded model, the input text, what the sections name as their
    inputs); the page stops until a model loads."""
    st.caption(
        f"Caps: at most {MAX_PARAMS / 1e6:,.0f} million parameters (read from the config before any weight "
        f"loads), {MAX_TOKENS} tokens, and a load time of {LOAD_CAP_S:.0f} s (reported when exceeded: a load "
        f"cannot be interrupted). float32 on the CPU. Tried: {hf_heads.TRIED}."
    )
    source = hf_inputs.model_source()
    require(
        source or None,
        fix="the model: give a folder on this server (or a hub id, where the hub is reachable)",
    )
    loaded = load_model(source)
    require(loaded, fix="the model folder or hub id")
    if loaded.over_time_cap:
        st.warning(
            f"Loading took {loaded.load_s:.0f} s, over the {LOAD_CAP_S:.0f} s cap: pick a smaller model."
        )
    st.caption(f"**{loaded.name}** · {loaded.n_params:,} parameters · loaded in {loaded.load_s:.1f} s.")
    text, label = hf_inputs.input_box(loaded)
    return source, loaded, text, f"the {label} and the model"


def build(ask: tuple) -> hf_heads.HFView | None:
    _, loaded, text, where = ask
    return compute(view_cache.view, hf_heads.hf_view, loaded, text, inputs=where)


def show(ask: tuple, view: hf_heads.HFView) -> None:
    """The sections on this input, the probe and the long input on the model, the Cost page's link."""
    source, loaded, _, where = ask
    run_section(maps, view, inputs=where)
    run_section(layer_by_layer, view, inputs=where)
    run_section(kv_cache, view, inputs=where)
    run_section(probe, loaded, inputs="the model")
    st.subheader(f"Long inputs: up to {long_heads.MAX_LONG_TOKENS:,} tokens, tile by tile")
    long_model = long_heads.demo() if source == hf_heads.DEMO else long_heads.from_hf(loaded)
    run_section(long_inputs, long_model, inputs="the long input")
    if view.config_json is not None:
        T = max(len(view.tokens), 1)
        open_costs("Open this model in the Cost calculator", config_text=view.config_json, T=T)


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
