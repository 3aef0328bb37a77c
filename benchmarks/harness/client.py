"""A websocket client that behaves like one browser tab: Streamlit's own protobuf classes encode
and decode the messages; no browser renders anything.

A session asks for a page with a ``rerun_script`` BackMsg, reads the run's deltas until
``script_finished``, remembers the widgets (by user key) and the page hash and query string a
browser would send back, and records exception deltas and protocol problems in its SessionStats.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.NumberInput_pb2 import NumberInput
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect

CONNECT_TIMEOUT_S = 30.0
MAX_FRAME_BYTES = 64 * 2**20  # a Plotly figure is tens of KiB; the server's own cap is 200 MB
FIRST_SOURCE = ipaddress.IPv4Address("127.0.0.2")  # student i connects from FIRST_SOURCE + i


def widget_states_for(kind: str, w) -> tuple[WidgetState, WidgetState]:
    """Two states for a widget proto: (a value different from the current one, the current one).

    Supports the widgets a page's controls are made of: selectbox, radio, number_input, slider,
    checkbox/toggle. Values are in the form the front end sends (formatted option strings for
    selectbox/radio, numbers for the rest)."""
    other, current = WidgetState(id=w.id), WidgetState(id=w.id)
    if kind in ("selectbox", "radio"):
        options = list(w.options)
        if len(options) < 2:
            raise ValueError(f"{kind} {w.id} has fewer than two options")
        now = w.raw_value if w.set_value and w.raw_value in options else options[w.default]
        other.string_value = options[(options.index(now) + 1) % len(options)]
        current.string_value = now
    elif kind == "number_input":
        now = w.value if w.set_value else w.default
        step = w.step or 1.0
        new = now + step if not (w.has_max and now + step > w.max) else now - step
        if w.data_type == NumberInput.INT:
            other.int_value, current.int_value = int(new), int(now)
        else:
            other.double_value, current.double_value = new, now
    elif kind == "slider":
        now = list(w.value if w.set_value else w.default)
        step = w.step or 1.0
        new = [now[0] + step if now[0] + step <= w.max else now[0] - step, *now[1:]]
        other.double_array_value.data.extend(new)
        current.double_array_value.data.extend(now)
    elif kind == "checkbox":
        now = w.value if w.set_value else w.default
        other.bool_value, current.bool_value = not now, now
    else:
        raise ValueError(
            f"widget kind {kind!r} is not supported (use a selectbox, radio, number, slider or toggle)"
        )
    return other, current


@dataclass
class SessionStats:
    """What one session saw (mutable while it runs)."""

    page: str = ""
    first_load_s: float | None = None
    latencies_s: list[float] = field(default_factory=list)
    finished_at: list[float] = field(default_factory=list)  # time.monotonic() at each rerun's end
    exceptions: list[str] = field(default_factory=list)  # exception deltas: "Type: message"
    errors: list[str] = field(default_factory=list)  # protocol problems, timeouts, missing widget
    metric_values: dict[str, set[str]] = field(default_factory=dict)  # st.metric label -> bodies
    disconnects: int = 0  # connections lost mid-session (a killed replica)
    recovered_after_s: list[float] = field(default_factory=list)  # connection lost → page served again
    lost: list[str] = field(default_factory=list)  # what a reconnect did not restore


class Session:
    """A websocket client that behaves like one browser tab on one page."""

    def __init__(self, ws, page: str, stats: SessionStats) -> None:
        self.ws, self.page, self.stats = ws, page, stats
        self.query_string = ""
        self.page_script_hash = ""
        self.page_shown = ""  # url path of the page the last run showed (from `navigation`)
        self.widgets: dict[str, tuple[str, object]] = {}  # widget id -> (element kind, proto)
        self.fragments: dict[str, str] = {}  # widget id -> id of the st.fragment it is in ("" if none)

    async def rerun(self, states: list[WidgetState], timeout: float, fragment_id: str = "") -> float:
        """Send one rerun_script and read until the run finishes; returns the seconds it took.

        A widget inside an st.fragment reruns only its fragment: a browser then sends the
        fragment's id, and so does this client (pass `fragment_of(widget id)`)."""
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query_string
        cs.page_script_hash = self.page_script_hash
        cs.page_name = "" if self.page_script_hash else self.page
        cs.fragment_id = fragment_id
        cs.widget_states.widgets.extend(states)
        start = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        async with asyncio.timeout(timeout):
            while True:
                fwd = ForwardMsg()
                fwd.ParseFromString(await self.ws.recv())
                kind = fwd.WhichOneof("type")
                if kind == "script_finished":
                    if fwd.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                        continue  # the script called st.rerun: its next run is the answer
                    elapsed = time.perf_counter() - start
                    if fwd.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                        self.stats.errors.append("script compile error")
                    if self.page_shown != self.page:
                        self.stats.errors.append(f"asked for page {self.page!r}, got {self.page_shown!r}")
                    return elapsed
                self._read(fwd, kind)

    def _read(self, fwd: ForwardMsg, kind: str | None) -> None:
        if kind == "new_session":
            self.page_script_hash = fwd.new_session.page_script_hash
        elif kind == "navigation" and fwd.navigation.page_script_hash:
            # With st.navigation the run starts as app.py; this names the page it showed, and
            # a browser sends it back on every rerun (new_session's hash alone reruns app.py's
            # default page: Home).
            nav = fwd.navigation
            self.page_script_hash = nav.page_script_hash
            shown = [p.url_pathname for p in nav.app_pages if p.page_script_hash == nav.page_script_hash]
            self.page_shown = shown[0] if shown else "?"
        elif kind == "page_info_changed":
            self.query_string = fwd.page_info_changed.query_string
        elif kind == "page_not_found":
            self.stats.errors.append(f"page not found (asked for {self.page!r})")
        elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
            el = fwd.delta.new_element
            el_kind = el.WhichOneof("type")
            if el_kind is None:
                return
            proto = getattr(el, el_kind)
            if el_kind == "exception":
                self.stats.exceptions.append(f"{proto.type}: {proto.message}")
            elif el_kind == "metric":
                self.stats.metric_values.setdefault(proto.label, set()).add(proto.body)
            elif getattr(proto, "id", ""):
                self.widgets[proto.id] = (el_kind, proto)
                self.fragments[proto.id] = fwd.delta.fragment_id

    def fragment_of(self, widget_id: str) -> str:
        return self.fragments.get(widget_id, "")

    async def idle(self, seconds: float) -> bool:
        """Think for `seconds`; True (at once) if the connection closes meanwhile, as a browser
        notices a dead server at once and reconnects."""
        closed = asyncio.ensure_future(self.ws.wait_closed())
        try:
            done, _ = await asyncio.wait({closed}, timeout=seconds)
        finally:
            closed.cancel()
        return bool(done)

    def find_widget(self, key: str) -> tuple[str, object]:
        """The widget whose id carries the user key (Streamlit ids end with "-<key>")."""
        hits = [v for wid, v in self.widgets.items() if wid.endswith("-" + key)]
        if len(hits) != 1:
            raise LookupError(f"{len(hits)} widgets with key {key!r} on page {self.page!r}")
        return hits[0]


def source_address(index: int) -> str:
    """Loopback source address of student `index`: 127.0.0.2, 127.0.0.3, … (Linux answers for all
    of 127.0.0.0/8 without configuration), so that nginx sees one client address per student."""
    addr = FIRST_SOURCE + index
    if addr not in ipaddress.IPv4Network("127.0.0.0/8"):
        raise ValueError(f"student {index} would connect from {addr}, outside 127.0.0.0/8")
    return str(addr)


async def open_ws(url: str, source: str, headers: dict[str, str] | None = None):
    """``headers``: extra handshake headers (a browser's Cookie, say)."""
    async with asyncio.timeout(CONNECT_TIMEOUT_S):
        return await connect(
            url,
            subprotocols=["streamlit"],
            max_size=MAX_FRAME_BYTES,
            open_timeout=None,
            additional_headers=headers,
            local_addr=(source, 0),  # passed on to loop.create_connection: binds the source address
        )
