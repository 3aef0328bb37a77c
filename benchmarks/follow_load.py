"""Do students' screens follow the presenter? N followers and one presenter on one real server.

The presenter is a websocket session (harness/client.py, the client serve_load.py drives) that
opens the Playground, presses "Start a room", reads the room id from its sidebar, and then moves the
L slider every ``--every`` seconds. Each follower opens the student link (``?room=ID``) and,
like a browser, answers the server's ``auto_rerun`` message by asking for the polling fragment
every interval; when the room's version moved, that fragment reruns the whole app, whose deltas
carry the presenter's L; where the server pushes (lab_ui.classroom.push), the rerun comes unasked, and the
poll is only a safety net. A follower's delay for one change is the time from the presenter
sending it to the follower having received the run that shows it.

Faults (``--fault``), at the middle change:
- ``presenter-reload``: the presenter's tab reloads: its websocket closes and a new one opens on
  the same address (``?room=ID``) with the browser's cookie, as a browser reload does;
- ``redis-kill`` (with ``--replicas``): the stack's Redis is killed (SIGKILL) and started again on
  its own directory ``--down`` seconds later.
Then "who lost their view, and for how long": followers told the room ended, the longest stretch
a follower showed another view than the presenter's, and how many were stale more than LAG_S
beyond the outage itself.

Usage: .venv/bin/python benchmarks/follow_load.py [--followers 40] [--changes 15] [--every 3] [--replicas N]
       [--fault presenter-reload|redis-kill] [--down 5] [--noisy-room N]

``--noisy-room N``: another room meanwhile, N followers, its presenter changing every 0.5 s (one
busy room must not delay another room's followers).
Prints `follow p50/p95/max … ms`, `refused N, missed N` (a follower the room refused a seat is
counted, not followed) and `exception deltas N, errors N`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.client import (  # benchmarks/harness/
    Session,
    SessionStats,
    open_ws,
    source_address,
    widget_states_for,
)
from harness.meter import cpu_seconds
from harness.server import serve, serve_stack
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

KEY = "in_L"
LABEL = "L (queries)"  # the slider's label: a follower shown the presenter's frame reads it as text
SETTING = re.compile(r"^(.+?): `(.*)`$")  # lab_ui.classroom.frames: a control drawn as "label: `value`"
ROOM = re.compile(r"Presenting room \*\*([a-z2-9]{6})\*\*")
# the cookie's value, as the page hands it to its cookie script (a hidden text box: "<room>.<secret>")
COOKIE = re.compile(r"^([a-z2-9]{6}\.[0-9a-f]+-[0-9a-f]+-[0-9a-f]+)$")
REFUSED = -1  # what follower() returns for a screen the room refused a seat
LAG_S = 5.0  # a follower whose view trails the presenter's by more than this has lost it


class Client(Session):
    """The harness's session (harness.client.Session) plus what following needs: markdown text,
    the polling fragment's id and the current value of the L slider."""

    def __init__(self, ws, page, stats):
        super().__init__(ws, page, stats)
        self.markdown: list[str] = []
        self.fragment_id = ""
        self.interval_s = 1.0
        self.shown: dict[str, float] = {}
        self.alerts: list[str] = []  # warnings the sidebar showed
        self.cookie = ""  # what the page's script would store in the browser
        self.settings: dict[str, str] = {}  # the presenter's controls as a frame shows them
        self.on_frame = False  # the last value came as the frame's text line, not as a widget
        self.running = False  # between a run's new_session and its script_finished
        self.pushed = 0  # frame messages received between runs (sent with no run)

    def _read(self, fwd: ForwardMsg, kind: str | None) -> None:
        if kind == "auto_rerun":
            self.fragment_id, self.interval_s = fwd.auto_rerun.fragment_id, fwd.auto_rerun.interval
            return
        super()._read(fwd, kind)
        element = fwd.delta.new_element if kind == "delta" else None
        which = element.WhichOneof("type") if element is not None else None
        if which == "markdown":
            self.markdown.append(element.markdown.body)
            if m := SETTING.match(element.markdown.body):
                self.settings[m.group(1)] = m.group(2)
                self.on_frame = m.group(1) == LABEL or self.on_frame
        elif which == "slider" and element.slider.id.endswith("-" + KEY):
            self.on_frame = False  # the page ran: the slider itself shows the value
        elif which == "alert":
            self.alerts.append(element.alert.body)
        elif which == "text" and (m := COOKIE.match(element.text.body.strip())):
            self.cookie = m.group(1)

    def value(self, key: str) -> float:
        """The widget's value as the browser would show it: a run that sets it from the server
        (set_value) moves it; a run that does not leaves the browser's value where it was. On the
        presenter's frame (no widget), the value its text line shows."""
        if self.on_frame:
            return float(self.settings[LABEL])
        _, w = self.find_widget(key)
        if w.set_value or key not in self.shown:
            self.shown[key] = (list(w.value) if w.set_value else list(w.default))[0]
        return self.shown[key]

    async def send_poll(self) -> None:
        """What the browser's run_every timer sends: a rerun of the fragment alone."""
        msg = BackMsg()
        msg.rerun_script.query_string = self.query_string
        msg.rerun_script.page_script_hash = self.page_script_hash
        msg.rerun_script.fragment_id = self.fragment_id
        msg.rerun_script.is_auto_rerun = True
        await self.ws.send(msg.SerializeToString())


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


