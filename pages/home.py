"""Home: what the lab is, the toy sentence, and a link to every page."""

import streamlit as st

from attn_core.views.home import SENTENCE
from lab_ui.nav import PAGES
from lab_ui.page import header, require

TITLE = "Attention Lab"
INTRO = (
    "See, poke and verify **scaled dot-product attention**, "
    "$O = \\operatorname{softmax}(QK^\\top/\\sqrt{d_k} + M)\\,V$, live. Every number on every page is "
    "computed from your inputs as you change them, and every figure is checked on screen against an "
    "independent oracle (torch SDPA, autograd, finite differences, or the spec's own check numbers)."
)
FIX = "nothing: the home page asks for no input"


def inputs() -> None:
    """Home asks for nothing."""
    return None


def build(ask: None) -> tuple[str, ...]:
    """The running example's tokens."""
    return SENTENCE


def show(ask: None, view: tuple[str, ...]) -> None:
    """The running example, then a card for every page."""
    st.subheader("The running example")
    st.markdown(
        " ".join(f"`{w}`" for w in view)
        + " — under a causal mask, *bank* may read *the*, *river* and itself. With "
        "q_bank = (2, −1), keys (0, 0), (1, 0), (1, 1) and values (0, 0), (1, 0), (0, 1) in a "
        "[geography, money] plane, bank puts weights **0.140 · 0.576 · 0.284** on them and becomes "
        "**(0.576, 0.284)**: mostly geography, so this bank is a riverbank."
    )

    st.subheader("Pages")
    columns = st.columns(3)
    for i, page in enumerate(PAGES):
        with columns[i % 3].container(border=True):
            st.page_link(page.path, label=f"**{page.title}**", icon=page.icon)
            st.caption(page.blurb)

    st.caption("Settings live in the page address: copy the URL to share the exact view you are looking at.")


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
