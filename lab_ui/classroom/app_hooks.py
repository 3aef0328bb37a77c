"""Follow the presenter: a teacher starts a room, students' screens show what the projector shows.

What is shared is what lab_ui.widgets already keeps per session — the current page and every
URL-synced widget value (the ``_keep_`` keys) — and the page as the presenter's run drew it
(lab_ui.classroom.frames). The presenter's session publishes both after each run (also a run
stopped by bad input), and its screen checks in every second. A follower's screen shows the
frame: sent straight to it when the presenter changes something (lab_ui.classroom.change_push), or drawn
by its own run in place of the page; either way the page does not run for it. Its session also
takes the values, so **Take control** opens the full page at the presenter's state. Where there is
no frame for the room's view (a change made in a fragment, a page over the size cap), the follower
runs the page at those values, each widget starting from the presenter's value. A follower polls
with a fragment that reads only the room's version and the presenter's last check-in, and reruns
the app only when the version moved without reaching it.

A student who takes control, touches a widget of a page it runs, or opens another page is
switched to "exploring on my own" (the presenter's next change would otherwise overwrite it);
"Rejoin" catches up at once.

The room's secret never appears in a link or on a follower's page. It lives in the presenter's
session and in a cookie of the presenter's browser (``attn_lab_presenter``, SameSite=Strict),
so a reload of a page whose address carries ``?room=<id>`` takes the room back. A cookie, not the
URL fragment: the server reads cookies with every connection (it never sees a fragment), and a
fragment travels with a copied address bar, so a teacher pasting their own address to the class
would hand out the secret. Faults are told, not thrown: an unreachable room server, a presenter
who is away, a room that is full or ended each get one line in the sidebar, and followers keep
the last view while the page retries.
"""

from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import Mapping
from typing import Any

import streamlit as st

from classroom_store import records, rooms
from lab_ui import st_internals
from lab_ui.classroom import (
    ask,
    change_push,
    follower_poll,
    follower_screen,
    frames,
    join,
    presenter_screen,
    session,
)

records.on_change(change_push.wake)  # a publish anywhere wakes this process's followers

_PER_CLIENT_KEY = "classroom_per_client"  # the presenter's seats-per-address input
_COOKIE_BOX = "classroom_cookie"  # keyed container: Streamlit gives it the class st-key-<key>


def before_page(page, pages_by_url: Mapping[str, Any]) -> bool:
    """Call in app.py after st.navigation and before page.run(). True when it drew the
    presenter's page for a follower (lab_ui.classroom.frames): then app.py does not run the page."""
    join.join_from_link()
    room = session.current_room()
    if room is None:
        return False
    st.query_params[session.ROOM_PARAM] = room["id"]  # a reload keeps the room (the presenter's too)
    if room["role"] == "present":
        room["full_run"] = True  # the sidebar's publisher only checks in until the page has run
        if room.pop("adopt", False):
            join.adopt(room, page, pages_by_url)
        return ask.presenter_question(room)  # a live question is on her screen in place of the page
    return follower_screen.show(room, page, pages_by_url)


@contextlib.contextmanager
def recording(drawn: list):
    """Around page.run() in app.py: a presenter's run records what its page draws into ``drawn``
    (lab_ui.classroom.frames), for after_page to share; anyone else's records nothing."""
    room = session.current_room()
    if room is None or room["role"] != "present":
        yield
        return
    with frames.recording() as got:
        try:
            yield
        except st_internals.RerunException:
            room["rerunning"] = True  # a page cut short by st.rerun/switch_page: its next run shares
            raise
        finally:
            if not room.get("rerunning"):
                drawn.extend(got)  # a page that ran to its end, or stopped on bad input (st.stop)


