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

Usage: .venv/bin/python benchmarks/serve_load.py [--sessions 10 30 60] [--page playground]
       [--key in_scale] [--duration 30] [--think 1.0] [--jitter 0.5] [--markdown]

Linux only (reads /proc). Record results in benchmarks/RESULTS.md with the `uptime` load average:
the load generator shares the machine's cores with the server.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import math
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.NumberInput_pb2 import NumberInput
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parents[1]
HEALTH_TIMEOUT_S = 120.0  # importing torch + streamlit on a busy 2-core machine takes ~10-40 s
CONNECT_TIMEOUT_S = 30.0
MAX_FRAME_BYTES = 64 * 2**20  # a Plotly figure is tens of KiB; the server's own cap is 200 MB


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


@dataclass
class Server:
    """A running `streamlit run app.py` child process on a loopback port."""

    proc: subprocess.Popen
    port: int
    log_path: Path

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}/_stcore/stream"

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(port: int | None = None) -> Iterator[Server]:
    """Start the app, wait until /_stcore/health answers, yield it; always terminate it."""
    port = port or free_port()
    log_dir = Path(tempfile.mkdtemp(prefix="serve_load_"))
    log_path = log_dir / "server.log"
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
    ]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    server = Server(proc, port, log_path)
    try:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{server.log_tail()}")
            try:
                with urllib.request.urlopen(server.http + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"no health answer in {HEALTH_TIMEOUT_S:.0f} s:\n{server.log_tail()}")
            time.sleep(0.3)
        yield server
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(15)
        shutil.rmtree(log_dir, ignore_errors=True)  # errors above already quote its tail


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB, from /proc/PID/status; HWM is the peak RSS so far."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(rest.split()[0])  # the kernel writes "NNN kB", meaning KiB
    return fields["VmRSS"], fields["VmHWM"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        after_name = f.read().rsplit(")", 1)[1].split()
    return (int(after_name[11]) + int(after_name[12])) / os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------------------------
# One simulated session
# --------------------------------------------------------------------------------------------


def widget_states_for(kind: str, w) -> tuple[WidgetState, WidgetState]:
    """Two states for a widget proto: (a value different from the current one, the current one).

    Supports the widgets a page's controls are made of: selectbox, radio, number_input, slider,
    checkbox/toggle. Values are in the form the front end sends (formatted option strings for
    selectbox/radio, numbers for the rest)."""
    other, current = WidgetState(id=w.id), WidgetState(id=w.id)
    if kind in ("selectbox", "radio"):
        options = list(w.options)
        if len(options) < 2:
            raise ValueError(f"{kind} {w.id} has fewer than two options")
        now = w.raw_value if w.set_value and w.raw_value in options else options[w.default]
        other.string_value = options[(options.index(now) + 1) % len(options)]
        current.string_value = now
    elif kind == "number_input":
        now = w.value if w.set_value else w.default
        step = w.step or 1.0
        new = now + step if not (w.has_max and now + step > w.max) else now - step
        if w.data_type == NumberInput.INT:
            other.int_value, current.int_value = int(new), int(now)
        else:
            other.double_value, current.double_value = new, now
    elif kind == "slider":
        now = list(w.value if w.set_value else w.default)
        step = w.step or 1.0
        new = [now[0] + step if now[0] + step <= w.max else now[0] - step, *now[1:]]
        other.double_array_value.data.extend(new)
        current.double_array_value.data.extend(now)
    elif kind == "checkbox":
        now = w.value if w.set_value else w.default
        other.bool_value, current.bool_value = not now, now
    else:
        raise ValueError(
            f"widget kind {kind!r} is not supported (use a selectbox, radio, number, slider or toggle)"
        )
    return other, current


@dataclass
class SessionStats:
    """What one session saw (mutable while it runs)."""

    first_load_s: float | None = None
    latencies_s: list[float] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)  # exception deltas: "Type: message"
    errors: list[str] = field(default_factory=list)  # protocol problems, timeouts, missing widget
    metric_values: dict[str, set[str]] = field(default_factory=dict)  # st.metric label -> bodies


