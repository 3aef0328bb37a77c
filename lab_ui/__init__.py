"""Shared Streamlit helpers for Attention Lab's pages (the only package that imports streamlit
besides app.py and the pages). attn_core never imports this."""

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager


def _enter_through_app() -> None:
    """Route a first visit to a deep link through app.py.

    Streamlit treats an app with a pages/ folder as an old-style multipage app until the entry
    script has called st.navigation once; on a fresh server, a first visit to /playground would
    run pages/playground.py alone (no page config, wrong sidebar). Every page imports lab_ui, so
    here we switch that mode off and rerun: the rerun goes through app.py to the same page."""
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


_enter_through_app()
