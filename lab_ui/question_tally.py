"""The presenter's view of a room's answers to one drill (attn_core.practice.tally): how many
answered and were right, and a bar per slip ("12 used the 32 query heads instead of the 8 KV
heads"). Storage of the answers is the room's (lab_ui/classroom); this only draws a `Tally`."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from attn_core.practice.tally import Tally
from lab_ui import figures


def figure(t: Tally) -> go.Figure:
    """One bar per outcome: right, each slip (most common first), other wrong, unreadable, none."""
    rows = [("right", t.right), *t.by_slip, ("wrong, no known slip", t.other_wrong)]
    rows += [("could not be read", t.unreadable), ("no answer", t.no_answer)]
    rows = [(label, n) for label, n in rows if n or label == "right"]
    return figures.bars(
        [label if len(label) <= 64 else label[:63] + "…" for label, _ in rows],
        {"seats": [n for _, n in rows]},
        title=f"{t.answered + t.unreadable} of {t.seats} answered",
        y_title="seats",
    )


def show(t: Tally, key: str) -> None:
    """The summary lines, then the bars."""
    for line in t.lines():
        st.markdown(line)
    figures.show(figure(t), key=key)