class Session:
    """A websocket client that behaves like one browser tab on one page."""

    def __init__(self, ws, page: str, stats: SessionStats) -> None:
        self.ws, self.page, self.stats = ws, page, stats
        self.query_string = ""
        self.page_script_hash = ""
        self.page_shown = ""  # url path of the page the last run showed (from `navigation`)
        self.widgets: dict[str, tuple[str, object]] = {}  # widget id -> (element kind, proto)

    async def rerun(self, states: list[WidgetState], timeout: float) -> float:
        """Send one rerun_script and read until the run finishes; returns the seconds it took."""
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query_string
        cs.page_script_hash = self.page_script_hash
        cs.page_name = "" if self.page_script_hash else self.page
        cs.widget_states.widgets.extend(states)
        start = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        async with asyncio.timeout(timeout):
            while True:
                fwd = ForwardMsg()
                fwd.ParseFromString(await self.ws.recv())
                kind = fwd.WhichOneof("type")
                if kind == "script_finished":
                    if fwd.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                        continue  # the script called st.rerun: its next run is the answer
                    elapsed = time.perf_counter() - start
                    if fwd.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                        self.stats.errors.append("script compile error")
                    if self.page_shown != self.page:
                        self.stats.errors.append(f"asked for page {self.page!r}, got {self.page_shown!r}")
                    return elapsed
                self._read(fwd, kind)

    def _read(self, fwd: ForwardMsg, kind: str | None) -> None:
        if kind == "new_session":
            self.page_script_hash = fwd.new_session.page_script_hash
        elif kind == "navigation" and fwd.navigation.page_script_hash:
            # With st.navigation the run starts as app.py; this names the page it showed, and
            # a browser sends it back on every rerun (new_session's hash alone reruns app.py's
            # default page: Home).
            nav = fwd.navigation
            self.page_script_hash = nav.page_script_hash
            shown = [p.url_pathname for p in nav.app_pages if p.page_script_hash == nav.page_script_hash]
            self.page_shown = shown[0] if shown else "?"
        elif kind == "page_info_changed":
            self.query_string = fwd.page_info_changed.query_string
        elif kind == "page_not_found":
            self.stats.errors.append(f"page not found (asked for {self.page!r})")
        elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
            el = fwd.delta.new_element
            el_kind = el.WhichOneof("type")
            if el_kind is None:
                return
            proto = getattr(el, el_kind)
            if el_kind == "exception":
                self.stats.exceptions.append(f"{proto.type}: {proto.message}")
            elif el_kind == "metric":
                self.stats.metric_values.setdefault(proto.label, set()).add(proto.body)
            elif getattr(proto, "id", ""):
                self.widgets[proto.id] = (el_kind, proto)

    def find_widget(self, key: str) -> tuple[str, object]:
        """The widget whose id carries the user key (Streamlit ids end with "-<key>")."""
        hits = [v for wid, v in self.widgets.items() if wid.endswith("-" + key)]
        if len(hits) != 1:
            raise LookupError(f"{len(hits)} widgets with key {key!r} on page {self.page!r}")
        return hits[0]


@dataclass(frozen=True)
class LoadConfig:
    sessions: int = 30
    page: str = "playground"  # url path of the page, as in lab_ui/nav.py
    key: str = "in_scale"  # user key of the widget each session keeps changing
    duration_s: float = 30.0
    think_s: float = 1.0  # mean think time between a run's end and the next change
    jitter: float = 0.5  # think time is uniform in think_s · [1 − jitter, 1 + jitter]
    ramp_s: float = 2.0  # sessions open at uniform random times within the first ramp_s
    rerun_timeout_s: float = 60.0  # a rerun slower than this ends its session with an error
    seed: int = 0


