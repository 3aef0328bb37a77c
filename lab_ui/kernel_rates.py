"""The Kernels page's sweep as a calibration of the Cost calculator: the rates it measured, the
button that opens the Cost page on them, and the JSON for `python -m attn_core cost --calibration`
(docs/pages.md, "Kernels"). A sweep that cannot calibrate the server (cut short, SDPA wrong, rates out of
range) stays with its visitor, downloadable."""

from __future__ import annotations

import streamlit as st

from lab_ui.open_page import open_costs


def rates_box(cost_rates: tuple[str, str, str] | None, own_run: tuple[str, str] | None) -> None:
    """``cost_rates``: (hardware choice, dtype, run JSON) of this server's calibration, or None;
    ``own_run``: (why it is not the server's, run JSON) of a visitor's sweep that stays theirs."""
    if cost_rates is not None:
        choice, rates_dtype, run_json = cost_rates
        st.caption(
            "This server's last sweep, with its matmul and bandwidth rates, calibrates the Cost calculator's "
            f"time bounds ({choice}, {rates_dtype}); `python -m attn_core cost --calibration` reads the JSON."
        )
        left, right, _ = st.columns([2, 2, 3])
        with left:  # the Cost calculator on this hardware, in the rates' dtype, at its time table
            open_costs(
                "Use these rates in the Cost calculator",
                gpu=choice,
                dtype=rates_dtype,
                section="whole",
                key="kb_costs",
            )
        right.download_button(
            "Download the run (JSON)", run_json, "kernel-run.json", "application/json", key="kb_json"
        )
    if own_run is not None:
        why, own_json = own_run
        st.caption(
            f"This sweep stays yours: it is not this server's calibration for the Cost calculator ({why}). "
            "Download it to use it with `python -m attn_core cost --calibration`."
        )
        st.download_button(
            "Download your run (JSON)", own_json, "kernel-run.json", "application/json", key="kb_own"
        )
