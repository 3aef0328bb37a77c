"""Follow the presenter: a teacher starts a room, students' screens show what the projector shows.

What is shared is what lab_ui.widgets already keeps per session — the current page and every
URL-synced widget value (the ``_keep_`` keys) — and the page as the presenter's run drew it
(lab_ui.classroom.frames). The presenter's session publishes both after each run (also a run
stopped by bad input), and its screen checks in every second. A follower's screen shows the
frame: sent straight to it when the presenter changes something (lab_ui.classroom.push), or drawn
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
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Mapping
from typing import Any

import streamlit as st

from lab_ui.classroom import ask, frames, push, records, rooms
from lab_ui.widgets import KEEP_PREFIX, SCREEN_KEYS

ROOM_PARAM = "room"  # the student link's query parameter
COOKIE = "attn_lab_presenter"  # "<room id>.<secret>" in the presenter's browser
COOKIE_MAX_AGE_S = 12 * 3600  # a stale cookie is harmless: the room is checked on every use
POLL_S = 1.0  # followers' version check when the server cannot push (lab_ui.classroom.push)
SAFETY_POLL_S = 3.0  # with push, polling only guards against a lost wake-up
records.on_change(push.wake)
_ROOM = "_classroom"  # session key: {"id", "role", "secret"?, "seen", "following", "applied", ...}
_ERROR = "_classroom_error"  # a message for the next run's sidebar
_SET_COOKIE = "_classroom_cookie"  # the cookie value to write on the next run ("" clears it)
PRIVATE_KEYS = SCREEN_KEYS  # each screen keeps its own projector mode and palette
_PER_CLIENT_KEY = "classroom_per_client"  # the presenter's seats-per-address input
_COOKIE_BOX = "classroom_cookie"  # keyed container: Streamlit gives it the class st-key-<key>
UNREACHABLE = "The classroom server cannot be reached: retrying every few seconds."
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$&])")


def md_escape(text: str) -> str:
    """``text`` shown literally in Streamlit markdown: every ASCII punctuation that markdown reads
    is backslash-escaped (CommonMark), so a URL's ``[x](//e.vu)`` is no link."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _room() -> dict[str, Any] | None:
    return st.session_state.get(_ROOM)


def _cookies() -> Mapping[str, str]:
    """The browser's cookies, as sent when it opened this session's connection."""
    return st.context.cookies


TRUSTED_PROXIES_ENV = "ATTN_LAB_TRUSTED_PROXIES"  # proxy addresses whose X-Forwarded-For is believed


def client_of(peer: object, forwarded: object, trusted: frozenset[str]) -> str:
    """Who is asking, for the per-client limits: the socket's peer, unless that peer is a proxy the
    operator named (``trusted``), whose X-Forwarded-For's last entry (the address that proxy itself
    saw and appended) is the client. Anyone can send the header; only a named proxy is believed."""
    peer = peer if isinstance(peer, str) and peer else "unknown"
    if peer in trusted and isinstance(forwarded, str) and forwarded.strip():
        return forwarded.split(",")[-1].strip()[:64] or peer
    return peer


def trusted_proxies(env: Mapping[str, str] | None = None) -> frozenset[str]:
    """ATTN_LAB_TRUSTED_PROXIES: addresses separated by commas or spaces (deploy/serve.sh names
    its nginx); empty by default, so a server with no proxy in front believes no header."""
    raw = (os.environ if env is None else env).get(TRUSTED_PROXIES_ENV, "")
    return frozenset(a for a in re.split(r"[,\s]+", raw) if a)


def client_address() -> str:
    """This session's client address (client_of the socket's peer and its X-Forwarded-For)."""
    return client_of(st.context.ip_address, st.context.headers.get("X-Forwarded-For"), trusted_proxies())


def _state_after_stop():
    """This session's state, readable in a ``finally`` after the page called st.stop: from then
    on every st.session_state access raises Streamlit's StopException, its underlying store's
    does not (Streamlit's runtime internals; st.session_state where they are missing). Supports
    ``in``, ``[]`` and ``filtered_state`` (a dict of the user's keys)."""
    from streamlit.runtime.state import get_session_state

    state = getattr(get_session_state(), "_state", None)
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


def _seat() -> str:
    """This session's seat in a room (a random id kept in its state)."""
    return st.session_state.setdefault("_classroom_seat", secrets.token_hex(8))


def _leave(message: str) -> None:
    """Drop this session's room (with a message for the sidebar) and its link parameter."""
    push.unregister(_session_id())
    st.session_state[_ROOM] = None
    st.session_state[_ERROR] = message
    if ROOM_PARAM in st.query_params:
        del st.query_params[ROOM_PARAM]


