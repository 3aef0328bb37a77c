"""The follower's poll: a fragment that reads only the room's version, its question and the
presenter's last check-in (each second where the server cannot push, every few seconds where it
can), reruns the app only when the version moved without reaching it or a question was asked or
closed, renews the seat when it is due, and says what is wrong (server unreachable, presenter
away, room missing); the follower keeps the last view meanwhile."""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from classroom_store import records, rooms
from lab_ui.classroom import change_push, session

POLL_S = 1.0  # followers' version check when the server cannot push (lab_ui.classroom.change_push)
SAFETY_POLL_S = 3.0  # with push, polling only guards against a lost wake-up


def watch() -> None:
    """Students: rerun the app only when the room's version moved or a question was asked or
    closed (a cheap check, each second where the server cannot push, every few seconds where it
    can); a student exploring on their own only for a question."""
    interval = SAFETY_POLL_S if change_push.available() else POLL_S
    st.fragment(_check_version, run_every=interval)()


def _check_version() -> None:
    """The follower's poll: keep its seat, notice a new version, and say what is wrong, if
    anything (server unreachable, presenter away, room missing)."""
    room = session.current_room()
    if room is None or room["role"] != "follow":
        return
    if not room["following"]:
        _check_question(room)
        return
    try:
        status = rooms.store().status(room["id"])
        seated = status is None or _keep_seat(room)
    except records.RoomsUnavailable:
        st.warning(session.UNREACHABLE + " You keep the last view.", icon=":material/cloud_off:")
        room["trouble"] = session.UNREACHABLE
        return
    except records.RoomGone:
        status, seated = None, True
    if status is None and room.get("missing_since") is None:
        st.rerun(scope="app")  # ended, aged out or lost: the full run finds out which
    if status is None:
        if time.monotonic() - room["missing_since"] > records.PRESENTER_TTL_S:
            st.rerun(scope="app")
        st.warning(
            f"Room **{room['id']}** is not on the classroom server right now (it may have restarted): "
            "waiting for the presenter's screen to bring it back. You keep the last view.",
            icon=":material/hourglass_top:",
        )
        return
    if (
        room.get("trouble")
        or room.get("missing_since") is not None
        or status.version != room["seen"]
        or status.question != room.get("question_tag", "")  # asked or closed: draw the answer box
        or not seated
    ):
        st.rerun(scope="app")
    room["presenter_age_s"] = status.presenter_age_s
    if status.presenter_age_s >= records.PRESENTER_AWAY_S:
        left = max(0, records.PRESENTER_TTL_S - int(status.presenter_age_s))
        st.warning(
            f"The presenter's screen has not been seen for {int(status.presenter_age_s)} s (tab closed, "
            f"asleep or reloading?). You keep the last view; the room ends in {left} s unless they return.",
            icon=":material/person_off:",
        )


def _check_question(room: dict[str, Any]) -> None:
    """A student exploring on their own still answers the room's questions: a new or closed one
    reruns their screen, whose run draws the box (lab_ui.classroom.ask)."""
    status = session.room_status(room["id"])
    if status is not None and status.question != room.get("question_tag", ""):
        st.rerun(scope="app")


SEAT_REFRESH_S = records.FOLLOWER_TTL_S / 3  # a poll renews its seat this often, not every poll


def _keep_seat(room: dict[str, Any]) -> bool:
    """Renew this screen's seat when it is due (a seat lasts FOLLOWER_TTL_S); whether it has one."""
    if time.monotonic() - room.get("seat_at", -SEAT_REFRESH_S) < SEAT_REFRESH_S:
        return True
    seated = rooms.store().follow(room["id"], session.seat(), session.client_address()) is records.Seat.TAKEN
    room["seat_at"] = time.monotonic() if seated else -SEAT_REFRESH_S
    return seated
