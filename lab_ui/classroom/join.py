"""Joining a room from its link (``?room=<id>``): a follower takes a seat in a live room, a link to
a room that has ended or never was is told; the presenter's own browser takes its room back after
a reload (its cookie names the room and carries the signed secret) and starts from the room's view,
so a second tab never overwrites the class with its defaults. The cookie, not the URL fragment:
the server reads cookies with every connection (it never sees a fragment), and a fragment travels
with a copied address bar, so a teacher pasting their own address to the class would hand out
the secret."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from classroom_store import records, rooms
from lab_ui.classroom import session


def _presenter(room_id: str) -> dict[str, Any] | None:
    """The presenter's room again after a reload: this browser's cookie names this room."""
    secret = dict(session.my_rooms()).get(room_id)
    if not secret:
        return None
    try:
        if not rooms.store().issued(room_id, secret):
            return None  # a secret this server never signed for this room: follow it like anyone else
        rooms.store().publish(room_id, secret, None)  # a check-in proves it is this room's
    except (records.RoomGone, records.RoomsUnavailable):
        pass  # lost by the store or unreachable: the presenter's publish restores (signed) or retries
    except records.RoomError:
        return None  # another room holds this id now: follow it like anyone else
    return {"id": room_id, "role": "present", "secret": secret, "version": 0, "sent": None, "adopt": True}


def adopt(room: dict[str, Any], page, pages_by_url: Mapping[str, Any]) -> None:
    """A presenter's screen that takes its room back starts from the room's view, so that a second
    tab (the teacher checking the student link) never overwrites the class with its defaults."""
    try:
        snap = rooms.store().snapshot(room["id"])
    except records.RoomsUnavailable:
        return
    if snap is None:
        return
    values = snap.payload.get("values", {})
    if isinstance(values, Mapping):
        session.apply_values(values)
    room.update(version=snap.version, sent=records.encode_payload(snap.payload))
    target = snap.payload.get("page")
    if isinstance(target, str) and target != page.url_path and target in pages_by_url:
        st.switch_page(pages_by_url[target], query_params={session.ROOM_PARAM: room["id"]})


def _follower(room_id: str) -> dict[str, Any]:
    return {"id": room_id, "role": "follow", "seen": -1, "following": True, "applied": {}}


def join_from_link() -> None:
    room_id = st.query_params.get(session.ROOM_PARAM)
    room = session.current_room()
    if room_id is None or (room is not None and room["id"] == room_id):
        return
    shown = session.md_escape(repr(str(room_id)[:12]))
    if not records.valid_room_id(room_id):
        session.leave(f"There is no live room {shown}: its link may have expired.")
        return
    if (presenter := _presenter(room_id)) is not None:
        st.session_state[session.ROOM_KEY] = (
            presenter  # its check-in proved the secret (or the store is down)
        )
        return
    try:
        store = rooms.store()
        found = "live" if store.status(room_id) is not None else "ended" if store.ended(room_id) else "none"
    except records.RoomsUnavailable:
        found = "live"  # join now: the sidebar says the server is unreachable and the poll retries
    if found == "none":
        session.leave(f"There is no live room {shown}: its link may have expired.")
    elif found == "ended":
        session.leave(f"Room {shown} has ended: its presenter closed it.")
    else:
        st.session_state[session.ROOM_KEY] = _follower(room_id)