def _presenter(room_id: str) -> dict[str, Any] | None:
    """The presenter's room again after a reload: this browser's cookie names this room."""
    cookie_room, _, secret = str(_cookies().get(COOKIE, "")).partition(".")
    if cookie_room != room_id or not secret:
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


def _adopt(room: dict[str, Any], page, pages_by_url: Mapping[str, Any]) -> None:
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
        _apply(values)
    room.update(version=snap.version, sent=records.encode_payload(snap.payload))
    target = snap.payload.get("page")
    if isinstance(target, str) and target != page.url_path and target in pages_by_url:
        st.switch_page(pages_by_url[target], query_params={ROOM_PARAM: room["id"]})


def _follower(room_id: str) -> dict[str, Any]:
    return {"id": room_id, "role": "follow", "seen": -1, "following": True, "applied": {}}


def _join_from_link() -> None:
    room_id = st.query_params.get(ROOM_PARAM)
    room = _room()
    if room_id is None or (room is not None and room["id"] == room_id):
        return
    shown = md_escape(repr(str(room_id)[:12]))
    if not records.valid_room_id(room_id):
        _leave(f"There is no live room {shown}: its link may have expired.")
        return
    if (presenter := _presenter(room_id)) is not None:
        st.session_state[_ROOM] = presenter  # its check-in proved the secret (or the store is down)
        return
    try:
        store = rooms.store()
        found = "live" if store.status(room_id) is not None else "ended" if store.ended(room_id) else "none"
    except records.RoomsUnavailable:
        found = "live"  # join now: the sidebar says the server is unreachable and the poll retries
    if found == "none":
        _leave(f"There is no live room {shown}: its link may have expired.")
    elif found == "ended":
        _leave(f"Room {shown} has ended: its presenter closed it.")
    else:
        st.session_state[_ROOM] = _follower(room_id)


def _sit(room: dict[str, Any]) -> records.Snapshot | None:
    """Keep this follower's seat and read the room's latest view. None when it cannot follow now:
    the store unreachable (the sidebar's poll shows it and retries), the room gone (_missing
    says so), or no seat (_leave says why)."""
    try:
        seat = rooms.store().follow(room["id"], _seat(), client_address())
        snap = rooms.store().snapshot(room["id"])
    except records.RoomsUnavailable:
        room["trouble"] = UNREACHABLE
        return None
    except records.RoomGone:
        seat, snap = records.Seat.TAKEN, None
    room["trouble"] = None
    if snap is None:
        _missing(room)
        return None
    room["missing_since"] = None
    if seat is not records.Seat.TAKEN:
        _leave(_refusal(room["id"], seat))
        return None
    room["seat_at"] = time.monotonic()
    return snap


def before_page(page, pages_by_url: Mapping[str, Any]) -> bool:
    """Call in app.py after st.navigation and before page.run(). True when it drew the
    presenter's page for a follower (lab_ui.classroom.frames): then app.py does not run the page."""
    _join_from_link()
    room = _room()
    if room is None:
        return False
    st.query_params[ROOM_PARAM] = room["id"]  # a reload keeps the room (the presenter's too)
    if room["role"] == "present":
        room["full_run"] = True  # the sidebar's publisher only checks in until the page has run
        if room.pop("adopt", False):
            _adopt(room, page, pages_by_url)
        return False
    room["viewing"] = False
    session_id = _session_id()
    if not room["following"]:
        push.unregister(session_id)
        ask.follower_box(room, _seat(), client_address())  # exploring on their own, a student still answers
        return False
    snap = _sit(room)
    if snap is None:
        return False
    push.register(room["id"], session_id)
    target = snap.payload.get("page")
    elsewhere = isinstance(target, str) and target != page.url_path and target in pages_by_url
    if snap.version == room["seen"] and elsewhere:
        # Nothing new from the presenter, yet this run shows another page: the student clicked
        # a page link. Going there is exploring on their own (bouncing them back would fight them).
        room["following"] = False
        push.unregister(session_id)
        st.toast("You opened another page, so you are exploring on your own. **Rejoin** to follow again.")
        return False
    if snap.version != room.get("applied_version"):  # a pushed frame moves "seen", not the values
        values = snap.payload.get("values", {})
        if isinstance(values, Mapping):
            _apply(values)
            room["applied"] = dict(values)
        room["applied_version"] = snap.version
    room["seen"] = snap.version
    if elsewhere:
        st.switch_page(pages_by_url[target], query_params={ROOM_PARAM: room["id"]})
    ask.follower_box(
        room, _seat(), client_address()
    )  # above the page: its own run's, so it works beside a pushed frame
    frame = _frame_for(room["id"], snap) if VIEW_FRAMES else None
    boxes = frames.show(frame) if frame is not None else None
    room.update(viewing=boxes is not None, boxes=boxes, page=page.url_path)
    return room["viewing"]


