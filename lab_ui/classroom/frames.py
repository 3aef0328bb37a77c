"""The presenter's page as drawn, recorded once and shown to every follower without running it.

A follower used to rerun the whole page for every change its presenter made (~28 ms of server
CPU each, so a class of 100 cost ~2.8 s per change). Instead, the presenter's run records what its
page drew — Streamlit's own ``delta`` messages, the figure JSON and text already built — and the
room keeps them beside the view (one frame per version). A follower's run then shows that frame:
its elements are copied into two boxes (one in the main area, one at the top of the sidebar) and
the page itself does not run. Nothing is computed twice, whatever the class size.

What a frame keeps: text, tables, figures and metrics as drawn, and each of the page's controls as
one line of text with its label and value (a student takes control to move them:
lab_ui.classroom.follower_screen). What it drops, because it would not work
on another screen: images, downloads, HTML and anything else served by URL from the presenter's
server process, or that runs code in the browser. A control's value is shown as code (a fence
longer than any run of backticks in it), and the page's markdown loses every image and every link
out of the lab (`inert`): a typed value never renders as markdown on a follower's screen.

This reaches into Streamlit's runtime (the script context's ``enqueue`` and a container's delta
path; streamlit is pinned in requirements.txt). Where those are missing, `recording` records
nothing and followers run the page, as they did before.
"""

from __future__ import annotations

import contextlib
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass

import streamlit as st

from classroom_store.records import MAX_FRAME_BYTES  # a larger page is run by each follower instead
from lab_ui import st_internals
from lab_ui.st_internals import ForwardMsg

MAIN, SIDEBAR = 0, 1  # Streamlit's root containers (delta_path[0])
# Element kinds a frame carries as they are (drawn from the message alone); WIDGETS become a line
# of text. Every other kind (imgs, download_button, html, iframe, audio, video, …) is
# dropped: it points at a URL of the presenter's server process or runs code in the browser.
SHOWN = frozenset(
    {
        "alert",
        "code",
        "dataframe",
        "empty",
        "exception",
        "heading",
        "help_info",
        "json",
        "markdown",
        "metric",
        "plotly_chart",
        "progress",
        "space",
        "table",
        "text",
        "vega_lite_chart",
    }
)
WIDGETS = frozenset(
    {
        "button_group",
        "checkbox",
        "color_picker",
        "date_input",
        "multiselect",
        "number_input",
        "radio",
        "selectbox",
        "slider",
        "text_area",
        "text_input",
        "time_input",
    }
)


@dataclass
class Frame:
    """One page as drawn: the delta messages of the main area and of the page's sidebar part,
    their paths relative to where the page started writing in each."""

    messages: list[ForwardMsg]

    def encode(self) -> bytes:
        parts = [m.SerializeToString() for m in self.messages]
        return b"".join(struct.pack(">I", len(p)) + p for p in parts)

    @staticmethod
    def decode(blob: bytes) -> Frame:
        """The frame, each message's content hash computed once here (Streamlit's, which leaves
        the path out), so that showing it to a follower hashes nothing."""
        messages, at = [], 0
        while at < len(blob):
            (n,) = struct.unpack_from(">I", blob, at)
            msg = ForwardMsg()
            msg.ParseFromString(blob[at + 4 : at + 4 + n])
            st_internals.hash_message(msg)
            messages.append(msg)
            at += 4 + n
        return Frame(messages)


def _ctx():
    return st_internals.script_run_ctx()


def _keep(msg: ForwardMsg) -> ForwardMsg | None:
    """A copy of a page's delta fit for another screen, or None to drop it."""
    if msg.WhichOneof("type") != "delta" or len(msg.metadata.delta_path) < 2:
        return None
    if msg.metadata.delta_path[0] not in (MAIN, SIDEBAR):
        return None  # toasts, balloons, the event container
    kind = msg.delta.WhichOneof("type")
    if kind not in ("new_element", "add_block"):
        return None
    out = ForwardMsg()
    out.delta.CopyFrom(msg.delta)
    out.delta.ClearField("fragment_id")  # on a follower's screen it belongs to no fragment
    out.metadata.delta_path.extend(msg.metadata.delta_path)
    if kind == "new_element":
        element = out.delta.new_element
        which = element.WhichOneof("type")
        if which in WIDGETS:
            body = _setting(which, getattr(element, which))
            element.Clear()
            element.markdown.body = body
        elif which not in SHOWN:
            element.Clear()
            element.empty.SetInParent()
        elif which in ("markdown", "alert", "heading"):
            body = getattr(element, which)
            body.body = inert(body.body, html=which == "markdown" and body.allow_html)
    return out


# What in a page's markdown would fetch from, or link to, another site on a follower's screen:
# an image, a link or link definition whose target has a scheme or starts with //, an autolink,
# raw HTML, a bare URL (GitHub-flavoured markdown links those). Each loses its markup and stays as text.
_INERT = (
    (re.compile(r"!\["), r"!\\["),  # ![alt](src): no image, wherever its source is
    (re.compile(r"\]\((?=\s*<?\s*(?:[A-Za-z][A-Za-z0-9+.\-]*:|[/\\]{2}))"), r"]\\("),  # [x](https://…)
    (re.compile(r"(?m)^(\s{0,3})\[(?=[^\]\n]*\]:)"), r"\1\\["),  # [ref]: https://…
    (re.compile(r"(?i)\b(https?|ftp):(?=//)"), r"\1\\:"),  # a bare URL
    (re.compile(r"(?i)\bwww\."), r"www\\."),
)
# <https://…>, <img …>, </a>, <!-- -->: shown as text ("$i<j$" and "a < b" are left as they are)
_TAG = (re.compile(r"<(?=[A-Za-z][A-Za-z0-9+.\-]*:|/?[A-Za-z][A-Za-z0-9\-]*[\s/>]|[!?])"), r"\\<")