async def _open(
    url: str, page: str, stats: SessionStats, query: str = "", index: int = 0, cookie: str = ""
) -> Client:
    """A session from its own loopback address (127.0.0.2, …), so that nginx's address hash
    spreads followers over replicas as it would spread a classroom's laptops."""
    headers = {"Cookie": f"attn_lab_presenter={cookie}"} if cookie else None
    ws = await open_ws(url, source_address(index), headers)
    client = Client(ws, page, stats)
    client.query_string = query
    await client.rerun([], 60)
    return client


async def _check_ins(client: Client) -> None:
    """The presenter's browser: its publisher fragment runs every interval (the check-in)."""
    while True:
        await asyncio.sleep(client.interval_s)
        if client.fragment_id:
            with contextlib.suppress(Exception):
                await client.send_poll()


async def _drain(client: Client) -> None:
    """Read (and keep) what the server sends between the presenter's own runs."""
    with contextlib.suppress(Exception):
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await client.ws.recv())
            kind = fwd.WhichOneof("type")
            if kind != "script_finished":
                client._read(fwd, kind)


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
    client = await _open(url, "playground", stats, query="in_src=random")  # the L slider shows
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
        timers = [asyncio.create_task(_check_ins(client)), asyncio.create_task(_drain(client))]
        await asyncio.sleep(every)
        for t in timers:
            t.cancel()
        await asyncio.gather(*timers, return_exceptions=True)
    if shared.cpu is not None:
        shared.cpu_marks.append(shared.cpu())
    await client.ws.close()


def reload_presenter(url: str, shared: Shared):
    """The presenter's tab reloads: a new connection on the same address, with its cookie."""

    async def fault(client: Client, room: str) -> Client:
        cookie, query = client.cookie, client.query_string
        await client.ws.close()
        start = time.perf_counter()
        again = await _open(url, "playground", client.stats, query=query, cookie=cookie)
        shared.recovered_s = time.perf_counter() - start
        if not any(f"Presenting room **{room}**" in text for text in again.markdown):
            shared.notes.append("the reloaded presenter does not present the room")
        return again

    return fault


def kill_redis(stack, down_s: float, shared: Shared):
    """SIGKILL the stack's Redis, and start it again on its own directory after ``down_s``."""

    async def fault(client: Client, room: str) -> Client:
        pid_file = stack.run_dir / "redis.pid"
        port = stack.proxy_port + 1  # harness.server.serve_stack: the port after nginx's
        os.kill(int(pid_file.read_text()), signal.SIGKILL)

        async def restart() -> None:  # meanwhile the presenter goes on changing the view
            await asyncio.sleep(down_s)
            again = subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                 "yes", "--dir", str(stack.run_dir)],
                stdout=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
            pid_file.write_text(str(again.pid))  # serve.sh stop ends it
            shared.notes.append(f"Redis down {down_s:g} s")

        shared.restart = asyncio.create_task(restart())
        return client

    return fault


