"""A follower's screen: it keeps a seat, takes the presenter's view (the values, so **Take
control** opens the full page at the presenter's state) and shows the presenter's frame in place
of the page (lab_ui.classroom.frames), fetched once per process and view; where there is no frame
(a change made in a fragment, a page over the size cap) it runs the page at those values. A new
frame is also put straight onto a screen that shows the last one (`frame_pusher`, for
lab_ui.classroom.change_push). A student who takes control, touches a widget of a page it runs, or opens
another page explores on their own until **Rejoin**. A room that is gone is told (ended, aged out)
or waited for (lost by a store that restarted)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from typing import Any

import streamlit as st

from classroom_store import records, rooms
from lab_ui import st_internals
from lab_ui.classroom import ask, change_push, frames, session


def _sit(room: dict[str, Any]) -> records.Snapshot | None:
    """Keep this follower's seat and read the room's latest view. None when it cannot follow now:
    the store unreachable (the sidebar's poll shows it and retries), the room gone (_missing
    says so), or no seat (session.leave says why)."""
    try:
        seat = rooms.store().follow(room["id"], session.seat(), session.client_address())
        snap = rooms.store().snapshot(room["id"])
    except records.RoomsUnavailable:
        room["trouble"] = session.UNREACHABLE
        return None
    except records.RoomGone:
        seat, snap = records.Seat.TAKEN, None
    room["trouble"] = None
    if snap is None:
        _missing(room)
        return None
    room["missing_since"] = None
    if seat is not records.Seat.TAKEN:
        session.leave(_refusal(room["id"], seat))
        return None
    room["seat_at"] = time.monotonic()
    return snap


def show(room: dict[str, Any], page, pages_by_url: Mapping[str, Any]) -> bool:
    """before_page for a follower: take a seat, the presenter's values and page, and draw the
    presenter's frame above which a live question is answered. True when the frame was drawn
    (the page is not run)."""
    room["viewing"] = False
    session_id = session.session_id()
    if not room["following"]:
        change_push.unregister(session_id)
        ask.follower_box(
            room, session.seat(), session.client_address()
        )  # exploring on their own, a student still answers
        return False
    snap = _sit(room)
    if snap is None:
        return False
    change_push.register(room["id"], session_id)
    target = snap.payload.get("page")
    elsewhere = isinstance(target, str) and target != page.url_path and target in pages_by_url
    if snap.version == room["seen"] and elsewhere:
        # Nothing new from the presenter, yet this run shows another page: the student clicked
        # a page link. Going there is exploring on their own (bouncing them back would fight them).
        room["following"] = False
        change_push.unregister(session_id)
        st.toast("You opened another page, so you are exploring on your own. **Rejoin** to follow again.")
        return False
    if snap.version != room.get("applied_version"):  # a pushed frame moves "seen", not the values
        values = snap.payload.get("values", {})
        if isinstance(values, Mapping):
            session.apply_values(values)
            room["applied"] = dict(values)
        room["applied_version"] = snap.version
    room["seen"] = snap.version
    if elsewhere:
        st.switch_page(pages_by_url[target], query_params={session.ROOM_PARAM: room["id"]})
    ask.follower_box(room, session.seat(), session.client_address())
    if room["question_tag"]:  # the room's question, once: nothing of the presenter's page with it
        room.update(viewing=False, boxes=None, page=page.url_path)
        return True
    frame = _frame_for(room["id"], snap) if VIEW_FRAMES else None
    boxes = frames.show(frame) if frame is not None else None
    room.update(viewing=boxes is not None, boxes=boxes, page=page.url_path)
    return room["viewing"]


def after_run(room: dict[str, Any], values: Mapping[str, Any]) -> None:
    """after_page for a follower: its run is done (the next pushed one may start); a follower who
    changed a widget starts exploring on their own."""
    change_push.finished(session.session_id())
    if room["following"] and room["seen"] >= 0:
        now = session.current_values(values)
        if any(now.get(k, v) != v for k, v in room["applied"].items()):
            room["following"] = False
            st.toast("You changed a control, so you are exploring on your own. **Rejoin** to follow again.")


def frame_pusher(room_id: str):
    """For lab_ui.classroom.change_push (off the event loop, once per change of the room): a function
    that puts the room's new frame straight onto a following screen that shows its last frame on
    the same page, with no run (True), or declines (False: that screen is rerun instead)."""
    try:
        snap = rooms.store().snapshot(room_id)
    except records.RoomError:
        return None
    frame = _frame_for(room_id, snap) if snap is not None and VIEW_FRAMES else None
    if frame is None:
        return None
    try:
        status = rooms.store().status(room_id)
    except records.RoomError:
        return None
    asking = "" if status is None else status.question

    def put(app_session) -> bool:
        try:
            room = app_session.session_state[session.ROOM_KEY]
        except KeyError:
            return False
        if not (
            isinstance(room, dict)
            and room.get("id") == room_id
            and room.get("role") == "follow"
            and room.get("following")
            and room.get("viewing")
            and room.get("page") == snap.payload.get("page")
            and st_internals.session_idle(app_session)  # never between a run's deltas
        ):
            return False
        if room.get("question_tag", "") != asking:
            return False  # a new or closed question: its run draws the answer box
        if room["seen"] >= snap.version:
            return True  # already shows it
        st_internals.send_between_runs(app_session, frames.replace(frame, room["boxes"]))
        room["seen"] = snap.version
        return True

    return put


change_push.set_frame_pusher(frame_pusher)


VIEW_FRAMES = os.environ.get("ATTN_LAB_FOLLOW_FRAMES", "1") != "0"  # 0: followers run the page
_FRAME_CACHE_ROOMS = 16  # frames decoded in this process (one per room, latest rooms kept)
_frame_cache: dict[str, tuple[str, frames.Frame]] = {}  # room id -> (view key, frame)
_frame_lock = threading.Lock()


def _frame_for(room_id: str, snap: records.Snapshot) -> frames.Frame | None:
    """The presenter's drawn page for this snapshot's view, fetched and decoded once per process
    and view; None when there is none (the view came from a fragment run, the frame was too large,
    or the store cannot be reached): the follower then runs the page."""
    with _frame_lock:
        cached = _frame_cache.get(room_id)
        if cached is not None and cached[0] == snap.view:
            return cached[1]
        try:
            if rooms.store().frame_view(room_id) != snap.view:
                return None
            found = rooms.store().frame(room_id)
        except records.RoomError:
            return None
        if found is None or found[0] != snap.view:
            return None
        frame = frames.Frame.decode(found[1])
        _frame_cache.pop(room_id, None)
        _frame_cache[room_id] = (snap.view, frame)
        while len(_frame_cache) > _FRAME_CACHE_ROOMS:
            del _frame_cache[next(iter(_frame_cache))]
        return frame


def _refusal(room_id: str, seat: records.Seat) -> str:
    if seat is records.Seat.ROOM_FULL:
        why = f"all its {rooms.store().seats:,} seats are taken"
    else:
        why = "every seat your network address may hold in it is taken (the presenter can raise that)"
    return f"Room **{room_id}** is full: {why}. Explore on your own, or look at the projector."


_AGED_OUT_MARGIN_S = 60  # a follower's last poll saw the presenter this close to the TTL: aged out


def _missing(room: dict[str, Any]) -> None:
    """The room is not in the store. Ended by its presenter, or aged out after the presenter was
    away: say so and let go. Otherwise the store lost it (a restart): wait for the presenter's
    screen to re-publish it, for as long as a room outlives an absent presenter."""
    try:
        ended = rooms.store().ended(room["id"])
    except records.RoomsUnavailable:
        room["trouble"] = session.UNREACHABLE
        return
    if ended:
        session.leave("The presenter has ended the room. You keep the last view.")
    elif room.get("presenter_age_s", 0.0) >= records.PRESENTER_TTL_S - _AGED_OUT_MARGIN_S:
        session.leave(
            f"The presenter has not been back for {records.PRESENTER_TTL_S // 60} minutes, so the room "
            "has ended. You keep the last view."
        )
    elif room.setdefault("missing_since", None) is None:
        room["missing_since"] = time.monotonic()
    elif time.monotonic() - room["missing_since"] > records.PRESENTER_TTL_S:
        session.leave("The room is gone: its presenter did not bring it back. You keep the last view.")


def set_following(following: bool) -> None:
    """The sidebar's Take control / Explore on my own (False) and Rejoin (True)."""
    room = session.current_room()
    room["following"] = following
    if following:
        room["seen"] = -1  # catch up at once
