"""The Hugging Face heads page's inputs: the model picker (the shipped SmolLM2, the demo model, or a
folder or hub id) and the short input box (prose for a model with a tokenizer, else token ids)."""

from __future__ import annotations

import streamlit as st

from attn_core.views import hf_heads
from lab_ui import widgets

SOURCES = ("SmolLM2-135M, pretrained (shipped)", "demo model built here (fastest)", "local folder or hub id")
SOURCE_IDS = dict(zip(SOURCES, ("smollm2", "demo", "local"), strict=True))  # what a link carries


def model_source() -> str:
    """The model picker: SmolLM2, the demo, or a folder or hub id ("" until one is typed)."""
    c1, c2 = st.columns([1, 2])
    with c1:
        kind = widgets.radio("model", SOURCES, key="hf_src", ids=SOURCE_IDS)
    with c2:
        if kind == SOURCES[0]:
            st.caption(
                f"{hf_heads.SHIPPED_LABEL}: {hf_heads.SHIPPED_ORIGIN}. The weights are 4-bit quantized and "
                "de-quantized here, so every figure on this page is this quantized model's (README, "
                "*The pretrained model*)."
            )
            return hf_heads.SHIPPED
        if kind == SOURCES[1]:
            st.caption(hf_heads.DEMO_LABEL + ".")
            return hf_heads.DEMO
        return st.text_input("folder or hub id", key="hf_path", placeholder="/models/SmolLM-135M or gpt2")


def input_box(loaded) -> tuple[str, str]:
    """The short input and its label: prose for a model with a tokenizer; else token ids, opening
    on ids valid for this model (a previous model's ids are replaced when they do not fit)."""
    if loaded.tokenizer is not None:
        # ids and prose keep separate boxes: switching models never feeds one the other's
        text = widgets.text_area(
            "text", key="hf_prose", default=hf_heads.SHIPPED_TEXT, max_chars=4000, height=68
        )
        return text, "text"
    label, default = "token ids (comma or space separated)", hf_heads.default_ids(loaded)
    if st.session_state.get("hf_ids_for") != loaded.name:  # another model: its ids may not fit this one
        st.session_state["hf_ids_for"] = loaded.name
        if not hf_heads.ids_fit(loaded, st.session_state.get("hf_text", default)):
            st.session_state["hf_text"] = default
    vocab = loaded.model.config.vocab_size
    st.caption(f"**{loaded.name}** has no tokenizer: its inputs are token ids 0…{vocab - 1}.")
    return widgets.text_area(label, key="hf_text", default=default, max_chars=4000, height=68), label
