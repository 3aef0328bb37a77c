"""The presenter's screen: after each run it publishes its view (the page and its URL-synced
widget values) and its page as drawn (lab_ui.classroom.frames), and every second, from a
fragment, it checks in (publishing what a fragment-only rerun changed); a room whose presenter
stops checking in ends. A room the store lost is restored from here, under the signed secret."""

from __future__ import annotations

import contextlib
from typing import Any

import streamlit as st

from classroom_store import records, rooms
from lab_ui.classroom import ask, follower_poll, frames, session


def publish(
    room: dict[str, Any],
    url_path: str,
    values: dict[str, Any],
    check_in_only: bool = False,
    drawn: list | None = None,
) -> None:
    """Publish the view if it changed since this screen last sent it, else only check in (a
    second tab of the same presenter, left idle, never overwrites the first). ``check_in_only``:
    the page has not run yet in this run (its widgets' values are not all kept yet). A view the
    room cannot take now (too soon after the last, or too large) is a check-in, and said."""
    payload = {"page": url_path, "values": values}
    store = rooms.store()
    try:
        text, trouble = records.encode_payload(payload), None
    except records.ViewTooLarge as err:
        text, trouble = None, f"Your students keep your last view: {err}."
        payload = {"page": url_path, "values": {}}
    unchanged = check_in_only or text is None or text == room["sent"]
    try:
        if drawn and text is not None:
            _put_frame(room, text, drawn)  # before the view: a follower woken by it finds its frame
        try:
            version = store.publish(room["id"], room["secret"], None if unchanged else payload)
        except records.RoomGone:
            if store.ended(room["id"]):
                raise
            version = store.restore(
                room["id"],
                room["secret"],
                payload,
                version=room["version"] + 1,
                client=session.client_address(),
            )
    except records.RoomsUnavailable:
        room["trouble"] = session.UNREACHABLE + " Your room is kept and re-published when it is back."
        return
    except records.RoomBusy:
        room["trouble"] = None  # checked in; `sent` stays, so the publisher's next tick sends it
        return
    except records.RoomError as err:
        session.leave(f"The room has stopped: {err}.")
        session.forget_room(room["id"])
        return
    room.update(version=version, trouble=trouble)
    if not unchanged:
        room["sent"] = text


def _put_frame(room: dict[str, Any], text: str, drawn: list) -> None:
    """Share the page as drawn for the view ``text``, once per view (RoomGone: the publish that
    follows restores the room, and the next run shares the frame)."""
    view = records.view_key(text)
    if room.get("framed") == view:
        return
    frame = frames.frame_of(drawn)
    if frame is None:
        return  # too large to share: followers run the page
    with contextlib.suppress(records.RoomGone):
        rooms.store().put_frame(room["id"], room["secret"], view, frame.encode())
        room["framed"] = view


@st.fragment(run_every=follower_poll.POLL_S)
def publisher(url_path: str) -> None:
    """Presenters: publish what changed in fragment-only reruns (the Online page's player steps
    its slider in a fragment, after which app.py's after_page does not run), and check in every
    second either way: a room whose presenter stops checking in ends."""
    room = session.current_room()
    if room is not None and room["role"] == "present":
        publish(room, url_path, session.current_values(), check_in_only=room.get("full_run", False))
        if (room := session.current_room()) is not None and room.get("trouble"):
            st.warning(room["trouble"], icon=":material/cloud_off:")
        elif room is not None:
            _seats(room)
            ask.live(room)


def _seats(room: dict[str, Any]) -> None:
    """The presenter's count of followers, and how many seats one network address may hold."""
    status = session.room_status(room["id"])
    if status is None:
        return
    seats = rooms.store().seats
    st.caption(
        f"**{status.followers:,}** of {seats:,} seats taken (screens seen in the last "
        f"{records.FOLLOWER_TTL_S} s); up to {status.per_client:,} per network address."
    )
