"""What every page starts with: route through app.py, then a title and a short intro."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager


def _enter_through_app() -> None:
    """Make sure the page runs inside app.py's st.navigation.

    Streamlit treats an app with a pages/ folder as an old-style multipage app until the entry
    script has called st.navigation; on a fresh server a first visit to /playground (and every
    AppTest.switch_page) would run the page file alone: no page config, no shared sidebar, the
    old sidebar list. Switching that mode off and rerunning sends the same page through app.py."""
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def header(title: str, intro: str) -> None:
    """Call first on every page."""
    _enter_through_app()
    st.title(title)
    st.markdown(intro)


def run_section(body: Callable[..., None], *args) -> None:
    """Run one section of a page as a fragment: a control inside it reruns that section alone,
    not the header, the sidebar and their inputs (the Masks gallery's L slider: 17.7 → 10.7 ms
    of server CPU per change, `benchmarks/rerun_cpu.py`). A change in the sidebar still reruns
    everything. The section must not write to the sidebar (Streamlit forbids it in a fragment)."""
    st.fragment(body)(*args)
