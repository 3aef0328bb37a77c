"""Follow the presenter: a teacher starts a room, students' screens show what the projector shows.

What is shared is what lab_ui.state already keeps per session: the current page and every
URL-synced widget value (the ``_keep_`` keys). The presenter's session publishes them after
each run; a follower's session applies them before the page's widgets are made, so each widget
simply starts from the presenter's value. A follower polls with a one-second fragment that reads
only the room's version number (one dict or Redis read) and reruns the app only when it changed.

A student who touches a widget while following is switched to "exploring on my own" (the
presenter's next change would otherwise overwrite it); "Rejoin" catches up at once. The room's
secret lives only in the presenter's session: never in a URL, never on a follower's page.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Mapping
from typing import Any

import streamlit as st

from lab_ui import push, rooms
from lab_ui.state import KEEP_PREFIX

ROOM_PARAM = "room"  # the student link's query parameter
POLL_S = 1.0  # followers' version check when the server cannot push (lab_ui.push)
SAFETY_POLL_S = 3.0  # with push, polling only guards against a lost wake-up
rooms.on_change(push.wake)
_ROOM = "_classroom"  # session key: {"id", "role", "secret"?, "seen", "following", "applied"}
_ERROR = "_classroom_error"  # a message for the next run's sidebar
PRIVATE_KEYS = frozenset({"projector"})  # each screen keeps its own projector mode


def _room() -> dict[str, Any] | None:
    return st.session_state.get(_ROOM)


def current_values() -> dict[str, Any]:
    """This session's URL-synced widget values that can travel as JSON."""
    values = {}
    for key, value in st.session_state.items():
        if not key.startswith(KEEP_PREFIX) or key[len(KEEP_PREFIX) :] in PRIVATE_KEYS:
            continue
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            continue
        values[key[len(KEEP_PREFIX) :]] = value
    return values


def _apply(values: Mapping[str, Any]) -> None:
    """Make this session's widgets start from the presenter's values (before they are made)."""
    for key in [k for k in st.session_state if k.startswith(KEEP_PREFIX)]:
        name = key[len(KEEP_PREFIX) :]
        if name not in values and name not in PRIVATE_KEYS:
            del st.session_state[key]
            st.session_state.pop(name, None)
    for name, value in values.items():
        if name in PRIVATE_KEYS or not isinstance(name, str):
            continue
        st.session_state[KEEP_PREFIX + name] = value
        st.session_state[name] = value


def _session_id() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else ""


def _join_from_link() -> None:
    room_id = st.query_params.get(ROOM_PARAM)
    room = _room()
    if room_id is None or (room is not None and room["id"] == room_id):
        return
    if not rooms.valid_room_id(room_id) or rooms.store().version(room_id) is None:
        st.session_state[_ERROR] = f"There is no live room {str(room_id)[:12]!r}: its link may have expired."
        del st.query_params[ROOM_PARAM]
        return
    st.session_state[_ROOM] = {"id": room_id, "role": "follow", "seen": -1, "following": True, "applied": {}}


def before_page(page, pages_by_url: Mapping[str, Any]) -> None:
    """Call in app.py after st.navigation and before page.run()."""
    _join_from_link()
    room = _room()
    if room is None:
        return
    if room["role"] == "present":
        return
    st.query_params[ROOM_PARAM] = room["id"]  # a reload keeps following
    session_id = _session_id()
    if not room["following"]:
        push.unregister(session_id)
        return
    push.register(room["id"], session_id)
    snap = rooms.store().snapshot(room["id"])
    if snap is None:
        push.unregister(session_id)
        st.session_state[_ROOM] = None
        st.session_state[_ERROR] = "The presenter has ended the room. You keep the last view."
        del st.query_params[ROOM_PARAM]
        return
    target = snap.payload.get("page")
    elsewhere = isinstance(target, str) and target != page.url_path and target in pages_by_url
    if snap.version == room["seen"] and elsewhere:
        # Nothing new from the presenter, yet this run shows another page: the student clicked
        # a page link. Going there is exploring on their own (bouncing them back would fight them).
        room["following"] = False
        push.unregister(session_id)
        st.toast("You opened another page, so you are exploring on your own. **Rejoin** to follow again.")
        return
    if snap.version != room["seen"]:
        values = snap.payload.get("values", {})
        if isinstance(values, Mapping):
            _apply(values)
            room["applied"] = dict(values)
        room["seen"] = snap.version
    if elsewhere:
        st.switch_page(pages_by_url[target], query_params={ROOM_PARAM: room["id"]})


