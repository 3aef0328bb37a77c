"""The Cost page's box: its formulas checked against transformers' own build (views/cost_check).

A pasted config's build runs in a bounded child process: `show` draws the box where it stands
(pending, busy, or done) without waiting, the page draws the formulas' figures under it, and
`finish`, at the end of the page, waits for a pending build (never past its limit), then fills
the box in, or reruns the page where the build's reading changes the formulas' figures."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from attn_core.anatomy import runner
from attn_core.views import cost_check
from lab_ui.badges import table

PAGE_WAIT_S = runner.BUILD_SECONDS + 5  # the longest `finish` waits: the build's own limit, + its stop
TICK_S = 0.5  # how often the box's "so far" line is redrawn (and a widget change can stop the wait)


@dataclass(frozen=True)
class Pending:
    """A config's build check still running when the box was drawn: where to draw it, and what
    the formulas read meanwhile."""

    box: Any  # an st.empty placeholder
    text: str
    T: int
    batch: int
    alone: Callable[[], None] | None
    shape: Any  # the shape the page's figures use (a ModelShape or None)


def show(
    preset: str | None,
    config_text: str | None,
    T: int,
    batch: int,
    alone: Callable[[], None] | None = None,
    shape: Any = None,
) -> Pending | None:
    """Draw the check for a preset or a config's text, at once; a `Pending` for `finish` where a
    pasted config's build is still running. ``alone``: the formulas could not read the model, so
    when the build sized it the page ends here after ``alone()`` draws what the build's figures
    give (its other sections need the formulas), saying so instead of asking for a fix. ``shape``:
    what the formulas read (to tell whether the build's reading changes it)."""
    if preset is not None:
        v = cost_check.for_preset(preset, T, batch)
    elif config_text:
        v = cost_check.for_config(config_text, T, batch)
    else:  # a config is about to be pasted: a build child starts importing now
        runner.prewarm()
        return None
    box = st.empty()
    if v.status == "pending":
        box.info(v.headline, icon=":material/hourglass_top:")
        return Pending(box, config_text, T, batch, alone, shape)
    with box.container():
        draw(v, alone)
    return None


def finish(pending: Pending | None) -> None:
    """Wait for a pending build (at most PAGE_WAIT_S, redrawn every TICK_S), then draw its check
    in the box; rerun the page instead where the build's reading of the config changes the
    formulas' shape (the figures drawn under the box are then not the build-read ones)."""
    if pending is None:
        return
    start = time.monotonic()
    v = cost_check.for_config(pending.text, pending.T, pending.batch)
    while v.status == "pending" and time.monotonic() - start < PAGE_WAIT_S:
        so_far = f" ({time.monotonic() - start:.0f} s so far)"
        pending.box.info(v.headline + so_far, icon=":material/hourglass_top:")
        v = cost_check.for_config(pending.text, pending.T, pending.batch, wait_s=TICK_S)
    if v.status in ("agrees", "differs", "uncovered"):
        try:
            now = cost_check.shape_of_config(pending.text)
        except ValueError:  # ConfigError: the formulas do not read it; the box says so
            now = None
        if now != pending.shape or pending.alone:  # the sidebar said "still running": redraw it
            st.rerun()
    with pending.box.container():
        draw(v, pending.alone)


def draw(v: cost_check.CheckView, alone: Callable[[], None] | None) -> None:
    """The check's box: agreement, each difference, the build's own figures, or one line."""
    if v.status == "agrees":
        st.success(v.headline, icon=":material/check_circle:")
    elif v.status == "differs":
        st.error(v.headline, icon=":material/error:")
        table(pd.DataFrame(v.differences), "formula_vs_build.csv", key="co_check_diff", hide_index=True)
    elif v.status == "uncovered":
        st.warning(v.headline, icon=":material/construction:")
        table(pd.DataFrame(v.derived), "model_derived.csv", key="co_check_derived", hide_index=True)
    elif v.status == "busy":
        st.warning(v.headline, icon=":material/hourglass_disabled:")
    elif v.status == "pending":
        st.info(v.headline, icon=":material/hourglass_top:")
    else:  # a caption, not a box: the formulas' own message (if any) stays the one to read
        st.caption(v.headline)
    for note in v.notes:
        st.caption(note)
    if alone and v.status in ("uncovered", "differs"):
        alone()
        st.caption(
            "FLOPs by layer, the sweeps and serving need the formulas, which do not read this model: pick "
            "a model they read for those sections (the presets above the build-only ones)."
        )
        st.stop()
