"""One browser tab in a classroom room, as the follow benchmark drives it (benchmarks/follow_load.py).

``RoomClient`` is ``client.Session`` plus what following needs: the markdown it was shown (the
room id, the presenter's controls drawn as text on a frame: lab_ui.classroom.frames), the polling
fragment's id and interval (the server's ``auto_rerun``), the L slider's value as a browser would
show it, the sidebar's alerts and the presenter's cookie. ``open_tab`` opens one from its own
loopback address; ``check_ins`` and ``drain`` are the presenter's browser between its own runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import re

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from .client import Session, SessionStats, open_ws, source_address

KEY = "in_L"
LABEL = "L (queries)"  # the slider's label: a follower shown the presenter's frame reads it as text
SETTING = re.compile(r"^(.+?): `(.*)`$")  # lab_ui.classroom.frames: a control drawn as "label: `value`"
ROOM = re.compile(r"Presenting room \*\*([a-z2-9]{6})\*\*")
# the cookie's value, as the page hands it to its cookie script (a hidden text box: "<room>.<secret>")
COOKIE = re.compile(r"^([a-z2-9]{6}\.[0-9a-f]+-[0-9a-f]+-[0-9a-f]+)$")


class RoomClient(Session):
    """The harness's session (client.Session) plus what following needs: markdown text,
    the polling fragment's id and the current value of the L slider."""

    def __init__(self, ws, page, stats):
        super().__init__(ws, page, stats)
        self.markdown: list[str] = []
        self.fragment_id = ""
        self.interval_s = 1.0
        self.shown: dict[str, float] = {}
        self.alerts: list[str] = []  # warnings the sidebar showed
        self.cookie = ""  # what the page's script would store in the browser
        self.settings: dict[str, str] = {}  # the presenter's controls as a frame shows them
        self.on_frame = False  # the last value came as the frame's text line, not as a widget
        self.running = False  # between a run's new_session and its script_finished
        self.pushed = 0  # frame messages received between runs (sent with no run)

    def _read(self, fwd: ForwardMsg, kind: str | None) -> None:
        if kind == "auto_rerun":
            self.fragment_id, self.interval_s = fwd.auto_rerun.fragment_id, fwd.auto_rerun.interval
            return
        super()._read(fwd, kind)
        element = fwd.delta.new_element if kind == "delta" else None
        which = element.WhichOneof("type") if element is not None else None
        if which == "markdown":
            self.markdown.append(element.markdown.body)
            if m := SETTING.match(element.markdown.body):
                self.settings[m.group(1)] = m.group(2)
                self.on_frame = m.group(1) == LABEL or self.on_frame
        elif which == "slider" and element.slider.id.endswith("-" + KEY):
            self.on_frame = False  # the page ran: the slider itself shows the value
        elif which == "alert":
            self.alerts.append(element.alert.body)
        elif which == "text" and (m := COOKIE.match(element.text.body.strip())):
            self.cookie = m.group(1)

    def value(self, key: str) -> float:
        """The widget's value as the browser would show it: a run that sets it from the server
        (set_value) moves it; a run that does not leaves the browser's value where it was. On the
        presenter's frame (no widget), the value its text line shows."""
        if self.on_frame:
            return float(self.settings[LABEL])
        _, w = self.find_widget(key)
        if w.set_value or key not in self.shown:
            self.shown[key] = (list(w.value) if w.set_value else list(w.default))[0]
        return self.shown[key]

    async def send_poll(self) -> None:
        """What the browser's run_every timer sends: a rerun of the fragment alone."""
        msg = BackMsg()
        msg.rerun_script.query_string = self.query_string
        msg.rerun_script.page_script_hash = self.page_script_hash
        msg.rerun_script.fragment_id = self.fragment_id
        msg.rerun_script.is_auto_rerun = True
        await self.ws.send(msg.SerializeToString())


async def open_tab(
    url: str, page: str, stats: SessionStats, query: str = "", index: int = 0, cookie: str = ""
) -> RoomClient:
    """A session from its own loopback address (127.0.0.2, …), so that nginx's address hash
    spreads followers over replicas as it would spread a classroom's laptops."""
    headers = {"Cookie": f"attn_lab_presenter={cookie}"} if cookie else None
    ws = await open_ws(url, source_address(index), headers)
    client = RoomClient(ws, page, stats)
    client.query_string = query
    await client.rerun([], 60)
    return client


async def check_ins(client: RoomClient) -> None:
    """The presenter's browser: its publisher fragment runs every interval (the check-in)."""
    while True:
        await asyncio.sleep(client.interval_s)
        if client.fragment_id:
            with contextlib.suppress(Exception):
                await client.send_poll()


async def drain(client: RoomClient) -> None:
    """Read (and keep) what the server sends between the presenter's own runs."""
    with contextlib.suppress(Exception):
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await client.ws.recv())
            kind = fwd.WhichOneof("type")
            if kind != "script_finished":
                client._read(fwd, kind)
