"""Buttons and links that open another page with its widgets preset. Each function here owns that
page's widget keys (the Cost page's from lab_ui/cost_inputs.py, the Serving page's GPU key and the
keys a drill's link sets below), so no other file spells another page's keys; callers pass values
(a preset, a config's text, a GPU id) or a drill's `PageLink` (ids only: attn_core.practice).
`widgets.link_button` and `open_drill` do the opening."""

from __future__ import annotations

import streamlit as st

from attn_core.practice.question import PageLink
from attn_core.views import serving
from lab_ui import cost_inputs as ci
from lab_ui.nav import PAGES
from lab_ui.widgets import link_button

COSTS_PAGE = "pages/costs.py"
SERVING_PAGE = "pages/serving.py"
SERVING_GPU_KEY = "sv_gpu"  # the Serving page's GPU picker (pages/serving.py reads it here)


def model_values(preset: str | None, config_text: str | None) -> dict[str, object]:
    """The model picker's values (lab_ui/cost_inputs.model_source, shared by the Cost and Serving
    pages): a preset by name, else the config's text pasted ("" when there is none)."""
    if preset is not None:
        return {ci.SOURCE_KEY: ci.SOURCES[0], ci.PRESET_KEY: preset}
    return {ci.SOURCE_KEY: ci.SOURCES[1], ci.PASTE_KEY: config_text or ""}


def costs_values(
    preset: str | None = None,
    config_text: str | None = None,
    T: int | None = None,
    gpu: str | None = None,
    dtype: str | None = None,
    section: str | None = None,
) -> dict[str, object]:
    """The Cost page's widget values for what is given (None: left as the visitor had it); the model
    only when a preset or a config's text is given; ``section`` by its URL id ("whole")."""
    values = model_values(preset, config_text) if preset is not None or config_text is not None else {}
    given = {ci.T_KEY: T, ci.GPU_KEY: gpu, ci.DTYPE_KEY: dtype, ci.SECTION_KEY: section}
    return values | {k: v for k, v in given.items() if v is not None}


def serving_values(preset: str | None, config_text: str | None, gpu: str) -> dict[str, object]:
    """The Serving page's widget values for a model and a GPU: the GPU only where the simulator
    knows it (not the Cost page's "this server (measured)")."""
    values = model_values(preset, config_text)
    if gpu in serving.GPUS:
        values[SERVING_GPU_KEY] = gpu
    return values


def open_costs(
    label: str,
    preset: str | None = None,
    config_text: str | None = None,
    T: int | None = None,
    gpu: str | None = None,
    dtype: str | None = None,
    section: str | None = None,
    key: str | None = None,
) -> None:
    """A button that opens the Cost calculator with these values set (`costs_values`)."""
    link_button(label, COSTS_PAGE, costs_values(preset, config_text, T, gpu, dtype, section), key=key)


def open_serving(label: str, preset: str | None, config_text: str | None, gpu: str) -> None:
    """A button that opens the Serving page on this model and GPU (`serving_values`)."""
    link_button(label, SERVING_PAGE, serving_values(preset, config_text, gpu))


# A drill's link (attn_core.practice.page_links) names a page's inputs; here they become its widget
# keys. The Cost page's are lab_ui/cost_inputs.py's; every other linked page keys its widgets
# <prefix>_<name> and its section picker <prefix>_section (as the pages and lab_ui/mask_charts.py
# spell them), and the shared Q, K, V picker (lab_ui/inputs.py) keys its own <INPUTS>_<name>.
COST_NAMES = {"src": ci.SOURCE_KEY, "paste": ci.PASTE_KEY, "T": ci.T_KEY, "dtype": ci.DTYPE_KEY}
PREFIX = {"masks": "mk", "gradients": "gr", "online_softmax": "os", "scaling": "sc", "one_head": "oh"}
INPUTS = "in"  # the prefix the pages give lab_ui.inputs' pickers (its default)
NAV_PATH = {p.url_path: p.path for p in PAGES}


def _page_key(url_path: str, name: str) -> str:
    """The widget key of the input ``name`` ("section" for the section picker) on ``url_path``."""
    if url_path == "costs":
        return ci.SECTION_KEY if name == "section" else COST_NAMES[name]
    return f"{PREFIX[url_path]}_{name}"


def drill_params(link: PageLink) -> dict[str, str]:
    """A drill's link as the linked page's URL state: widget key → value (ids as the link has them)."""
    params = {_page_key(link.url_path, "section"): link.section_id} if link.section_id else {}
    params |= {_page_key(link.url_path, name): value for name, value in link.values.items()}
    return params | {f"{INPUTS}_{name}": value for name, value in link.inputs.items()}


def open_drill(link: PageLink | None) -> None:
    """The Practice page's link to a drill's live page with its numbers (`drill_params`); none
    where there is no link or its page is not in the navigation."""
    if link is None or link.url_path not in NAV_PATH:
        return
    st.page_link(
        NAV_PATH[link.url_path],
        label=f"Open these numbers live: {link.section}",
        icon=":material/open_in_new:",
        query_params=drill_params(link),
    )