async def follower(
    url: str,
    room: str,
    shared: Shared,
    delays: dict[int, list[float]],
    timelines: dict[int, list[tuple[float, float]]],
    stats: SessionStats,
    index: int,
) -> tuple[int, Client | None]:
    """Follow until the presenter is done; returns how many changes this follower never saw.

    Like a browser, it reads whatever the server sends (a server that pushes reruns sends them
    unasked) and, on its own timer, asks for the polling fragment every interval."""
    client = await _open(url, "playground", stats, query=f"room={room}", index=index)
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
            kind = fwd.WhichOneof("type")
            if kind == "new_session":
                client.running = True
            if kind != "script_finished":
                client._read(fwd, kind)
                # a frame sent between runs (lab_ui.classroom.push): its sidebar line comes last
                if client.running or not (kind == "delta" and fwd.metadata.delta_path[:1] == [1]):
                    continue
                if not client.on_frame:
                    continue
                client.pushed += 1
            elif fwd.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                continue
            else:
                client.running = False
            now, value = time.perf_counter(), client.value(KEY)
            timeline.append((now, value))
            while seen < len(shared.changes) and value == shared.changes[seen].value:
                if seen == len(shared.changes) - 1 or shared.changes[seen + 1].value != value:
                    mine.append(now - shared.changes[seen].sent)
                    seen += 1
                    break
                seen += 1
    except Exception as exc:  # record and go on: one bad session must not stop the run
        stats.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        timer.cancel()
        with contextlib.suppress(Exception):
            await client.ws.close()
    return len(shared.changes) - seen, client


async def _warm(url: str) -> None:
    client = await _open(url, "playground", SessionStats(), query="in_src=random")
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


NOISE_EVERY_S = 0.5  # the other room's presenter changes its view this often (a script would)


async def noise(url: str, followers: int, seconds: float, first_index: int) -> None:
    """Another room beside the measured one: its presenter changes the view every NOISE_EVERY_S
    for ``seconds``, ``followers`` screens follow it (from their own addresses)."""
    shared, ready = Shared(), asyncio.get_running_loop().create_future()
    lead = asyncio.create_task(
        presenter(url, shared, int(seconds / NOISE_EVERY_S), NOISE_EVERY_S, ready, None)
    )
    room = await asyncio.wait_for(ready, 120)
    await asyncio.gather(
        *(follower(url, room, shared, {}, {}, SessionStats(), first_index + i) for i in range(followers))
    )
    await lead


