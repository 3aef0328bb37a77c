"""Do students' screens follow the presenter? N followers and one presenter on one real server.

The presenter is a websocket session (the same client as serve_load.py) that opens the
Playground, presses "Start a room", reads the room id from its sidebar, and then moves the
L slider every ``--every`` seconds. Each follower opens the student link (``?room=ID``) and,
like a browser, answers the server's ``auto_rerun`` message by asking for the polling fragment
every interval; when the room's version moved, that fragment reruns the whole app, whose deltas
carry the presenter's L; where the server pushes (lab_ui.push), the rerun comes unasked, and the
poll is only a safety net. A follower's delay for one change is the time from the presenter
sending it to the follower having received the run that shows it.

Usage: .venv/bin/python benchmarks/follow_load.py [--followers 60] [--changes 15] [--every 3] [--replicas N]
Prints `follow p50/p95/max … ms`, `missed N` and `exception deltas N, errors N`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import sys
import time
from dataclasses import dataclass, field

import serve_load  # a sibling script: `python benchmarks/…` puts this folder on sys.path
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

KEY = "in_L"
ROOM = re.compile(r"Presenting room \*\*([a-z2-9]{6})\*\*")


class Client(serve_load.Session):
    """serve_load's session plus what following needs: markdown text, the polling fragment's id
    and the current value of the L slider."""

    def __init__(self, ws, page, stats):
        super().__init__(ws, page, stats)
        self.markdown: list[str] = []
        self.fragment_id = ""
        self.interval_s = 1.0
        self.shown: dict[str, float] = {}

    def _read(self, fwd: ForwardMsg, kind: str | None) -> None:
        if kind == "auto_rerun":
            self.fragment_id, self.interval_s = fwd.auto_rerun.fragment_id, fwd.auto_rerun.interval
            return
        super()._read(fwd, kind)
        if kind == "delta" and fwd.delta.new_element.WhichOneof("type") == "markdown":
            self.markdown.append(fwd.delta.new_element.markdown.body)

    def value(self, key: str) -> float:
        """The widget's value as the browser would show it: a run that sets it from the server
        (set_value) moves it; a run that does not leaves the browser's value where it was."""
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


async def _open(
    url: str, page: str, stats: serve_load.SessionStats, query: str = "", index: int = 0
) -> Client:
    """A session from its own loopback address (127.0.0.2, …), so that nginx's address hash
    spreads followers over replicas as it would spread a classroom's laptops."""
    ws = await serve_load.open_ws(url, serve_load.source_address(index))
    client = Client(ws, page, stats)
    client.query_string = query
    await client.rerun([], 60)
    return client


async def presenter(url: str, shared: Shared, changes: int, every: float, ready: asyncio.Future) -> None:
    stats = serve_load.SessionStats()
    client = await _open(url, "playground", stats, query="in_src=random")  # the L slider shows
    start_id = next(wid for wid in client.widgets if wid.endswith("-classroom_start"))
    await client.rerun([WidgetState(id=start_id, trigger_value=True)], 60)
    room = next(m.group(1) for text in client.markdown if (m := ROOM.search(text)))
    ready.set_result(room)
    await asyncio.sleep(every)
    changed, back = serve_load.widget_states_for(*client.find_widget(KEY))  # L+1 and L, alternately
    for i in range(changes):
        state = changed if i % 2 == 0 else back
        target = state.double_array_value.data[0]
        shared.changes.append(Change(time.perf_counter(), target))
        await client.rerun([state], 60)
        await asyncio.sleep(every)
    shared.done = True
    await client.ws.close()


async def follower(
    url: str, room: str, shared: Shared, delays: list[float], stats: serve_load.SessionStats, index: int
) -> int:
    """Follow until the presenter is done; returns how many changes this follower never saw.

    Like a browser, it reads whatever the server sends (a server that pushes reruns sends them
    unasked) and, on its own timer, asks for the polling fragment every interval."""
    client = await _open(url, "playground", stats, query=f"room={room}", index=index)
    seen = 0

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
            if kind != "script_finished":
                client._read(fwd, kind)
                continue
            if fwd.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                continue
            now, value = time.perf_counter(), client.value(KEY)
            while seen < len(shared.changes) and value == shared.changes[seen].value:
                if seen == len(shared.changes) - 1 or shared.changes[seen + 1].value != value:
                    delays.append(now - shared.changes[seen].sent)
                    seen += 1
                    break
                seen += 1
    except Exception as exc:  # record and go on: one bad session must not stop the run
        stats.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        timer.cancel()
        with contextlib.suppress(Exception):
            await client.ws.close()
    return len(shared.changes) - seen


async def _warm(url: str) -> None:
    client = await _open(url, "playground", serve_load.SessionStats(), query="in_src=random")
    await client.ws.close()


async def run(url: str, followers: int, changes: int, every: float) -> dict:
    shared, ready = Shared(), asyncio.get_running_loop().create_future()
    lead = asyncio.create_task(presenter(url, shared, changes, every, ready))
    room = await asyncio.wait_for(ready, 120)
    delays: list[float] = []
    stats = [serve_load.SessionStats() for _ in range(followers)]
    missed = await asyncio.gather(
        *(follower(url, room, shared, delays, s, i + 1) for i, s in enumerate(stats))
    )
    await lead
    return {
        "delays": delays,
        "missed": sum(missed),
        "exceptions": sum(len(s.exceptions) for s in stats),
        "errors": [e for s in stats for e in s.errors],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--followers", type=int, default=60)
    parser.add_argument("--changes", type=int, default=15)
    parser.add_argument("--every", type=float, default=3.0)
    parser.add_argument(
        "--replicas", type=int, default=0, help="0: one server; N: N replicas + nginx + Redis"
    )
    args = parser.parse_args()
    target = serve_load.serve_stack(args.replicas) if args.replicas else serve_load.serve()
    with target as server:
        for url in getattr(server, "warm_urls", [server.ws]):  # each replica imports torch and the page once
            asyncio.run(_warm(url))
        res = asyncio.run(run(server.ws, args.followers, args.changes, args.every))
        pids = list(server.replica_pids().values()) if args.replicas else [server.proc.pid]
        cpu = sum(serve_load.cpu_seconds(pid) for pid in pids)
    d = sorted(res["delays"])
    pct = (lambda q: d[min(len(d) - 1, int(q / 100 * len(d)))] * 1000) if d else (lambda q: float("nan"))
    where = f"{args.replicas} replicas behind nginx" if args.replicas else "one server"
    print(f"{args.followers} followers, {args.changes} changes every {args.every:g} s, {where}")
    print(f"follow p50 {pct(50):.0f} ms, p95 {pct(95):.0f} ms, max {pct(100):.0f} ms over {len(d)} views")
    print(f"missed {res['missed']}; server CPU {cpu:.1f} s")
    print(f"exception deltas {res['exceptions']}, errors {len(res['errors'])}")
    for e in res["errors"][:5]:
        print("  ", e)
    return 0 if not res["errors"] and not res["missed"] else 1


if __name__ == "__main__":
    sys.exit(main())
