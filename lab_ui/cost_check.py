"""The Cost page's box: its formulas checked against transformers' own build (views/cost_check)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from attn_core.views import cost_check
from lab_ui.badges import table


def show(preset: str | None, config_text: str | None, T: int, batch: int, alone: bool = False) -> str | None:
    """Draw the check for a preset or a config's text; returns its status (None: nothing to check).
    ``alone``: the formulas could not read the model, so when the build sized it the page ends here
    (its other sections need the formulas), saying so instead of asking for a fix."""
    if preset is not None:
        v = cost_check.for_preset(preset, T, batch)
    elif config_text:
        with st.spinner("Building the model on the meta device (transformers)…"):
            v = cost_check.for_config(config_text, T, batch)
    else:
        return None
    if v.status == "agrees":
        st.success(v.headline, icon=":material/check_circle:")
    elif v.status == "differs":
        st.error(v.headline, icon=":material/error:")
        table(pd.DataFrame(v.differences), "formula_vs_build.csv", key="co_check_diff", hide_index=True)
    elif v.status == "uncovered":
        st.warning(v.headline, icon=":material/construction:")
        table(pd.DataFrame(v.derived), "model_derived.csv", key="co_check_derived", hide_index=True)
    else:  # a caption, not a box: the formulas' own message (if any) stays the one to read
        st.caption(v.headline)
    for note in v.notes:
        st.caption(note)
    if alone and v.status in ("uncovered", "differs"):
        st.caption(
            "FLOPs, time bounds and serving need the formulas, which do not read this model: pick a "
            "model they read for those sections (the presets above the build-only ones)."
        )
        st.stop()
    return v.status
