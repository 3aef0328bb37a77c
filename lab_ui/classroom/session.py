"""What a screen's session keeps of its room, shared by the classroom's parts: the room record
in the session (``ROOM_KEY``: id, role, the presenter's secret, what a follower has seen), the
presenter's cookie, this client's address (for the per-client limits), the URL-synced widget
values that travel, and leaving a room with a line for the sidebar.

The room's secret never appears in a link or on a follower's page. It lives in the presenter's
session and in a cookie of the presenter's browser (``attn_lab_presenter``, SameSite=Strict), so a
reload of a page whose address carries ``?room=<id>`` takes the room back (lab_ui.classroom.join).
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Mapping
from typing import Any

import streamlit as st

from classroom_store import records, rooms
from lab_ui import st_internals
from lab_ui.classroom import change_push
from lab_ui.widgets import KEEP_PREFIX, SCREEN_KEYS

ROOM_PARAM = "room"  # the student link's query parameter
COOKIE = "attn_lab_presenter"  # "<room id>.<secret>" of each room this browser started, joined by "_"
MINE_KEY = "_classroom_mine"  # session key: this browser's rooms [(id, secret)], newest first
MAX_MINE = 8  # rooms a presenter cookie remembers
COOKIE_MAX_AGE_S = 12 * 3600  # a stale cookie is harmless: the room is checked on every use
ROOM_KEY = "_classroom"  # session key: {"id", "role", "secret"?, "seen", "following", "applied", ...}
ERROR_KEY = "_classroom_error"  # a message for the next run's sidebar
SET_COOKIE_KEY = "_classroom_cookie"  # the cookie value to write on the next run ("" clears it)
PRIVATE_KEYS = SCREEN_KEYS  # each screen keeps its own projector mode and palette
UNREACHABLE = "The classroom server cannot be reached: retrying every few seconds."
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$&])")


def md_escape(text: str) -> str:
    """``text`` shown literally in Streamlit markdown: every ASCII punctuation that markdown reads
    is backslash-escaped (CommonMark), so a URL's ``[x](//e.vu)`` is no link."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def current_room() -> dict[str, Any] | None:
    return st.session_state.get(ROOM_KEY)


def cookies() -> Mapping[str, str]:
    """The browser's cookies, as sent when it opened this session's connection."""
    return st.context.cookies


def my_rooms() -> list[tuple[str, str]]:
    """The rooms this browser started, (id, secret), newest first: its presenter cookie as this
    session last wrote it. Unchecked: a caller asks the store whether it issued each secret, so a
    forged entry drives nothing."""
    if MINE_KEY not in st.session_state:
        found = []
        for entry in str(cookies().get(COOKIE, "")).split("_")[:MAX_MINE]:
            room_id, _, secret = entry.partition(".")
            if records.valid_room_id(room_id) and 0 < len(secret) <= 80:
                found.append((room_id, secret))
        st.session_state[MINE_KEY] = found
    return list(st.session_state[MINE_KEY])


def remember_room(room_id: str, secret: str) -> None:
    """This browser started ``room_id``: first in its cookie (written on the next run)."""
    _write_mine([(room_id, secret), *[m for m in my_rooms() if m[0] != room_id]][:MAX_MINE])


def forget_room(room_id: str) -> None:
    """``room_id`` has ended: out of this browser's cookie."""
    _write_mine([m for m in my_rooms() if m[0] != room_id])


def _write_mine(mine: list[tuple[str, str]]) -> None:
    st.session_state[MINE_KEY] = mine
    st.session_state[SET_COOKIE_KEY] = "_".join(f"{room_id}.{secret}" for room_id, secret in mine)


TRUSTED_PROXIES_ENV = "ATTN_LAB_TRUSTED_PROXIES"  # proxy addresses whose X-Forwarded-For is believed


def client_of(peer: object, forwarded: object, trusted: frozenset[str]) -> str:
    """Who is asking, for the per-client limits: the socket's peer, unless that peer is a proxy the
    operator named (``trusted``), whose X-Forwarded-For's last entry (the address that proxy itself
    saw and appended) is the client. Anyone can send the header; only a named proxy is believed."""
    peer = _plain(peer) if isinstance(peer, str) and peer else "unknown"
    if peer in trusted and isinstance(forwarded, str) and forwarded.strip():
        return forwarded.split(",")[-1].strip()[:64] or peer
    return peer