def inert(body: str, html: bool = False) -> str:
    """``body`` (markdown) with no image and no link out of the lab; links within it (a path such
    as ``/costs?co_section=kv``) stay. ``html``: the element renders HTML (the app's own), kept."""
    for pattern, repl in _INERT if html else (*_INERT, _TAG):
        body = pattern.sub(repl, body)
    return body


def _value(which: str, w) -> object:
    """What a control shows, read from its message as a browser would (harness/client.py)."""
    if which in ("selectbox", "radio"):
        options = list(w.options)
        if w.set_value and w.raw_value:
            return w.raw_value
        return options[w.default] if w.HasField("default") and 0 <= w.default < len(options) else ""
    if which == "multiselect":
        return ", ".join(w.raw_values) if w.set_value else ", ".join(w.options[i] for i in w.default)
    if which == "slider":
        values = list(w.value if w.set_value else w.default)
        if w.options:
            values = [w.options[int(v)] for v in values if 0 <= int(v) < len(w.options)]
        elif w.data_type == w.INT:
            values = [int(v) for v in values]
        return " – ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values)
    if which in ("checkbox", "number_input", "text_area", "text_input", "color_picker"):
        value = w.value if w.set_value else w.default
        return f"{value:g}" if isinstance(value, float) else value
    return ""


def _setting(which: str, w) -> str:
    """A control of the presenter's page as text (markdown): its label and the value it shows. A
    follower's screen does not register the presenter's controls as its own widgets."""
    value = str(_value(which, w))
    if which == "text_area" or "\n" in value:
        # a fence longer than any run of backticks in the value: no line of it can close the block
        # (CommonMark), so the value is code, not markdown, on every follower's screen
        longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"{w.label}\n\n{fence}\n{value}\n{fence}"
    shown = value.replace("`", "'")
    return f"{w.label}: `{shown}`"


@contextlib.contextmanager
def recording() -> Iterator[list[ForwardMsg]]:
    """Record the deltas this run draws inside the block (the page's run). Yields the list the
    messages go to; it stays empty where Streamlit's internals are not as expected."""
    recorded: list[ForwardMsg] = []

    def keep(msg: ForwardMsg) -> None:
        kept = _keep(msg)
        if kept is not None:
            recorded.append(kept)

    with st_internals.tapped_enqueue(keep):
        yield recorded


def frame_of(recorded: list[ForwardMsg]) -> Frame | None:
    """The frame of one page run: each root's top-level indices counted from the first the page
    used there (app.py's own sidebar comes before the page's). None when it is too large."""
    first = {}
    for msg in recorded:
        root, index = msg.metadata.delta_path[0], msg.metadata.delta_path[1]
        first[root] = min(first.get(root, index), index)
    messages = []
    size = 0
    for msg in recorded:
        path = list(msg.metadata.delta_path)
        path[1] -= first[path[0]]
        out = ForwardMsg()
        out.CopyFrom(msg)
        del out.metadata.delta_path[:]
        out.metadata.delta_path.extend(path)
        size += out.ByteSize() + 4
        if size > MAX_FRAME_BYTES:
            return None
        messages.append(out)
    return Frame(messages)


def _placed(frame: Frame, bases: dict[int, list[int]]) -> Iterator[ForwardMsg]:
    """The frame's messages under the two boxes whose delta paths are ``bases``."""
    for msg in frame.messages:
        root, *rest = msg.metadata.delta_path
        out = ForwardMsg()
        out.CopyFrom(msg)  # with its hash: nothing hashes it again
        del out.metadata.delta_path[:]
        out.metadata.delta_path.extend([*bases[root], *rest])
        yield out


def show(frame: Frame) -> dict[int, list[int]] | None:
    """Draw ``frame`` in this run: a box at the top of the sidebar for the page's sidebar part and
    a box in the main area for the rest. Returns the boxes' delta paths (for `replace`), or None
    where the internals are missing (nothing drawn)."""
    ctx = _ctx()
    if ctx is None:
        return None
    boxes = {SIDEBAR: st.sidebar.container(), MAIN: st.container()}
    bases = {root: st_internals.block_path(box) for root, box in boxes.items()}
    if not all(bases.values()):
        return None
    for msg in _placed(frame, bases):
        ctx.enqueue(msg)
    return bases


def replace(frame: Frame, bases: dict[int, list[int]]) -> list[ForwardMsg]:
    """The messages that put ``frame`` into a follower's screen in place of the frame its last run
    drew in the boxes at ``bases``, with no run: each box is emptied (an element replaces the block
    and its children) and made again, then filled. Sent between runs, they belong to the screen's
    last run, as that run's own elements do."""
    out = []
    for path in bases.values():
        for fill in ("empty", "block"):
            msg = ForwardMsg()
            msg.metadata.delta_path.extend(path)
            if fill == "empty":
                msg.delta.new_element.empty.SetInParent()
            else:
                msg.delta.add_block.vertical.SetInParent()
                msg.delta.add_block.allow_empty = True
            st_internals.hash_message(msg)
            out.append(msg)
    placed = sorted(_placed(frame, bases), key=lambda m: m.metadata.delta_path[0] != bases[MAIN][0])
    return [*out, *placed]  # the main area first: the sidebar's lines say the frame is complete
