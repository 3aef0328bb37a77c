"""Can one server hold a classroom? N simulated students on one real `streamlit run app.py`.

Starts the app exactly as `make run` does (so .streamlit/config.toml applies) on a free loopback
port, then opens N websocket sessions the way a browser tab does: each connects to
ws://127.0.0.1:PORT/_stcore/stream (subprotocol "streamlit"), asks for a page with a `rerun_script`
BackMsg, and then, until the time is up, thinks for a while and changes one widget (found by its
user key in the deltas the page sent), like a student moving a control. Streamlit's own protobuf
classes encode and decode the messages; no browser renders anything. Like a browser, a session
sends back the query string and the page hash the last run reported (with st.navigation that is
the `navigation` message's hash: new_session's alone would rerun Home); unlike one, it sends only
the widget it changes (the server keeps the others' values in session state). A session checks
that every run showed the page it asked for and records any exception delta.

Per rerun it times the span from sending the BackMsg to receiving `script_finished` (all deltas
of that run have arrived by then) and prints p50/p95/p99, reruns/s, the server's resident memory
(VmRSS now and at its peak, from /proc) and the CPU seconds it spent. A fresh server serves each
session count. Everything is on loopback, every wait has a timeout, and the server is terminated
in a `finally` whatever happens.

With `--replicas N` it starts the lecture-hall stack instead (deploy/serve.sh: N replicas with
nginx in front, as `make serve` does) and the students connect to nginx. Each student's socket is
bound to its own loopback source address (127.0.0.2, 127.0.0.3, …; always, and inside
127.0.0.0/8), so nginx's stickiness by client address spreads them as it spreads a classroom.
CPU and RSS are then the totals of every replica and nginx, with a line per process.
`--mix` spreads the students over several pages (page:key pairs; bare `--mix` uses MIX).
`--kill-one-at S` SIGKILLs one replica S seconds in: its students reconnect as a browser does
(nginx re-hashes them onto a live replica), reload their page from its URL alone, and count as
having lost something when the restored widget differs from what the student's URL held: the
last value the server confirmed, or the change in flight if its run had already updated the URL.

Usage: .venv/bin/python benchmarks/serve_load.py [--sessions 10 30 60] [--page playground]
       [--key in_scale] [--mix [PAGE:KEY ...]] [--replicas N] [--kill-one-at S]
       [--duration 30] [--think 1.0] [--jitter 0.5] [--markdown]

Linux only (reads /proc). Record results in benchmarks/RESULTS.md with the `uptime` load average:
the load generator shares the machine's cores with the server.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from harness.load import LoadConfig, LoadResult, percentile, run_load  # benchmarks/harness/
from harness.server import serve, serve_stack

# One common widget change per page (--mix): user keys of controls shown at each page's defaults.
MIX = (
    ("playground", "in_scale"),
    ("masks", "mk_T"),
    ("gradients", "gr_tau"),
    ("online_softmax", "os_block"),
    ("costs", "co_T"),
)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _mib(kib: int) -> str:
    return f"{kib / 1024:.0f} MiB"


def _where(cfg: LoadConfig) -> str:
    if not cfg.mix:
        return f"on /{cfg.page}, changing {cfg.key!r}"
    return (
        f"on {len(cfg.mix)} pages ("
        + ", ".join(f"/{p} {k!r}" for p, k in cfg.mix)
        + "), changing one control"
    )


def report(res: LoadResult) -> str:
    """The run in a few lines: the load, the page loads and reruns, the server's memory and CPU, then
    the machine, per page, per process and the kill (where there are), exceptions and errors last."""
    s = res.summary()
    lines = [
        f"{res.config.sessions} sessions {_where(res.config)} every "
        f"{res.config.think_s:g} s ± {100 * res.config.jitter:.0f}% for {res.config.duration_s:g} s "
        f"through {res.target} (load average at the start {res.load_avg_start[0]:.2f}, "
        f"at the end {res.load_avg[0]:.2f})",
        f"  pages loaded {s['loaded']}/{s['sessions']}, first load p50 {s['first_load_p50_ms']:.0f} ms, "
        f"max {s['first_load_max_ms']:.0f} ms",
        f"  reruns {s['reruns']} ({s['reruns_per_s']:.1f}/s): p50 {s['p50_ms']:.0f} ms, "
        f"p95 {s['p95_ms']:.0f} ms, p99 {s['p99_ms']:.0f} ms, max {s['max_ms']:.0f} ms",
        f"  server RSS {_mib(res.rss_start_kib)} before, {_mib(res.rss_end_kib)} after, "
        f"peak {_mib(res.rss_peak_kib)}; server CPU {100 * s['server_cpu_share']:.0f}% of one core "
        f"({s['server_cpu_ms_per_rerun']:.1f} ms per run); load generator "
        f"{100 * s['client_cpu_share']:.0f}% of one core",
        _machine_line(res),
        *_per_page_lines(res),
        *_per_process_lines(res),
        *_kill_lines(res),
        f"  exception deltas {len(res.exceptions)}, errors {len(res.errors)}",
    ]
    lines += [f"    lost: {x.lost[:1] or 'never served again'}" for x in res.lost_anything[:3] if res.killed]
    lines += [f"    {problem}" for problem in sorted(set(res.exceptions + res.errors))[:5]]
    return "\n".join(lines)


def _machine_line(res: LoadResult) -> str:
    """The whole machine's busy share, and what processes other than this benchmark's used."""
    others = res.machine_busy_s - res.server_cpu_s - res.client_cpu_s
    return (
        f"  machine: {os.cpu_count()} cores {100 * res.machine_busy_s / res.wall_s / os.cpu_count():.0f}% busy; "
        f"processes other than this benchmark's used {100 * others / res.wall_s:.0f}% of one core"
    )


def _per_page_lines(res: LoadResult) -> list[str]:
    """p50 / p95 per page, where the students were spread over several."""
    pages = dict.fromkeys(x.page for x in res.sessions)
    if len(pages) <= 1:
        return []
    per_page = {p: [t for x in res.sessions if x.page == p for t in x.latencies_s] for p in pages}
    return [
        "  per page p50 / p95: "
        + ", ".join(
            f"{p} {1e3 * percentile(v, 50):.0f} / {1e3 * percentile(v, 95):.0f} ms"
            for p, v in per_page.items()
            if v
        )
    ]


def _per_process_lines(res: LoadResult) -> list[str]:
    """CPU and RSS per server process, where there are several (replicas, nginx)."""
    if len(res.per_process) <= 1:
        return []
    return [
        "  per process: "
        + "; ".join(
            f"{label} CPU {100 * cpu / res.wall_s:.0f}%, RSS {_mib(rss)}"
            for label, (cpu, rss) in res.per_process.items()
        )
    ]


def _kill_lines(res: LoadResult) -> list[str]:
    """Where a replica was killed: who lost the connection and came back, reruns before and after."""
    if not res.killed:
        return []
    back = res.recovered_after_s
    lines = [
        f"  killed {res.killed[0]} at {res.killed[1]:.1f} s: {len(res.disconnected)} students lost "
        f"their connection, {sum(bool(x.recovered_after_s) for x in res.disconnected)} served again "
        + (f"(p50 {percentile(back, 50):.2f} s, max {max(back):.2f} s after losing it)" if back else "")
        + f"; lost anything: {len(res.lost_anything)}"
    ]
    cut = res.t0 + res.killed[1]
    for name, keep in (("before", lambda t: t < cut), ("after", lambda t: t >= cut)):
        lat = [d for x in res.sessions for d, t in zip(x.latencies_s, x.finished_at, strict=True) if keep(t)]
        if lat:
            lines.append(
                f"  reruns {name} the kill {len(lat)}: p50 {1e3 * percentile(lat, 50):.0f} ms, "
                f"p95 {1e3 * percentile(lat, 95):.0f} ms"
            )
    return lines


def markdown_row(res: LoadResult) -> str:
    s = res.summary()
    who = f"{s['sessions']}" if res.target == "one server" else f"{s['sessions']} ({res.target})"
    return (
        f"| {who} | {res.config.think_s:g} ± {res.config.think_s * res.config.jitter:g} s "
        f"| {s['reruns']:,} | {s['reruns_per_s']:.1f} | {s['p50_ms']:.0f} | {s['p95_ms']:.0f} "
        f"| {s['p99_ms']:.0f} | {s['first_load_p50_ms']:.0f} | {100 * s['server_cpu_share']:.0f}% "
        f"| {s['server_cpu_ms_per_rerun']:.1f} | {_mib(res.rss_start_kib)} → {_mib(res.rss_end_kib)} "
        f"(peak {_mib(res.rss_peak_kib)}) | {len(res.exceptions)} / {len(res.errors)} "
        f"| {res.load_avg[0]:.2f} |"
    )


MARKDOWN_HEADER = (
    "| sessions | think time | reruns | reruns/s | p50 ms | p95 ms | p99 ms | first load p50 ms "
    "| server CPU (1 core = 100%) | CPU ms/run | server RSS | exceptions / errors | load avg (1 min) |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[30], help="one fresh server per count")
    parser.add_argument("--page", default="playground", help="url path of the page (lab_ui/nav.py)")
    parser.add_argument("--key", default="in_scale", help="user key of the widget to change")
    parser.add_argument(
        "--mix",
        nargs="*",
        metavar="PAGE:KEY",
        help="spread students over pages round robin, each changing its KEY (bare --mix: "
        + " ".join(f"{p}:{k}" for p, k in MIX)
        + ")",
    )
    parser.add_argument(
        "--replicas", type=int, default=0, help="start N replicas + nginx (deploy/serve.sh) and target nginx"
    )
    parser.add_argument(
        "--kill-one-at",
        type=float,
        default=None,
        metavar="S",
        help="SIGKILL one replica S s in (needs --replicas ≥ 2)",
    )
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load per count")
    parser.add_argument("--think", type=float, default=1.0, help="mean think time, seconds")
    parser.add_argument("--jitter", type=float, default=0.5, help="think time ± this fraction")
    parser.add_argument("--ramp", type=float, default=2.0, help="sessions open within this many s")
    parser.add_argument("--rerun-timeout", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="also print a RESULTS.md table")
    return parser


def _checked_mix(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """Refuse what the run cannot do (parser.error exits); the pages and keys of --mix."""
    if not 0 <= args.jitter < 1 or args.think <= 0 or args.duration <= 0 or min(args.sessions) < 1:
        parser.error("need think > 0, 0 ≤ jitter < 1, duration > 0 and sessions ≥ 1")
    if max(args.sessions) > 500:
        parser.error("at most 500 sessions: this is a classroom, not a stress test")
    if not 0 <= args.replicas <= 8:
        parser.error("--replicas between 0 (one plain server) and 8")
    if args.kill_one_at is not None and (args.replicas < 2 or not 0 < args.kill_one_at < args.duration):
        parser.error("--kill-one-at needs --replicas ≥ 2 and 0 < S < duration")
    mix: tuple[tuple[str, str], ...] = ()
    if args.mix is not None:
        mix = tuple(tuple(m.split(":")) for m in args.mix) if args.mix else MIX
        if not all(len(m) == 2 and all(m) for m in mix):
            parser.error("--mix takes PAGE:KEY pairs")
    return mix


def _config(args: argparse.Namespace, n: int, mix: tuple[tuple[str, str], ...]) -> LoadConfig:
    return LoadConfig(
        sessions=n,
        page=args.page,
        key=args.key,
        duration_s=args.duration,
        think_s=args.think,
        jitter=args.jitter,
        ramp_s=args.ramp,
        rerun_timeout_s=args.rerun_timeout,
        seed=args.seed,
        mix=mix,
        kill_at_s=args.kill_one_at,
    )


def main() -> int:
    """One fresh server (or stack) per session count: the report of each, the table with --markdown.
    Exit 2 when a server could not be started, 1 when a run saw an exception, error or loss."""
    parser = _parser()
    args = parser.parse_args()
    mix = _checked_mix(parser, args)
    rows = []
    failed = False
    for n in args.sessions:
        try:
            with serve_stack(args.replicas) if args.replicas else serve() as target:
                res = run_load(target, _config(args, n, mix))
        except (RuntimeError, LookupError, ValueError, TimeoutError, subprocess.SubprocessError) as exc:
            print(f"{n} sessions: {exc}", file=sys.stderr)
            return 2
        print(report(res), flush=True)
        rows.append(markdown_row(res))
        failed |= bool(res.exceptions or res.errors or res.lost_anything)
    if args.markdown:
        print()
        print(MARKDOWN_HEADER)
        print("\n".join(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
