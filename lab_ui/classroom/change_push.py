"""Bring a room's followers up to date the moment its presenter publishes, not at their next poll.

Each server process keeps the ids of its sessions that follow a room. When a room's version
moves (published in this process, or by another replica through Redis's pub/sub), the room's new
frame (lab_ui.classroom.frames) is sent straight to every such session whose screen shows the
room's last frame on the same page: messages only, no run. Every other one is asked to rerun,
exactly as Streamlit's own run-on-save does: `request_rerun` with the session's last client state
(same page, same query string), on the server's event loop, one follower after another, the
rooms taking turns. Followers then cost nothing while the presenter is idle, and a change reaches
them as fast as the server can send it.

This reaches into Streamlit's runtime (its session manager and event loop, through
lab_ui.st_internals; streamlit is pinned in requirements.txt). Where those are missing — AppTest,
another Streamlit version — `wake` returns False and followers keep their one-second poll, so
following never depends on it.
"""

from __future__ import annotations

import collections
import contextlib
import threading

from lab_ui import st_internals

_followers: dict[str, set[str]] = {}  # room id -> ids of this process's sessions following it
_lock = threading.Lock()


def register(room_id: str, session_id: str) -> None:
    with _lock:
        for sessions in _followers.values():
            sessions.discard(session_id)  # one room per session
        _followers.setdefault(room_id, set()).add(session_id)


def unregister(session_id: str) -> None:
    with _lock:
        for room_id in [r for r, s in _followers.items() if session_id in s]:
            _followers[room_id].discard(session_id)
            if not _followers[room_id]:
                del _followers[room_id]


def followers(room_id: str) -> set[str]:
    with _lock:
        return set(_followers.get(room_id, ()))


def _runtime():
    """(event loop, session manager) of the running Streamlit server, or None."""
    return st_internals.server_loop_and_sessions()


def available() -> bool:
    """Whether this process can push (a running Streamlit server with the internals used here)."""
    return _runtime() is not None


def _rerun(session) -> None:
    """On the event loop: rerun the whole app for this session, on the page it shows."""
    st_internals.rerun_whole_app(session)


_frame_pusher: list = [None]  # room id -> (session -> bool) | None, from lab_ui.classroom.app_hooks


def set_frame_pusher(make) -> None:
    """``make(room_id)``, called off the event loop once per change of a room, returns None or a
    function that shows the change on one session without a run (True) or declines (False)."""
    _frame_pusher[0] = make


def wake(room_id: str) -> bool:
    """Bring every session of this process that follows ``room_id`` up to date: its new frame sent
    straight to the screen where it can be, else a rerun queued; False when this process cannot
    push (they will see the change at their next poll)."""
    found = _runtime()
    if found is None:
        return False
    loop, manager = found
    sessions = sorted(followers(room_id))
    put = None
    if sessions and _frame_pusher[0] is not None:
        try:
            put = _frame_pusher[0](room_id)
        except Exception:  # a frame that cannot be sent is a rerun, never a lost change
            put = None
    with contextlib.suppress(RuntimeError):  # the loop is closing: the server is stopping
        loop.call_soon_threadsafe(_enqueue, loop, manager, room_id, sessions, put)
    return True


# One follower rerun at a time. Started all at once, 60 reruns fight over the GIL, each takes
# several times longer and the backlog never drains (measured: p50 17 s for 60 followers on one
# server, changes every 3 s). Back to back, and fair between rooms: each room with followers
# waiting gets one rerun per turn, so a room whose presenter changes the view twice a second
# for its 40 followers delays another room's followers by one rerun each, not by 40.
_queues: dict[str, dict[str, None]] = {}  # room id -> its sessions waiting, in order (loop only)
_turns: collections.deque[str] = collections.deque()  # rooms with someone waiting, in turn order
_running: list[str | None] = [None]  # the session whose pushed rerun is in flight
STALL_S = 0.5  # a rerun that has not reported back by then (a closed tab, an error) is passed over


def _enqueue(loop, manager, room_id: str, session_ids: list[str], put=None) -> None:
    """On the event loop: show the change to each session ``put`` takes (at once, no run), and
    queue a rerun for the others."""
    waiting = _queues.setdefault(room_id, {})
    for session_id in session_ids:
        if put is not None and (info := manager.get_active_session_info(session_id)) is not None:
            try:
                if put(info.session):
                    continue
            except Exception:  # a frame that cannot be sent is a rerun, never a lost change
                pass
        if session_id != _running[0]:
            waiting.setdefault(session_id, None)
    if waiting and room_id not in _turns:
        _turns.append(room_id)
    if _running[0] is None:
        _next(loop, manager)


def _pop_next() -> str | None:
    """The next session to rerun: the first waiting one of the room whose turn it is."""
    while _turns:
        room_id = _turns.popleft()
        waiting = _queues.get(room_id)
        if not waiting:
            _queues.pop(room_id, None)
            continue
        session_id = next(iter(waiting))
        del waiting[session_id]
        if waiting:
            _turns.append(room_id)  # its next follower waits for every other room's turn
        else:
            del _queues[room_id]
        return session_id
    return None


def _next(loop, manager) -> None:
    """On the event loop: start the next queued follower's rerun."""
    _running[0] = None
    while (session_id := _pop_next()) is not None:
        info = manager.get_active_session_info(session_id)
        if info is None:  # the tab was closed
            unregister(session_id)
            continue
        _running[0] = session_id
        _rerun(info.session)
        loop.call_later(STALL_S, _stalled, loop, manager, session_id)
        return


def _stalled(loop, manager, session_id: str) -> None:
    if _running[0] == session_id:
        _next(loop, manager)


def finished(session_id: str) -> None:
    """Call at the end of a follower's run (any thread): the next queued follower may start."""
    found = _runtime()
    if found is None:
        return
    loop, manager = found

    def advance() -> None:
        if _running[0] == session_id:
            _next(loop, manager)

    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(advance)
