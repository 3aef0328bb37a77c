"""Every use of Streamlit's internals, in one module: what the lab needs of Streamlit beyond its
public API (``import streamlit as st``, and ``streamlit.testing`` in the tests). Streamlit is
pinned (requirements.txt: streamlit==1.67.0); an upgrade re-reads this module against the new
version, and nothing else of the lab imports a ``streamlit.`` submodule (tests/test_layers.py).
Where an internal may be missing (AppTest, bare mode, another version) the function says what it
returns instead, so the classroom falls back (followers poll, the client address comes from
``st.context``) rather than failing.

What is relied on, by the module of Streamlit 1.67.0 it comes from:
- ``streamlit.proto.ForwardMsg_pb2.ForwardMsg``: the messages a run draws with (the classroom's
  frames record, copy and send them); ``streamlit.proto.ClientState_pb2.ClientState``: a
  session's last client state, copied to rerun it (`rerun_whole_app`);
- ``streamlit.runtime.forward_msg_cache.populate_hash_if_needed``: a message's content hash
  (`hash_message`);
- ``streamlit.runtime.scriptrunner_utils.script_run_context.get_script_run_ctx``: this run's
  context (`script_run_ctx`), read for its ``session_id``, ``page_script_hash``, ``enqueue`` (a
  message into this run; wrapped by `tapped_enqueue`) and ``pages_manager`` (``get_pages``, the
  ``intended_page_name`` / ``intended_page_script_hash`` of a request and ``set_script_intent``);
- ``streamlit.runtime.scriptrunner_utils.exceptions.RerunException``: what st.rerun raises;
- ``streamlit.runtime.Runtime``: the server (``exists``, ``instance``, ``is_active_session``,
  ``get_client``; private: ``_get_async_objs().eventloop``, ``_session_mgr`` and its
  ``get_active_session_info(id).session``);
- ``streamlit.runtime.app_session``: an AppSession's ``session_state``, ``request_rerun``, and
  private ``_state`` (``AppSessionState.APP_NOT_RUNNING``), ``_client_state``,
  ``_browser_queue``, ``_enqueue_forward_msg``;
- ``streamlit.runtime.state.get_session_state``: its private ``_state``, readable after st.stop;
- ``streamlit.runtime.pages_manager.PagesManager.uses_pages_directory`` (class attribute);
- ``streamlit.web.cli.main``: the ``streamlit`` command itself, run in this process by
  lab_ui/launch.py after it has imported what the pages need;
- a container's private ``_block_delta_path``, and a websocket client's peer under uvicorn
  (``get_client(id)._websocket._receive.__self__.client[0]``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime import Runtime
from streamlit.runtime.app_session import AppSessionState
from streamlit.runtime.forward_msg_cache import populate_hash_if_needed
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
from streamlit.runtime.state import get_session_state

__all__ = ["ForwardMsg", "RerunException"]  # the two names the lab uses as Streamlit defines them


def script_run_ctx() -> Any:
    """This run's ScriptRunContext, or None outside a run."""
    return get_script_run_ctx()


def hash_message(msg: ForwardMsg) -> None:
    """Fill in ``msg``'s content hash (Streamlit's, which leaves the delta path out), in place."""
    populate_hash_if_needed(msg)


@contextlib.contextmanager
def tapped_enqueue(tap: Callable[[ForwardMsg], None]) -> Iterator[bool]:
    """Inside the block, every message this run sends also goes to ``tap`` (after the browser's
    queue). Yields False, tapping nothing, where there is no run or its context has no enqueue."""
    ctx = get_script_run_ctx()
    original = getattr(ctx, "enqueue", None)
    if ctx is None or original is None:
        yield False
        return

    def enqueue(msg: ForwardMsg) -> None:
        original(msg)
        tap(msg)

    ctx.enqueue = enqueue
    try:
        yield True
    finally:
        with contextlib.suppress(AttributeError):
            del ctx.enqueue  # back to the class's method


def block_path(container: Any) -> list[int]:
    """The delta path of a container made in this run (empty where it has none)."""
    return container._block_delta_path


def leave_pages_directory_mode() -> bool:
    """Switch off Streamlit's pages-directory mode (a page file run alone, before app.py has called
    st.navigation on a fresh server); True when it was on (the caller reruns)."""
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        return True
    return False


def server_session_alive(session_id: str) -> bool:
    """Whether the server still has this session; True where there is no server to ask."""
    return not Runtime.exists() or Runtime.instance().is_active_session(session_id)


def server_loop_and_sessions() -> tuple[Any, Any] | None:
    """(event loop, session manager) of the running Streamlit server, or None (not a server:
    AppTest, bare mode; or a server without these private attributes)."""
    try:
        if not Runtime.exists():
            return None
        runtime = Runtime.instance()
        return runtime._get_async_objs().eventloop, runtime._session_mgr
    except Exception:
        return None


def rerun_whole_app(session: Any) -> None:
    """On the event loop: rerun the whole app for this AppSession, on the page it shows (its last
    client state: same page, same query string), as Streamlit's run-on-save does."""
    state = ClientState()
    state.CopyFrom(session._client_state)
    state.fragment_id = ""  # the whole app, even if its last run was the poll fragment
    state.is_auto_rerun = False
    session.request_rerun(state)


def session_idle(app_session: Any) -> bool:
    """Whether this AppSession is between runs (never between a run's deltas)."""
    return app_session._state == AppSessionState.APP_NOT_RUNNING


def send_between_runs(app_session: Any, messages: list[ForwardMsg]) -> None:
    """Send ``messages`` to this AppSession's browser with no run: queued together, one wake-up of
    the sender for the last (where the session has a browser queue)."""
    queue = getattr(app_session, "_browser_queue", None)  # one wake-up of the sender, not one each
    for msg in messages[:-1]:
        if queue is not None:
            queue.enqueue(msg)
        else:
            app_session._enqueue_forward_msg(msg)
    app_session._enqueue_forward_msg(messages[-1])


def socket_peer_host(session_id: str) -> Any:
    """The TCP peer's host of this session's websocket as uvicorn's protocol object keeps it, or
    None where it cannot be read (AppTest, another server or version)."""
    try:
        client = Runtime.instance().get_client(session_id)
        return client._websocket._receive.__self__.client[0]
    except Exception:
        return None


def session_state_store() -> Any:
    """This session's underlying state store (readable in a ``finally`` after st.stop, when
    st.session_state raises), or None where it is missing."""
    return getattr(get_session_state(), "_state", None)


def streamlit_command_line() -> int:
    """Streamlit's own command line (``streamlit run app.py …``) in this process, reading sys.argv
    as the ``streamlit`` executable does (``streamlit.web.cli.main``)."""
    from streamlit.web.cli import main

    return main()