def after_page(page, drawn: list | None = None) -> None:
    """Call in app.py after page.run(), in a ``finally``: also when the page stopped early (a
    ``require`` on bad input) or raised. The presenter publishes what its page shows, the bad input
    too, and the page as drawn (``drawn``, from `recording`), so followers show the same; a
    follower's run is done (the next pushed one may start); a follower who changed a widget starts
    exploring on their own."""
    state = session.state_after_stop()
    room = state[session.ROOM_KEY] if session.ROOM_KEY in state else None  # noqa: SIM401 (Streamlit's store has no .get)
    if room is None:
        return
    values = state.filtered_state if hasattr(state, "filtered_state") else state
    if room["role"] == "present":
        room["full_run"] = False
        if room.pop("rerunning", False):
            return  # half a page: the run that follows publishes the whole
        # no element here: after a stop, drawing one would raise
        presenter_screen.publish(room, page.url_path, session.current_values(values), drawn=drawn)
        return
    follower_screen.after_run(room, values)


def student_link(room_id: str, url_path: str) -> str:
    """The link students open: this server's address (as the presenter's browser sees it)."""
    base = (st.context.url or "").split("?")[0].rstrip("/")
    if base.endswith("/" + url_path):
        base = base[: -len(url_path) - 1]
    return f"{base}/{url_path}?{session.ROOM_PARAM}={room_id}"


@functools.lru_cache(maxsize=16)  # one link per room and page: not redrawn on every presenter rerun
def qr_png(text: str) -> bytes:
    import qrcode

    image = qrcode.make(text, border=2, box_size=8)
    out = io.BytesIO()
    image.save(out)
    return out.getvalue()


def _per_client_input(room: dict[str, Any]) -> None:
    """How many seats one network address may hold: a class behind one NAT address (a campus
    network) needs it raised to the class's size."""
    if _PER_CLIENT_KEY not in st.session_state:  # a reloaded presenter starts from the room's
        status = session.room_status(room["id"])
        st.session_state[_PER_CLIENT_KEY] = records.SEATS_PER_CLIENT if status is None else status.per_client
    st.number_input(
        "Seats per network address",
        min_value=1,
        max_value=rooms.store().seats,
        key=_PER_CLIENT_KEY,
        on_change=_set_per_client,
        help="Students behind one address (a campus or school network) share this many seats: "
        "raise it to your class's size if they do.",
    )


def _set_per_client() -> None:
    room = session.current_room()
    try:
        rooms.store().set_per_client(room["id"], room["secret"], int(st.session_state[_PER_CLIENT_KEY]))
    except records.RoomError as err:
        st.session_state[session.ERROR_KEY] = f"Could not change the seats per address: {err}."


def _start() -> None:
    try:
        room_id, secret = rooms.store().create(session.client_address())
    except records.RoomError as err:
        st.session_state[session.ERROR_KEY] = f"Could not start a room: {err}."
    else:
        st.session_state.pop(_PER_CLIENT_KEY, None)
        st.session_state[session.ROOM_KEY] = {
            "id": room_id,
            "role": "present",
            "secret": secret,
            "version": 0,
            "sent": None,
        }
        session.remember_room(room_id, secret)


def _end() -> None:
    room = session.current_room()
    try:
        rooms.store().close(room["id"], room["secret"])
    except records.RoomsUnavailable:
        st.session_state[session.ERROR_KEY] = f"Could not end the room: {session.UNREACHABLE}"
        return
    except records.RoomError as err:
        st.session_state[session.ERROR_KEY] = str(err)
    st.session_state[session.ROOM_KEY] = None
    session.forget_room(room["id"])
    if session.ROOM_PARAM in st.query_params:
        del st.query_params[session.ROOM_PARAM]


def _take_back(room_id: str, secret: str) -> None:
    """Present ``room_id`` again from this tab (a room the store lost is restored by the publish)."""
    st.session_state.pop(_PER_CLIENT_KEY, None)
    st.session_state[session.ROOM_KEY] = {
        "id": room_id,
        "role": "present",
        "secret": secret,
        "version": 0,
        "sent": None,
        "adopt": True,
    }
    st.query_params[session.ROOM_PARAM] = room_id


def _end_mine(room_id: str, secret: str) -> None:
    try:
        rooms.store().close(room_id, secret)
    except records.RoomError as err:
        st.session_state[session.ERROR_KEY] = f"Could not end room {room_id}: {err}."
        return
    session.forget_room(room_id)