async def run_session(url: str, cfg: LoadConfig, index: int, deadline: float) -> SessionStats:
    """Open one session, load the page, then change the widget until the deadline."""
    stats = SessionStats()
    rng = random.Random(cfg.seed * 100_003 + index)
    await asyncio.sleep(rng.uniform(0, cfg.ramp_s))
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            ws = await connect(url, subprotocols=["streamlit"], max_size=MAX_FRAME_BYTES, open_timeout=None)
    except Exception as exc:  # refused, timed out, or a handshake the server rejected (403)
        stats.errors.append(f"connect failed: {exc!r}")
        return stats
    try:
        session = Session(ws, cfg.page, stats)
        stats.first_load_s = await session.rerun([], cfg.rerun_timeout_s)
        changed, back = widget_states_for(*session.find_widget(cfg.key))
        i = 0
        while True:
            think = cfg.think_s * rng.uniform(1 - cfg.jitter, 1 + cfg.jitter)
            if time.monotonic() + think >= deadline:
                break
            await asyncio.sleep(think)
            stats.latencies_s.append(
                await session.rerun([changed if i % 2 == 0 else back], cfg.rerun_timeout_s)
            )
            i += 1
    except TimeoutError:
        stats.errors.append(f"no script_finished within {cfg.rerun_timeout_s:.0f} s")
    except (LookupError, ValueError, OSError) as exc:
        stats.errors.append(repr(exc))
    except Exception as exc:  # websockets.ConnectionClosed and friends: record, never hang
        stats.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                await ws.close()
    return stats


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class LoadResult:
    config: LoadConfig
    wall_s: float
    sessions: tuple[SessionStats, ...]
    server_cpu_s: float
    client_cpu_s: float
    rss_start_kib: int  # after a warm-up page load, before the sessions open
    rss_end_kib: int
    rss_peak_kib: int  # VmHWM at the end: the highest resident set the server ever had
    load_avg: tuple[float, float, float]

    @property
    def latencies_s(self) -> list[float]:
        return [t for s in self.sessions for t in s.latencies_s]

    @property
    def first_loads_s(self) -> list[float]:
        return [s.first_load_s for s in self.sessions if s.first_load_s is not None]

    @property
    def reruns(self) -> int:
        return len(self.latencies_s)

    @property
    def exceptions(self) -> list[str]:
        return [e for s in self.sessions for e in s.exceptions]

    @property
    def errors(self) -> list[str]:
        return [e for s in self.sessions for e in s.errors]

    def summary(self) -> dict[str, float]:
        lat, first = self.latencies_s, self.first_loads_s
        out = {
            "sessions": self.config.sessions,
            "loaded": len(first),
            "reruns": self.reruns,
            "reruns_per_s": self.reruns / self.wall_s,
            "server_cpu_ms_per_rerun": 1e3 * self.server_cpu_s / max(1, self.reruns + len(first)),
            "server_cpu_share": self.server_cpu_s / self.wall_s,  # 1.0 = one core fully busy
            "client_cpu_share": self.client_cpu_s / self.wall_s,
        }
        for q in (50, 95, 99):
            out[f"p{q}_ms"] = 1e3 * percentile(lat, q) if lat else float("nan")
        out["max_ms"] = 1e3 * max(lat) if lat else float("nan")
        out["first_load_p50_ms"] = 1e3 * percentile(first, 50) if first else float("nan")
        out["first_load_max_ms"] = 1e3 * max(first) if first else float("nan")
        return out


async def _warm_up(url: str, cfg: LoadConfig) -> None:
    """One page load before timing: the first run in a fresh server imports torch, plotly, pages."""
    stats = SessionStats()
    async with asyncio.timeout(cfg.rerun_timeout_s + CONNECT_TIMEOUT_S):
        async with connect(url, subprotocols=["streamlit"], max_size=MAX_FRAME_BYTES) as ws:
            session = Session(ws, cfg.page, stats)
            await session.rerun([], cfg.rerun_timeout_s)
            if stats.errors or stats.exceptions:
                raise RuntimeError(f"warm-up load of {cfg.page!r} failed: {stats.errors + stats.exceptions}")
            session.find_widget(cfg.key)  # fail early, with a clear message, on a wrong key


async def _sample_rss(pid: int, until: float, out: list[int]) -> None:
    while time.monotonic() < until:
        out.append(rss_kib(pid)[0])
        await asyncio.sleep(0.5)


async def run_load_async(server: Server, cfg: LoadConfig) -> LoadResult:
    await _warm_up(server.ws, cfg)
    pid = server.proc.pid
    rss_start = rss_kib(pid)[0]
    cpu0, client0 = cpu_seconds(pid), time.process_time()
    t0 = time.monotonic()
    deadline = t0 + cfg.duration_s
    samples: list[int] = []
    sampler = asyncio.create_task(_sample_rss(pid, deadline, samples))
    tasks = [run_session(server.ws, cfg, i, deadline) for i in range(cfg.sessions)]
    # Bounded: each session stops starting reruns at the deadline, and one rerun is capped.
    hard_cap = cfg.duration_s + cfg.ramp_s + CONNECT_TIMEOUT_S + cfg.rerun_timeout_s + 30
    async with asyncio.timeout(hard_cap):
        stats = await asyncio.gather(*tasks)
    wall = time.monotonic() - t0
    sampler.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await sampler
    cpu = cpu_seconds(pid) - cpu0
    rss_end, hwm = rss_kib(pid)
    return LoadResult(
        cfg,
        wall,
        tuple(stats),
        cpu,
        time.process_time() - client0,
        rss_start,
        rss_end,
        max([hwm, *samples]),
        os.getloadavg(),
    )


