"""Attention Lab: `streamlit run app.py`. The pages are declared once, in lab_ui/nav.py."""

import streamlit as st

from lab_ui import figures, state
from lab_ui.nav import HOME, PAGES

st.set_page_config(page_title="Attention Lab", page_icon=":material/visibility:", layout="wide")

pages = [
    st.Page(p.path, title=p.title, icon=p.icon, url_path=p.url_path, default=p is HOME)
    for p in [HOME, *PAGES]
]
page = st.navigation(pages)
with st.sidebar:
    if state.toggle("Projector mode", key="projector", help="Larger text and figures for a classroom screen."):
        figures.use_projector_sizes()
page.run()
