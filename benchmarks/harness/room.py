"""A presenter and its followers on a real server, timed (benchmarks/follow_load.py).

The presenter opens the Playground, presses "Start a room", reads the room id from its sidebar
and moves the L slider every ``every`` seconds, recording when it sent each change (``Shared``);
a ``fault`` may replace its tab at the middle change. Each follower opens the student link
(``?room=ID``), reads what the server sends (pushed frames, or reruns) and polls on its own timer;
its delay for one change is the time from the presenter sending it to the follower having
received the run or frame that shows it, and its timeline of shown values gives ``longest_stale``.
``Shared.cpu`` meters the server processes' CPU seconds at the first change and after the last.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from .client import SessionStats, widget_states_for
from .room_client import KEY, ROOM, RoomClient, check_ins, drain, open_tab

REFUSED = -1  # what follower() returns for a screen the room refused a seat


@dataclass
class Change:
    sent: float
    value: float


@dataclass
class Shared:
    changes: list[Change] = field(default_factory=list)
    done: bool = False
    fault_at: float | None = None  # perf_counter when the fault began
    recovered_s: float | None = None  # presenter reload: until it presents the room again
    notes: list[str] = field(default_factory=list)
    restart: asyncio.Task | None = None  # redis-kill: the pending restart
    cpu: Callable[[], float] | None = None  # the server processes' CPU seconds so far
    cpu_marks: list[float] = field(default_factory=list)  # at the first change, after the last


async def presenter(
    url: str, shared: Shared, changes: int, every: float, ready: asyncio.Future, fault
) -> None:
    try:
        await _present(url, shared, changes, every, ready, fault)
    except Exception as exc:  # followers stop waiting; the report names it
        shared.notes.append(f"presenter failed: {type(exc).__name__}: {exc}")
        if not ready.done():
            ready.set_exception(exc)
    finally:
        shared.done = True


async def _present(
    url: str, shared: Shared, changes: int, every: float, ready: asyncio.Future, fault
) -> None:
    stats = SessionStats()
    client = await open_tab(url, "playground", stats, query="in_src=random")  # the L slider shows
    start_id = next(wid for wid in client.widgets if wid.endswith("-classroom_start"))
    await client.rerun([WidgetState(id=start_id, trigger_value=True)], 60)
    room = next(m.group(1) for text in client.markdown if (m := ROOM.search(text)))
    ready.set_result(room)
    await asyncio.sleep(every)
    changed, back = widget_states_for(*client.find_widget(KEY))  # L+1 and L, alternately
    if shared.cpu is not None:
        shared.cpu_marks.append(shared.cpu())
    for i in range(changes):
        if i == changes // 2 and fault is not None:
            shared.fault_at = time.perf_counter()
            client = await fault(client, room)  # widget ids stay: they derive from key and page
        state = changed if i % 2 == 0 else back
        target = state.double_array_value.data[0]
        shared.changes.append(Change(time.perf_counter(), target))
        await client.rerun([state], 60)
        timers = [asyncio.create_task(check_ins(client)), asyncio.create_task(drain(client))]
        await asyncio.sleep(every)
        for t in timers:
            t.cancel()
        await asyncio.gather(*timers, return_exceptions=True)
    if shared.cpu is not None:
        shared.cpu_marks.append(shared.cpu())
    await client.ws.close()


async def follower(
    url: str,
    room: str,
    shared: Shared,
    delays: dict[int, list[float]],
    timelines: dict[int, list[tuple[float, float]]],
    stats: SessionStats,
    index: int,
) -> tuple[int, RoomClient | None]:
    """Follow until the presenter is done; returns how many changes this follower never saw.

    Like a browser, it reads whatever the server sends (a server that pushes reruns sends them
    unasked) and, on its own timer, asks for the polling fragment every interval."""
    client = await open_tab(url, "playground", stats, query=f"room={room}", index=index)
    if any("is full" in text for text in client.alerts):  # refused a seat: counted, not followed
        await client.ws.close()
        return REFUSED, client
    seen, mine = 0, delays.setdefault(index, [])
    timeline = timelines.setdefault(index, [(time.perf_counter(), client.value(KEY))])

    async def poll_timer() -> None:
        while True:
            await asyncio.sleep(client.interval_s)
            await client.send_poll()

    timer = asyncio.create_task(poll_timer())
    try:
        while not shared.done or seen < len(shared.changes):
            if shared.done and time.perf_counter() - shared.changes[-1].sent > 10:
                break
            try:
                async with asyncio.timeout(1):
                    fwd = ForwardMsg()
                    fwd.ParseFromString(await client.ws.recv())
            except TimeoutError:
                continue
            if not _view_shown(client, fwd):
                continue
            now, value = time.perf_counter(), client.value(KEY)
            timeline.append((now, value))
            seen = _seen_through(shared, seen, value, now, mine)
    except Exception as exc:  # record and go on: one bad session must not stop the run
        stats.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        timer.cancel()
        with contextlib.suppress(Exception):
            await client.ws.close()
    return len(shared.changes) - seen, client


def _view_shown(client: RoomClient, fwd: ForwardMsg) -> bool:
    """Read one message; whether it completes a view the follower sees: a finished run, or a frame
    sent between runs (lab_ui.classroom.change_push), whose sidebar line comes last."""
    kind = fwd.WhichOneof("type")
    if kind == "new_session":
        client.running = True
    if kind != "script_finished":
        client._read(fwd, kind)
        if client.running or not (kind == "delta" and fwd.metadata.delta_path[:1] == [1]):
            return False
        if not client.on_frame:
            return False
        client.pushed += 1
        return True
    if fwd.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
        return False
    client.running = False
    return True


def _seen_through(shared: Shared, seen: int, value: object, now: float, mine: list[float]) -> int:
    """How many of the presenter's changes the follower has seen once it shows ``value`` at ``now``
    (from ``seen`` on): a run of changes to one value is seen at once, its delay counted from the
    last of them, appended to ``mine``."""
    while seen < len(shared.changes) and value == shared.changes[seen].value:
        if seen == len(shared.changes) - 1 or shared.changes[seen + 1].value != value:
            mine.append(now - shared.changes[seen].sent)
            return seen + 1
        seen += 1
    return seen


async def warm(url: str) -> None:
    """One visit to the page, so the server has imported torch and the page before the run."""
    client = await open_tab(url, "playground", SessionStats(), query="in_src=random")
    await client.ws.close()


def longest_stale(changes: list[Change], timeline: list[tuple[float, float]]) -> float:
    """The longest stretch (s) in which this follower showed another L than the presenter's
    latest change: how long it lost the presenter's view."""
    if not changes:
        return 0.0
    events = sorted([(c.sent, "p", c.value) for c in changes] + [(t, "f", v) for t, v in timeline])
    shown = want = None
    since, worst = None, 0.0
    for t, who, value in events:
        if who == "p":
            want = value
        else:
            shown = value
        if want is not None and shown != want:
            since = t if since is None else since
        elif since is not None:
            worst, since = max(worst, t - since), None
    end = max(t for t, _, _ in events)
    return max(worst, end - since) if since is not None else worst
