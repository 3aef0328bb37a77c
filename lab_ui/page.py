"""The one shape every page has: title and intro → inputs → one view call → the chosen section.
Every page file ends in the same five lines after its functions (tests/pages/test_page_shape.py):

    header(TITLE, INTRO)
    ask = inputs()            # the page's widgets → one object (None after a message)
    view = build(ask)         # its view call(s) through `compute` → the view (None after a message)
    require(view, fix=FIX)
    show(ask, view)           # the section picker and `run_section`, or the page's fixed sections

- `header(title, intro)` routes the page through app.py, then draws the title and intro.
- `section_picker(Section, key)` is the row of section names over a page's `Section` enum (the
  URL keeps a section's short id).
- `compute(fn, *args, inputs=…)` is the view call, and the one way a page calls its view: the
  result comes from the server's shared cache (`lab_ui/view_cache.py`); an expected `ValueError`
  is shown as its own message, anything else goes through the safety net; either way it returns
  None.
- `require(value, …)` stops the page, with one line saying what to fix, when a value is None.
- `run_section(body, view, inputs=…)` runs the chosen section, a function of the view alone, as a
  fragment inside the net.
- `show_code(title, fn)` is the "show the code" expander.

The safety net: a page section whose domain code raises something unexpected shows one message
in that section naming the inputs it was computed from (no traceback, no server path), the
exception goes to the server log, and every other section, the sidebar and the inputs still work.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from typing import TypeVar

import streamlit as st

from lab_ui import lesson_writer, lessons, palettes, st_internals, view_cache, widgets
from lab_ui.badges import attempt

T = TypeVar("T")
E = TypeVar("E", bound=Enum)

log = logging.getLogger("attention_lab.pages")
# The first words of every safety-net message: the fuzzer and the tests look for them.
NET_MESSAGE = "This part of the page could not be computed"


def _enter_through_app() -> None:
    """Make sure the page runs inside app.py's st.navigation.

    Streamlit treats an app with a pages/ folder as an old-style multipage app until the entry
    script has called st.navigation; on a fresh server a first visit to /playground (and every
    AppTest.switch_page) would run the page file alone: no page config, no shared sidebar, the
    old sidebar list. Switching that mode off and rerunning sends the same page through app.py."""
    if st_internals.leave_pages_directory_mode():
        st.rerun()


def header(title: str, intro: str) -> None:
    """Call first on every page. A playing lesson's narration goes under the title, above
    everything the page draws (lab_ui/lessons.py); the sidebar gets the Lessons box."""
    _enter_through_app()
    st.title(title)
    lessons.panel()
    st.markdown(intro)
    with st.sidebar:
        lesson_writer.box()
        palettes.svg_button()  # every figure's toolbar: PNG and SVG (lab_ui/figures.py)


@contextmanager
def safety_net(inputs: str) -> Iterator[None]:
    """Catch what domain code was not expected to raise: one message naming ``inputs`` (what the
    visitor can change), the exception logged on the server. Streamlit's own stop and rerun are
    BaseExceptions and pass through."""
    try:
        yield
    except Exception as exc:
        log.exception("page section failed; inputs: %s", inputs)
        st.error(
            f"{NET_MESSAGE} for these inputs ({inputs}): {type(exc).__name__}. Try other values; "
            "the rest of the page still works.",
            icon="⚠️",
        )


def compute(fn: Callable[..., T], *args, inputs: str, fresh: bool = False, **kwargs) -> T | None:
    """The page's view call ``fn(*args, **kwargs)``: its value, shared by every session with the
    same inputs (`lab_ui/view_cache.py`), or None after a message (the error's own words for a
    ValueError, the safety net's for anything else).

    ``fresh=True`` computes every time: a call with effects (starting a training run). A call
    with a function among its arguments is fresh too (a callback has effects, and the cache keys
    a function by its name, not its state). ``compute(view_cache.view, fn, ...)``, the older
    spelling, is the same call."""
    if fn is not view_cache.view and not fresh and not any(map(inspect.isroutine, (*args, *kwargs.values()))):
        args, fn = (fn, *args), view_cache.view
    result = None
    with safety_net(inputs):
        result = attempt(fn, *args, **kwargs)
    return result


def require(*values: object, fix: str = "the input marked in the sidebar") -> None:
    """Stop the page here, with one line saying what to fix, when any of ``values`` is None
    (each was already explained where it failed)."""
    if any(v is None for v in values):
        st.info(f"Fix {fix}; the page updates as soon as it is valid.")
        st.stop()


def section_picker(sections: type[E], key: str, default: E | None = None) -> E:
    """A row of the page's sections (an Enum whose values are the labels shown); the URL keeps a
    member's short id (``kv``), and an old link's label still opens its section. ``default`` (else
    the first) is where a fresh visit opens."""
    return widgets.radio(
        "Section", sections, key=key, default=default, horizontal=True, label_visibility="collapsed"
    )


def run_section(body: Callable[..., None], *args, inputs: str = "the inputs above") -> None:
    """Run the chosen section ``body(view)`` (``args`` is the view; pages not yet converted pass
    none or several) as a fragment, inside the safety net: a control inside
    it reruns that section alone, not the header, the sidebar and their inputs (the Masks gallery's
    L slider: 17.7 → 10.7 ms of server CPU per change, `benchmarks/rerun_cpu.py`). A change in the
    sidebar still reruns everything. The section must not write to the sidebar (Streamlit forbids
    it in a fragment)."""

    @functools.wraps(body)  # the fragment's id comes from the body's name
    def guarded(*a) -> None:
        with safety_net(inputs):
            body(*a)

    st.fragment(guarded)(*args)


def show_code(title: str, *fns: Callable) -> None:
    """A collapsed "Show the code" expander with the source of ``fns``, sent to the browser only
    once a reader opens it: a code block makes the browser load its syntax highlighter (~1.5 MB
    of script, `benchmarks/first_figure.py`) before the page's first figure."""
    key = f"show_code:{title}"
    with st.expander(f"Show the code ({title})", key=key, on_change="rerun"):
        if st.session_state.get(key):
            for fn in fns:
                st.code(inspect.getsource(fn), language="python")