def run_load(server: Server, cfg: LoadConfig) -> LoadResult:
    """Drive `cfg.sessions` simulated students against a running server (blocking).

    The event loop runs in a worker thread, so this also works from a thread that already has a
    running loop (pytest after Playwright's sync API, which keeps one in the main thread)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run_load_async(server, cfg)).result()


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _mib(kib: int) -> str:
    return f"{kib / 1024:.0f} MiB"


def report(res: LoadResult) -> str:
    s = res.summary()
    lines = [
        f"{res.config.sessions} sessions on /{res.config.page}, changing {res.config.key!r} every "
        f"{res.config.think_s:g} s ± {100 * res.config.jitter:.0f}% for {res.config.duration_s:g} s "
        f"(load average at the end {res.load_avg[0]:.2f})",
        f"  pages loaded {s['loaded']}/{s['sessions']}, first load p50 {s['first_load_p50_ms']:.0f} ms, "
        f"max {s['first_load_max_ms']:.0f} ms",
        f"  reruns {s['reruns']} ({s['reruns_per_s']:.1f}/s): p50 {s['p50_ms']:.0f} ms, "
        f"p95 {s['p95_ms']:.0f} ms, p99 {s['p99_ms']:.0f} ms, max {s['max_ms']:.0f} ms",
        f"  server RSS {_mib(res.rss_start_kib)} before, {_mib(res.rss_end_kib)} after, "
        f"peak {_mib(res.rss_peak_kib)}; server CPU {100 * s['server_cpu_share']:.0f}% of one core "
        f"({s['server_cpu_ms_per_rerun']:.1f} ms per run); load generator "
        f"{100 * s['client_cpu_share']:.0f}% of one core",
        f"  exception deltas {len(res.exceptions)}, errors {len(res.errors)}",
    ]
    for problem in sorted(set(res.exceptions + res.errors))[:5]:
        lines.append(f"    {problem}")
    return "\n".join(lines)


def markdown_row(res: LoadResult) -> str:
    s = res.summary()
    return (
        f"| {s['sessions']} | {res.config.think_s:g} ± {res.config.think_s * res.config.jitter:g} s "
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[30], help="one fresh server per count")
    parser.add_argument("--page", default="playground", help="url path of the page (lab_ui/nav.py)")
    parser.add_argument("--key", default="in_scale", help="user key of the widget to change")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load per count")
    parser.add_argument("--think", type=float, default=1.0, help="mean think time, seconds")
    parser.add_argument("--jitter", type=float, default=0.5, help="think time ± this fraction")
    parser.add_argument("--ramp", type=float, default=2.0, help="sessions open within this many s")
    parser.add_argument("--rerun-timeout", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", action="store_true", help="also print a RESULTS.md table")
    args = parser.parse_args()
    if not 0 <= args.jitter < 1 or args.think <= 0 or args.duration <= 0 or min(args.sessions) < 1:
        parser.error("need think > 0, 0 ≤ jitter < 1, duration > 0 and sessions ≥ 1")
    if max(args.sessions) > 500:
        parser.error("at most 500 sessions: this is a classroom, not a stress test")
    rows = []
    failed = False
    for n in args.sessions:
        cfg = LoadConfig(
            sessions=n,
            page=args.page,
            key=args.key,
            duration_s=args.duration,
            think_s=args.think,
            jitter=args.jitter,
            ramp_s=args.ramp,
            rerun_timeout_s=args.rerun_timeout,
            seed=args.seed,
        )
        try:
            with serve() as server:
                res = run_load(server, cfg)
        except (RuntimeError, LookupError, ValueError, TimeoutError) as exc:
            print(f"{n} sessions: {exc}", file=sys.stderr)
            return 2
        print(report(res), flush=True)
        rows.append(markdown_row(res))
        failed |= bool(res.exceptions or res.errors)
    if args.markdown:
        print()
        print(MARKDOWN_HEADER)
        print("\n".join(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
