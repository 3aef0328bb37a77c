"""What every page starts with: route through app.py, then a title and a short intro."""

from __future__ import annotations

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
