"""Attention Lab: `make run` (`python -m lab_ui.launch run app.py`). The pages are declared once, in lab_ui/nav.py."""

from pathlib import Path

import streamlit as st
import torch

from lab_ui import figures, palettes, widgets
from lab_ui.classroom import app_hooks
from lab_ui.nav import HOME, PAGES, open_aliases
from lab_ui.page import safety_net

# One intra-op thread per rerun: sessions already run in parallel threads, and on a 2-core server
# torch's own thread pool only adds contention (a tiny SDPA call took 7.7 ms with 2 threads
# versus 0.05 ms with 1 while other sessions were busy).
torch.set_num_threads(1)

# The favicon is a file served by this server: a material or emoji icon is fetched from a font CDN
# by the browser, the one request that would leave the machine (and fail on an offline network).
FAVICON = Path(__file__).resolve().parent / "assets" / "favicon.png"  # a causal map, 64 × 64
st.set_page_config(page_title="Attention Lab", page_icon=str(FAVICON), layout="wide")

pages = [
    st.Page(p.path, title=p.title, icon=p.icon, url_path=p.url_path, default=p is HOME)
    for p in [HOME, *PAGES]
]
open_aliases()
page = st.navigation(pages, expanded=True)  # 13+ pages: every one listed, no "View more"
shown = app_hooks.before_page(page, {p.url_path: p for p in pages})  # a follower sees the presenter's page
with st.sidebar:
    if widgets.toggle(
        "Projector mode", key="projector", help="Larger text and figures for a classroom screen."
    ):
        figures.use_projector_sizes()
    palettes.picker()
    app_hooks.sidebar(page)
drawn: list = []  # what a presenter's page draws, shared with followers
try:
    if not shown:
        with app_hooks.recording(drawn), safety_net(f"the settings of {page.title}"):  # the last net
            page.run()
finally:  # also after a page's st.stop (bad input): the presenter publishes, a follower's run ends
    app_hooks.after_page(page, drawn)