def _my_rooms() -> None:
    """The rooms this browser started and left (closed tabs), each to take back or end: the
    cookie names them, the store vouches for each secret (a forged one lists nothing)."""
    store = rooms.store()
    for room_id, secret in session.my_rooms():
        try:
            if not store.issued(room_id, secret) or store.ended(room_id):
                continue
            live = store.status(room_id) is not None
        except records.RoomError:
            continue
        st.markdown(
            f"Your room **{room_id}**"
            + ("" if live else " (the server let it go: taking it back restores it)")
        )
        take, end = st.columns(2)
        take.button("Take back", key=f"classroom_take_{room_id}", on_click=_take_back, args=(room_id, secret))
        end.button("End it", key=f"classroom_end_{room_id}", on_click=_end_mine, args=(room_id, secret))


def _write_cookie(value: str) -> None:
    """Set (or, with "", clear) the presenter cookie in this browser. The value (a room id and
    its token, both made here) travels as plain text in a hidden box; a constant script copies it
    into the cookie, so no raw HTML is ever built from a variable."""
    with st.container(key=_COOKIE_BOX):
        st.text(value)
    st.html(  # cookie name and max-age: session.COOKIE and session.COOKIE_MAX_AGE_S
        """<style>.st-key-classroom_cookie { display: none; }</style><script>
        (() => {
          const box = document.querySelector(".st-key-classroom_cookie");
          if (!box) return;
          const value = box.textContent.trim();
          document.cookie = "attn_lab_presenter=" + value + "; path=/; max-age=" + (value ? 43200 : 0) +
            "; SameSite=Strict" + (location.protocol === "https:" ? "; Secure" : "");
        })();
        </script>""",
        unsafe_allow_javascript=True,
    )


def sidebar(page) -> None:
    """The Classroom box of the sidebar: start/end a room, or follow/explore/rejoin.

    Buttons act through callbacks, which run before the script: a press is never lost to a
    rerun, and the room exists before the page publishes."""
    if (cookie := st.session_state.pop(session.SET_COOKIE_KEY, None)) is not None:
        _write_cookie(cookie)
    error = st.session_state.pop(session.ERROR_KEY, None)
    if error:
        st.warning(error, icon=":material/groups:")
    room = session.current_room()
    with st.expander("Classroom", icon=":material/groups:", expanded=room is not None):
        if room is None:
            st.caption("Start a room and students who open its link follow your screen.")
            st.button("Start a room", key="classroom_start", on_click=_start)
            _my_rooms()
        elif room["role"] == "present":
            link = student_link(room["id"], page.url_path)
            st.markdown(f"Presenting room **{room['id']}**. Students open:")
            st.code(link, language=None)
            st.image(qr_png(link), caption="Scan to follow", width=180)
            _per_client_input(room)
            ask.presenter_box(room, page.url_path)
            st.button("End the room", key="classroom_end", on_click=_end)
        elif room["following"]:
            st.markdown(f"Following room **{room['id']}**: your screen shows the presenter's.")
            if room.get("viewing"):
                st.caption("You see the presenter's page as drawn; its controls are theirs.")
            st.button(
                "Take control" if room.get("viewing") else "Explore on my own",
                key="classroom_leave",
                on_click=follower_screen.set_following,
                args=(False,),
                help="Opens the full page at the presenter's settings, yours to change. "
                "**Rejoin** follows again.",
            )
        else:
            st.markdown(f"Exploring on your own (room **{room['id']}**).")
            st.button(
                "Rejoin the presenter",
                key="classroom_rejoin",
                type="primary",
                on_click=follower_screen.set_following,
                args=(True,),
            )
    if room is not None and room["role"] == "follow":
        follower_poll.watch()  # only students poll (exploring: for a new question only); everyone else pays nothing
    elif room is not None and room["role"] == "present":
        presenter_screen.publisher(
            page.url_path
        )  # before the page: it checks in every POLL_S (follower_poll), whatever the page does