def _frame_pusher(room_id: str):
    """For lab_ui.classroom.push (off the event loop, once per change of the room): a function
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

    def put(session) -> bool:
        from streamlit.runtime.app_session import AppSessionState

        try:
            room = session.session_state[_ROOM]
        except KeyError:
            return False
        if not (
            isinstance(room, dict)
            and room.get("id") == room_id
            and room.get("role") == "follow"
            and room.get("following")
            and room.get("viewing")
            and room.get("page") == snap.payload.get("page")
            and session._state == AppSessionState.APP_NOT_RUNNING  # never between a run's deltas
        ):
            return False
        if room.get("question_tag", "") != asking:
            return False  # a new or closed question: its run draws the answer box
        if room["seen"] >= snap.version:
            return True  # already shows it
        messages = frames.replace(frame, room["boxes"])
        queue = getattr(session, "_browser_queue", None)  # one wake-up of the sender, not one each
        for msg in messages[:-1]:
            if queue is not None:
                queue.enqueue(msg)
            else:
                session._enqueue_forward_msg(msg)
        session._enqueue_forward_msg(messages[-1])
        room["seen"] = snap.version
        return True

    return put


push.set_frame_pusher(_frame_pusher)


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
        room["trouble"] = UNREACHABLE
        return
    if ended:
        _leave("The presenter has ended the room. You keep the last view.")
    elif room.get("presenter_age_s", 0.0) >= records.PRESENTER_TTL_S - _AGED_OUT_MARGIN_S:
        _leave(
            f"The presenter has not been back for {records.PRESENTER_TTL_S // 60} minutes, so the room "
            "has ended. You keep the last view."
        )
    elif room.setdefault("missing_since", None) is None:
        room["missing_since"] = time.monotonic()
    elif time.monotonic() - room["missing_since"] > records.PRESENTER_TTL_S:
        _leave("The room is gone: its presenter did not bring it back. You keep the last view.")


@contextlib.contextmanager
def recording(drawn: list):
    """Around page.run() in app.py: a presenter's run records what its page draws into ``drawn``
    (lab_ui.classroom.frames), for after_page to share; anyone else's records nothing."""
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException

    room = _room()
    if room is None or room["role"] != "present":
        yield
        return
    with frames.recording() as got:
        try:
            yield
        except RerunException:
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
    state = _state_after_stop()
    room = state[_ROOM] if _ROOM in state else None  # noqa: SIM401 (Streamlit's store has no .get)
    if room is None:
        return
    values = state.filtered_state if hasattr(state, "filtered_state") else state
    if room["role"] == "present":
        room["full_run"] = False
        if room.pop("rerunning", False):
            return  # half a page: the run that follows publishes the whole
        # no element here: after a stop, drawing one would raise
        _publish(room, page.url_path, current_values(values), drawn=drawn)
        return
    push.finished(_session_id())  # this follower's run is done: the next one may start
    if room["following"] and room["seen"] >= 0:
        now = current_values(values)
        if any(now.get(k, v) != v for k, v in room["applied"].items()):
            room["following"] = False
            st.toast("You changed a control, so you are exploring on your own. **Rejoin** to follow again.")


def _publish(
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
                room["id"], room["secret"], payload, version=room["version"] + 1, client=client_address()
            )
    except records.RoomsUnavailable:
        room["trouble"] = UNREACHABLE + " Your room is kept and re-published when it is back."
        return
    except records.RoomBusy:
        room["trouble"] = None  # checked in; `sent` stays, so the publisher's next tick sends it
        return
    except records.RoomError as err:
        _leave(f"The room has stopped: {err}.")
        st.session_state[_SET_COOKIE] = ""
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
    """Students: rerun the app only when the room's version moved or a question was asked or
    closed (a cheap check, each second where the server cannot push, every few seconds where it
    can); a student exploring on their own only for a question."""
    interval = SAFETY_POLL_S if push.available() else POLL_S
    st.fragment(_check_version, run_every=interval)()


def _check_version() -> None:
    """The follower's poll: keep its seat, notice a new version, and say what is wrong, if
    anything (server unreachable, presenter away, room missing)."""
    room = _room()
    if room is None or room["role"] != "follow":
        return
    if not room["following"]:
        _check_question(room)
        return
    try:
        status = rooms.store().status(room["id"])
        seated = status is None or _keep_seat(room)
    except records.RoomsUnavailable:
        st.warning(UNREACHABLE + " You keep the last view.", icon=":material/cloud_off:")
        room["trouble"] = UNREACHABLE
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
    try:
        status = rooms.store().status(room["id"])
    except records.RoomError:
        return
    if status is not None and status.question != room.get("question_tag", ""):
        st.rerun(scope="app")


