"""GPU runs published by others (``attn_core.views.published``), shown beside the Cost page's time
bounds and the Kernels page's recorded runs: one box each, labelled as published by others, the rows
one click away. A runs file that cannot be read gets one message here; the rest of the page works."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from attn_core.cost.report import CostReport
from attn_core.views import published
from lab_ui.badges import attempt, table


def cost_band(report: CostReport) -> None:
    """The published attained range beside the decode and TTFT bounds, and the rows behind it."""
    band = attempt(published.cost_band, report)
    if band is None:
        return
    with st.container(border=True):
        st.markdown(band.title)
        for line in band.lines:
            st.markdown(line)
        with st.expander(band.rows_title):
            table(pd.DataFrame(band.rows), "published_runs.csv", key="co_published", hide_index=True)
        st.caption(band.caption)


def kernel_rows() -> None:
    """The published kernel rows (FA2/FA3/FA4, cuDNN, FlashMLA) beside the lab's recorded runs."""
    rows = attempt(published.kernel_rows)
    if rows is None:
        return
    st.subheader(rows.title)
    table(pd.DataFrame(rows.rows), "published_kernels.csv", key="kb_published", hide_index=True)
    st.caption(rows.caption)