def _plain(address: str) -> str:
    """An IPv4 address as itself, not IPv4-mapped IPv6 ("::ffff:127.0.0.1" from a dual-stack socket)."""
    return address[7:] if address.lower().startswith("::ffff:") and "." in address else address


def trusted_proxies(env: Mapping[str, str] | None = None) -> frozenset[str]:
    """ATTN_LAB_TRUSTED_PROXIES: addresses separated by commas or spaces (deploy/serve.sh names
    its nginx); empty by default, so a server with no proxy in front believes no header."""
    raw = (os.environ if env is None else env).get(TRUSTED_PROXIES_ENV, "")
    return frozenset(_plain(a) for a in re.split(r"[,\s]+", raw) if a)


UNVERIFIED = "unverified-forwarded"  # every connection whose real peer could not be read back


def socket_peer() -> str | None:
    """This session's TCP peer as the socket reports it. Not st.context.ip_address: Streamlit's
    server (uvicorn) believes X-Forwarded-For from 127.0.0.1 and ::1 by default (its
    FORWARDED_ALLOW_IPS) and puts the header's address in place of the peer before the app sees
    it, so a browser on the server's own machine, or anything relaying through it, could name
    itself. Read from Streamlit's internals (the session's websocket, uvicorn's protocol object);
    None where they are missing."""
    host = st_internals.socket_peer_host(session_id())  # None: AppTest, another server or version
    return host if isinstance(host, str) and host else None


def peer_of(socket: str | None, shown: str | None, forwarded: object) -> str | None:
    """The peer to judge the header by: the socket's own (``socket``) where it could be read, else
    the one Streamlit shows (``shown``), unless that one is an entry of the header itself (the
    server replaced the peer with the header's word: who really connected is unknown, so all such
    connections count as one client, `UNVERIFIED`)."""
    if socket is not None:
        return socket
    entries = [e.strip() for e in forwarded.split(",")] if isinstance(forwarded, str) else []
    return UNVERIFIED if shown and shown in entries else shown


def client_address() -> str:
    """This session's client address: `client_of` the socket's real peer and its X-Forwarded-For."""
    forwarded = st.context.headers.get("X-Forwarded-For")
    peer = peer_of(socket_peer(), st.context.ip_address, forwarded)
    return client_of(peer, forwarded, trusted_proxies())


def state_after_stop():
    """This session's state, readable in a ``finally`` after the page called st.stop: from then
    on every st.session_state access raises Streamlit's StopException, its underlying store's
    does not (Streamlit's runtime internals; st.session_state where they are missing). Supports
    ``in``, ``[]`` and ``filtered_state`` (a dict of the user's keys)."""
    state = st_internals.session_state_store()
    return state if state is not None and hasattr(state, "filtered_state") else st.session_state


def current_values(state: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """This session's (or ``state``'s) URL-synced widget values that can travel as JSON."""
    values = {}
    for key, value in (st.session_state if state is None else state).items():
        if not key.startswith(KEEP_PREFIX) or key[len(KEEP_PREFIX) :] in PRIVATE_KEYS:
            continue
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            continue
        values[key[len(KEEP_PREFIX) :]] = value
    return values


def apply_values(values: Mapping[str, Any]) -> None:
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


def session_id() -> str:
    ctx = st_internals.script_run_ctx()
    return ctx.session_id if ctx is not None else ""


def seat() -> str:
    """This session's seat in a room (a random id kept in its state)."""
    return st.session_state.setdefault("_classroom_seat", secrets.token_hex(8))


def leave(message: str) -> None:
    """Drop this session's room (with a message for the sidebar) and its link parameter."""
    change_push.unregister(session_id())
    st.session_state[ROOM_KEY] = None
    st.session_state[ERROR_KEY] = message
    if ROOM_PARAM in st.query_params:
        del st.query_params[ROOM_PARAM]


def room_status(room_id: str) -> records.Status | None:
    """The room's status; None when there is no live room or the store cannot say now."""
    try:
        return rooms.store().status(room_id)
    except records.RoomError:
        return None
