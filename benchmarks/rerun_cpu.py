"""Server CPU per interaction, per page: what one student's click costs the server.

For each page, one websocket session (harness/client.py) on a fresh real server changes the
page's most common control back and forth; the server process's CPU time over those reruns,
divided by their number, is the cost of one interaction. One session at a time, so nothing else
competes; the figure is CPU, not latency, and so it holds on a busy machine too.

The control goes back and forth between two values, so with the shared view cache
(lab_ui/view_cache.py) every timed rerun shows a state the server has already computed: the
cost of a follower's rerun, or of a student going back. ``--no-view-cache`` starts the server
with ATTN_LAB_VIEW_CACHE=0, so that every rerun computes its view and figures again: the cost of
an interaction that reaches a state nobody has computed yet.

Usage: .venv/bin/python benchmarks/rerun_cpu.py [--reruns 40] [--only PAGE] [--no-view-cache]
Prints one line per page: `page key: X ms CPU per interaction (N reruns)`, then the median.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

from harness.client import MAX_FRAME_BYTES, Session, SessionStats, widget_states_for  # benchmarks/harness/
from harness.meter import cpu_seconds
from harness.server import Server, serve
from websockets.asyncio.client import connect

# (url path, query string that sets the page up, user key of the control a student changes most)
INTERACTIONS = [
    ("playground", "", "in_scale"),
    ("masks", "", "mk_gL"),
    ("gradients", "", "gr_tau"),
    ("online_softmax", "", "os_step"),
    ("bench", "", "kb_causal"),
    ("costs", "", "co_causal"),
    ("one_head", "", "oh_lam"),
    ("trained_heads", "", "th_head"),
    ("hf_heads", "hf_src=demo", "hf_layer"),  # the demo model, as before the page opened on SmolLM2
]
IDLE_CPU_S_PER_S = 0.0  # an idle server's own CPU (none measurable: no file watcher, no GC)


async def measure(server: Server, page: str, query: str, key: str, reruns: int) -> float:
    """Mean CPU milliseconds of the server per rerun (one session, nothing else running).

    /proc counts CPU in 10 ms ticks, so the total over all reruns is divided, never one rerun's."""
    ws = await connect(server.ws, subprotocols=["streamlit"], max_size=MAX_FRAME_BYTES)
    try:
        session = Session(ws, page, SessionStats())
        session.query_string = query
        await session.rerun([], 120)
        changed, back = widget_states_for(*session.find_widget(key))
        fragment = session.fragments.get(changed.id, "")  # a widget in a fragment reruns only it

        async def rerun(i: int) -> None:
            await session.rerun([changed if i % 2 == 0 else back], 60, fragment_id=fragment)

        for i in range(3):  # warm up: caches, first-use imports
            await rerun(i)
        await asyncio.sleep(0.2)
        before = cpu_seconds(server.proc.pid)
        for i in range(reruns):
            await rerun(i)
        await asyncio.sleep(0.2)  # the server's post-run bookkeeping belongs to the last rerun
        idle = 0.4 * IDLE_CPU_S_PER_S
        total = cpu_seconds(server.proc.pid) - before - idle
        if session.stats.exceptions or session.stats.errors:
            raise RuntimeError(f"{page}: {session.stats.exceptions or session.stats.errors}")
        return total * 1000 / reruns
    finally:
        await ws.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reruns", type=int, default=40)
    parser.add_argument("--only", default="")
    parser.add_argument("--no-view-cache", action="store_true", help="every rerun computes its view")
    args = parser.parse_args()
    if args.no_view_cache:
        os.environ["ATTN_LAB_VIEW_CACHE"] = "0"  # the server inherits it
    medians = []
    with serve() as server:
        for page, query, key in INTERACTIONS:
            if args.only and args.only not in page:
                continue
            start = time.monotonic()
            medians.append(asyncio.run(measure(server, page, query, key, args.reruns)))
            print(
                f"{page} {key}: {medians[-1]:.1f} ms CPU per interaction "
                f"({args.reruns} reruns, {time.monotonic() - start:.0f} s)"
            )
    print(f"median over pages {statistics.median(medians):.1f} ms")
    if len(medians) == len(INTERACTIONS):  # the six pages of RESULTS.md's table
        print(f"median over the first six {statistics.median(medians[:6]):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
