"""Do students' screens follow the presenter? N followers and one presenter on one real server.

The presenter and the followers are harness/room.py's (their tab, harness/room_client.py, is the
client serve_load.py drives plus what following needs); this script adds the faults, a noisy
room beside the measured one, and the report. The presenter opens the Playground, presses
"Start a room", reads the room id from its sidebar, and then moves the L slider every ``--every``
seconds. Each follower opens the student link (``?room=ID``) and,
like a browser, answers the server's ``auto_rerun`` message by asking for the polling fragment
every interval; when the room's version moved, that fragment reruns the whole app, whose deltas
carry the presenter's L; where the server pushes (lab_ui.classroom.change_push), the rerun comes unasked, and the
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
import os
import signal
import subprocess
import sys
import time

from harness.client import SessionStats
from harness.meter import cpu_seconds
from harness.room import REFUSED, Shared, follower, longest_stale, presenter, warm
from harness.room_client import RoomClient, open_tab
from harness.server import serve, serve_stack

LAG_S = 5.0  # a follower whose view trails the presenter's by more than this has lost it


def reload_presenter(url: str, shared: Shared):
    """The presenter's tab reloads: a new connection on the same address, with its cookie."""

    async def fault(client: RoomClient, room: str) -> RoomClient:
        cookie, query = client.cookie, client.query_string
        await client.ws.close()
        start = time.perf_counter()
        again = await open_tab(url, "playground", client.stats, query=query, cookie=cookie)
        shared.recovered_s = time.perf_counter() - start
        if not any(f"Presenting room **{room}**" in text for text in again.markdown):
            shared.notes.append("the reloaded presenter does not present the room")
        return again

    return fault


def kill_redis(stack, down_s: float, shared: Shared):
    """SIGKILL the stack's Redis, and start it again on its own directory after ``down_s``."""

    async def fault(client: RoomClient, room: str) -> RoomClient:
        pid_file = stack.run_dir / "redis.pid"
        port = stack.proxy_port + 1  # harness.server.serve_stack: the port after nginx's
        os.kill(int(pid_file.read_text()), signal.SIGKILL)

        async def restart() -> None:  # meanwhile the presenter goes on changing the view
            await asyncio.sleep(down_s)
            again = subprocess.Popen(
                [
                    "redis-server",
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "yes",
                    "--dir",
                    str(stack.run_dir),
                ],
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
            pid_file.write_text(str(again.pid))  # serve.sh stop ends it
            shared.notes.append(f"Redis down {down_s:g} s")

        shared.restart = asyncio.create_task(restart())
        return client

    return fault


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


def _parser() -> argparse.ArgumentParser:
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
    return parser


def _follow(args: argparse.Namespace) -> tuple[dict, Shared, float]:
    """Start the server (or stack), warm it, run the room with its fault: the run's record, the
    shared marks, and the server's CPU seconds at the end."""
    target = serve_stack(args.replicas) if args.replicas else serve()
    with target as server:
        for url in getattr(server, "warm_urls", [server.ws]):  # each replica imports torch and the page once
            asyncio.run(warm(url))
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
        return res, shared, shared.cpu()


def _print_fault(args: argparse.Namespace, res: dict, shared: Shared) -> None:
    """The fault's lines: when the presenter was back, what followers were told, how stale they got."""
    outage = args.down if args.fault == "redis-kill" else 0.0
    back = f", presenter back after {shared.recovered_s:.2f} s" if shared.recovered_s is not None else ""
    print(f"fault {args.fault}{back}; {'; '.join(shared.notes)}")
    print(
        f"followers told the room ended {res['told_ended']}, shown 'cannot be reached' "
        f"{res['told_unreachable']}, stale > {LAG_S + outage:g} s {res['lagged']} of {args.followers}; "
        f"longest a follower showed a stale view {res['worst_s']:.2f} s"
    )


def _print_report(args: argparse.Namespace, res: dict, shared: Shared, cpu: float) -> None:
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
        _print_fault(args, res, shared)
    print(f"exception deltas {res['exceptions']}, errors {len(res['errors'])}")
    for e in res["errors"][:5]:
        print("  ", e)


def main() -> int:
    """One room under load (and a fault): its report; exit 1 on an error, a miss, a refusal or a loss."""
    parser = _parser()
    args = parser.parse_args()
    if args.fault == "redis-kill" and not args.replicas:
        parser.error("--fault redis-kill needs --replicas (one server keeps rooms in memory)")
    res, shared, cpu = _follow(args)
    _print_report(args, res, shared, cpu)
    lost = res["told_ended"] or res["lagged"] or any("present" in n for n in shared.notes)
    return 0 if not res["errors"] and not res["missed"] and not res["refused"] and not lost else 1


if __name__ == "__main__":
    sys.exit(main())
