"""Wake a room's followers the moment its presenter publishes, instead of at their next poll.

Each server process keeps the ids of its sessions that follow a room. When a room's version
moves (published in this process, or by another replica through Redis's pub/sub), every such
session is asked to rerun, exactly as Streamlit's own run-on-save does: `request_rerun` with the
session's last client state (same page, same query string), scheduled on the server's event
loop. Followers then cost nothing while the presenter is idle, and a change reaches them as
fast as the server can rerun them.

This reaches into Streamlit's runtime (its session manager and event loop; streamlit is pinned
in requirements.txt). Where those are missing — AppTest, another Streamlit version — `wake`
returns False and followers keep their one-second poll, so following never depends on it.
"""

from __future__ import annotations

import contextlib
import logging
import threading

_LOG = logging.getLogger(__name__)
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
    try:
        from streamlit.runtime import Runtime

        if not Runtime.exists():
            return None
        runtime = Runtime.instance()
        return runtime._get_async_objs().eventloop, runtime._session_mgr
    except Exception:  # not a server (AppTest, bare mode) or a Streamlit without these internals
        return None


def available() -> bool:
    """Whether this process can push (a running Streamlit server with the internals used here)."""
    return _runtime() is not None


def _rerun(session) -> None:
    """On the event loop: rerun the whole app for this session, on the page it shows."""
    from streamlit.proto.ClientState_pb2 import ClientState

    state = ClientState()
    state.CopyFrom(session._client_state)
    state.fragment_id = ""  # the whole app, even if its last run was the poll fragment
    state.is_auto_rerun = False
    session.request_rerun(state)


def wake(room_id: str) -> bool:
    """Ask every session of this process that follows ``room_id`` to rerun; False when this
    process cannot push (they will see the change at their next poll)."""
    found = _runtime()
    if found is None:
        return False
    loop, manager = found
    for session_id in followers(room_id):
        info = manager.get_active_session_info(session_id)
        if info is None:  # the tab was closed
            unregister(session_id)
            continue
        with contextlib.suppress(RuntimeError):  # the loop is closing: the server is stopping
            loop.call_soon_threadsafe(_rerun, info.session)
    return True