SEAT_REFRESH_S = records.FOLLOWER_TTL_S / 3  # a poll renews its seat this often, not every poll


def _keep_seat(room: dict[str, Any]) -> bool:
    """Renew this screen's seat when it is due (a seat lasts FOLLOWER_TTL_S); whether it has one."""
    if time.monotonic() - room.get("seat_at", -SEAT_REFRESH_S) < SEAT_REFRESH_S:
        return True
    seated = rooms.store().follow(room["id"], _seat(), client_address()) is records.Seat.TAKEN
    room["seat_at"] = time.monotonic() if seated else -SEAT_REFRESH_S
    return seated


@st.fragment(run_every=POLL_S)
def _publisher(url_path: str) -> None:
    """Presenters: publish what changed in fragment-only reruns (the Online page's player steps
    its slider in a fragment, after which app.py's after_page does not run), and check in every
    second either way: a room whose presenter stops checking in ends."""
    room = _room()
    if room is not None and room["role"] == "present":
        _publish(room, url_path, current_values(), check_in_only=room.get("full_run", False))
        if (room := _room()) is not None and room.get("trouble"):
            st.warning(room["trouble"], icon=":material/cloud_off:")
        elif room is not None:
            _seats(room)
            ask.live(room)


def _seats(room: dict[str, Any]) -> None:
    """The presenter's count of followers, and how many seats one network address may hold."""
    try:
        status = rooms.store().status(room["id"])
    except records.RoomError:
        return
    if status is None:
        return
    seats = rooms.store().seats
    st.caption(
        f"**{status.followers:,}** of {seats:,} seats taken (screens seen in the last "
        f"{records.FOLLOWER_TTL_S} s); up to {status.per_client:,} per network address."
    )


def _per_client_input(room: dict[str, Any]) -> None:
    """How many seats one network address may hold: a class behind one NAT address (a campus
    network) needs it raised to the class's size."""
    if _PER_CLIENT_KEY not in st.session_state:  # a reloaded presenter starts from the room's
        try:
            status = rooms.store().status(room["id"])
        except records.RoomError:
            status = None
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
    room = _room()
    try:
        rooms.store().set_per_client(room["id"], room["secret"], int(st.session_state[_PER_CLIENT_KEY]))
    except records.RoomError as err:
        st.session_state[_ERROR] = f"Could not change the seats per address: {err}."


def _start() -> None:
    try:
        room_id, secret = rooms.store().create(client_address())
    except records.RoomError as err:
        st.session_state[_ERROR] = f"Could not start a room: {err}."
    else:
        st.session_state.pop(_PER_CLIENT_KEY, None)
        st.session_state[_ROOM] = {
            "id": room_id,
            "role": "present",
            "secret": secret,
            "version": 0,
            "sent": None,
        }
        st.session_state[_SET_COOKIE] = f"{room_id}.{secret}"


def _end() -> None:
    room = _room()
    try:
        rooms.store().close(room["id"], room["secret"])
    except records.RoomsUnavailable:
        st.session_state[_ERROR] = f"Could not end the room: {UNREACHABLE}"
        return
    except records.RoomError as err:
        st.session_state[_ERROR] = str(err)
    st.session_state[_ROOM] = None
    st.session_state[_SET_COOKIE] = ""
    if ROOM_PARAM in st.query_params:
        del st.query_params[ROOM_PARAM]


def _follow(following: bool) -> None:
    room = _room()
    room["following"] = following
    if following:
        room["seen"] = -1  # catch up at once


def _write_cookie(value: str) -> None:
    """Set (or, with "", clear) the presenter cookie in this browser. The value (a room id and
    its token, both made here) travels as plain text in a hidden box; a constant script copies it
    into the cookie, so no raw HTML is ever built from a variable."""
    with st.container(key=_COOKIE_BOX):
        st.text(value)
    st.html(  # cookie name and max-age: COOKIE and COOKIE_MAX_AGE_S
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
    if (cookie := st.session_state.pop(_SET_COOKIE, None)) is not None:
        _write_cookie(cookie)
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
                on_click=_follow,
                args=(False,),
                help="Opens the full page at the presenter's settings, yours to change. "
                "**Rejoin** follows again.",
            )
        else:
            st.markdown(f"Exploring on your own (room **{room['id']}**).")
            st.button(
                "Rejoin the presenter", key="classroom_rejoin", type="primary", on_click=_follow, args=(True,)
            )
    if room is not None and room["role"] == "follow":
        _watch()  # only students poll (exploring: for a new question only); everyone else pays nothing
    elif room is not None and room["role"] == "present":
        _publisher(page.url_path)  # before the page: it checks in every POLL_S, whatever the page does