async def run(
    url: str,
    followers: int,
    changes: int,
    every: float,
    fault=None,
    shared=None,
    outage_s: float = 0.0,
    noisy: int = 0,
) -> dict:
    """``outage_s``: how long the fault itself keeps changes from anyone (Redis down): a view
    counts as lost when it stays stale LAG_S beyond that. ``noisy``: followers of another room
    whose presenter changes every NOISE_EVERY_S meanwhile (0: none)."""
    shared, ready = shared or Shared(), asyncio.get_running_loop().create_future()
    other = asyncio.create_task(noise(url, noisy, changes * every + every, followers + 1)) if noisy else None
    lead = asyncio.create_task(presenter(url, shared, changes, every, ready, fault))
    room = await asyncio.wait_for(ready, 120)
    delays: dict[int, list[float]] = {}
    stats = [SessionStats() for _ in range(followers)]
    timelines: dict[int, list[tuple[float, float]]] = {}
    got = await asyncio.gather(
        *(follower(url, room, shared, delays, timelines, s, i + 1) for i, s in enumerate(stats))
    )
    await lead
    if shared.restart is not None:
        await shared.restart
    if other is not None:
        await other
    pushed = sum(c.pushed > 0 for _, c in got if c is not None)
    refused = sum(m == REFUSED for m, _ in got)
    got = [(m, c) for m, c in got if m != REFUSED]
    alerts = [" ".join(c.alerts) if c else "" for _, c in got]
    worst = {i: longest_stale(shared.changes, t) for i, t in timelines.items()}
    return {
        "delays": [x for d in delays.values() for x in d],
        "refused": refused,
        "pushed": pushed,
        "missed": sum(m for m, _ in got),
        "exceptions": sum(len(s.exceptions) for s in stats),
        "errors": [e for s in stats for e in s.errors],
        "told_ended": sum("ended" in a for a in alerts),
        "told_unreachable": sum("cannot be reached" in a for a in alerts),
        "lagged": sum(w > LAG_S + outage_s for w in worst.values()),
        "worst_s": max(worst.values(), default=float("nan")),
        "shared": shared,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--followers", type=int, default=40)
    parser.add_argument("--changes", type=int, default=15)
    parser.add_argument("--every", type=float, default=3.0)
    parser.add_argument(
        "--replicas", type=int, default=0, help="0: one server; N: N replicas + nginx + Redis"
    )
    parser.add_argument("--fault", choices=["presenter-reload", "redis-kill"], default=None)
    parser.add_argument("--down", type=float, default=5.0, help="redis-kill: seconds before Redis restarts")
    parser.add_argument(
        "--noisy-room",
        type=int,
        default=0,
        metavar="N",
        help=f"meanwhile another room of N followers whose presenter changes every {NOISE_EVERY_S:g} s",
    )
    args = parser.parse_args()
    if args.fault == "redis-kill" and not args.replicas:
        parser.error("--fault redis-kill needs --replicas (one server keeps rooms in memory)")
    target = serve_stack(args.replicas) if args.replicas else serve()
    with target as server:
        for url in getattr(server, "warm_urls", [server.ws]):  # each replica imports torch and the page once
            asyncio.run(_warm(url))
        pids = list(server.replica_pids().values()) if args.replicas else [server.proc.pid]
        shared = Shared(cpu=lambda: sum(cpu_seconds(pid) for pid in pids))
        outage = args.down if args.fault == "redis-kill" else 0.0
        fault = {
            None: None,
            "presenter-reload": lambda: reload_presenter(server.ws, shared),
            "redis-kill": lambda: kill_redis(server, args.down, shared),
        }[args.fault]
        res = asyncio.run(
            run(
                server.ws,
                args.followers,
                args.changes,
                args.every,
                fault and fault(),
                shared,
                outage,
                args.noisy_room,
            )
        )
        cpu = shared.cpu()
    d = sorted(res["delays"])
    pct = (lambda q: d[min(len(d) - 1, int(q / 100 * len(d)))] * 1000) if d else (lambda q: float("nan"))
    where = f"{args.replicas} replicas behind nginx" if args.replicas else "one server"
    noisy = f"; beside a room of {args.noisy_room} followers changing every {NOISE_EVERY_S:g} s" * bool(
        args.noisy_room
    )
    print(f"{args.followers} followers, {args.changes} changes every {args.every:g} s, {where}{noisy}")
    print(f"follow p50 {pct(50):.0f} ms, p95 {pct(95):.0f} ms, max {pct(100):.0f} ms over {len(d)} views")
    if len(shared.cpu_marks) == 2 and args.changes:
        during = shared.cpu_marks[1] - shared.cpu_marks[0]  # the presenter's runs and check-ins too
        seated = max(1, args.followers - res["refused"])
        print(
            f"server CPU while changing {during:.2f} s: {during / args.changes * 1000:.0f} ms per change, "
            f"{during / args.changes / seated * 1000:.1f} ms per follower per change"
        )
    print(
        f"refused {res['refused']}, missed {res['missed']}; {res['pushed']} followers got frames with no run; "
        f"server CPU {cpu:.1f} s; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    if args.fault:
        back = f", presenter back after {shared.recovered_s:.2f} s" if shared.recovered_s is not None else ""
        print(f"fault {args.fault}{back}; {'; '.join(shared.notes)}")
        print(
            f"followers told the room ended {res['told_ended']}, shown 'cannot be reached' "
            f"{res['told_unreachable']}, stale > {LAG_S + outage:g} s {res['lagged']} of {args.followers}; "
            f"longest a follower showed a stale view {res['worst_s']:.2f} s"
        )
    print(f"exception deltas {res['exceptions']}, errors {len(res['errors'])}")
    for e in res["errors"][:5]:
        print("  ", e)
    lost = res["told_ended"] or res["lagged"] or any("present" in n for n in shared.notes)
    return 0 if not res["errors"] and not res["missed"] and not res["refused"] and not lost else 1


if __name__ == "__main__":
    sys.exit(main())