def after_page(page) -> None:
    """Call in app.py after page.run(): the presenter publishes; a follower who changed a widget
    starts exploring on their own."""
    room = _room()
    if room is None:
        return
    if room["role"] == "present":
        with st.sidebar:  # publishes now, after the page's widgets, and then every POLL_S
            _publisher(page.url_path)
        return
    push.finished(_session_id())  # this follower's run is done: the next one may start
    if room["following"] and room["seen"] >= 0:
        now = current_values()
        if any(now.get(k, v) != v for k, v in room["applied"].items()):
            room["following"] = False
            st.toast("You changed a control, so you are exploring on your own. **Rejoin** to follow again.")


def _publish(url_path: str) -> None:
    room = _room()
    payload = {"page": url_path, "values": current_values()}
    try:
        rooms.store().publish(room["id"], room["secret"], payload)
    except rooms.RoomError as err:
        st.session_state[_ROOM] = None
        st.session_state[_ERROR] = str(err)


def student_link(room_id: str, url_path: str) -> str:
    """The link students open: this server's address (as the presenter's browser sees it)."""
    base = (st.context.url or "").split("?")[0].rstrip("/")
    if base.endswith("/" + url_path):
        base = base[: -len(url_path) - 1]
    return f"{base}/{url_path}?{ROOM_PARAM}={room_id}"


@functools.lru_cache(maxsize=16)  # one link per room and page: not redrawn on every presenter rerun
def qr_png(text: str) -> bytes:
    import qrcode

    image = qrcode.make(text, border=2, box_size=8)
    out = io.BytesIO()
    image.save(out)
    return out.getvalue()


def _watch() -> None:
    """Followers: rerun the app only when the room's version moved (a cheap check, each second
    where the server cannot push, every few seconds where it can)."""
    interval = SAFETY_POLL_S if push.available() else POLL_S
    st.fragment(_check_version, run_every=interval)()


def _check_version() -> None:
    room = _room()
    if room is None or room["role"] != "follow" or not room["following"]:
        return
    if rooms.store().version(room["id"]) != room["seen"]:
        st.rerun(scope="app")


@st.fragment(run_every=POLL_S)
def _publisher(url_path: str) -> None:
    """Presenters: publish what changed in fragment-only reruns (the Online page's player steps
    its slider in a fragment, after which app.py's after_page does not run). An unchanged view
    costs one JSON dump and no version."""
    room = _room()
    if room is not None and room["role"] == "present":
        _publish(url_path)


def _start() -> None:
    try:
        room_id, secret = rooms.store().create()
    except rooms.RoomError as err:
        st.session_state[_ERROR] = str(err)
    else:
        st.session_state[_ROOM] = {"id": room_id, "role": "present", "secret": secret}


def _end() -> None:
    room = _room()
    try:
        rooms.store().close(room["id"], room["secret"])
    except rooms.RoomError as err:
        st.session_state[_ERROR] = str(err)
    st.session_state[_ROOM] = None


def _follow(following: bool) -> None:
    room = _room()
    room["following"] = following
    if following:
        room["seen"] = -1  # catch up at once


def sidebar(page) -> None:
    """The Classroom box of the sidebar: start/end a room, or follow/explore/rejoin.

    Buttons act through callbacks, which run before the script: a press is never lost to a
    rerun, and the room exists before the page publishes."""
    error = st.session_state.pop(_ERROR, None)
    if error:
        st.warning(error, icon=":material/groups:")
    room = _room()
    with st.expander("Classroom", icon=":material/groups:", expanded=room is not None):
        if room is None:
            st.caption("Start a room and students who open its link follow your screen.")
            st.button("Start a room", key="classroom_start", on_click=_start)
        elif room["role"] == "present":
            link = student_link(room["id"], page.url_path)
            st.markdown(f"Presenting room **{room['id']}**. Students open:")
            st.code(link, language=None)
            st.image(qr_png(link), caption="Scan to follow", width=180)
            st.button("End the room", key="classroom_end", on_click=_end)
        elif room["following"]:
            st.markdown(f"Following room **{room['id']}**: your screen shows the presenter's.")
            st.button("Explore on my own", key="classroom_leave", on_click=_follow, args=(False,))
        else:
            st.markdown(f"Exploring on your own (room **{room['id']}**).")
            st.button(
                "Rejoin the presenter", key="classroom_rejoin", type="primary", on_click=_follow, args=(True,)
            )
    if room is not None and room["role"] == "follow" and room["following"]:
        _watch()  # only followers poll: everyone else pays nothing
