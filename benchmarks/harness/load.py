"""N simulated students on one real server or on the lecture-hall stack (benchmarks/serve_load.py).

Each student is a ``client.Session`` from its own loopback source address that loads a page and
then, until the time is up, thinks and changes one widget; a run is timed from sending the
BackMsg to ``script_finished``. ``run_load`` returns a LoadResult with every session's figures and
the target's CPU and memory (``meter.Meter``); with ``kill_at_s`` one replica is SIGKILLed and
its students reconnect as a browser does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import math
import os
import random
import signal
import time
from dataclasses import dataclass, field

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from .client import (
    CONNECT_TIMEOUT_S,
    MAX_FRAME_BYTES,
    Session,
    SessionStats,
    open_ws,
    source_address,
    widget_states_for,
)
from .meter import Meter, machine_busy_s
from .server import Server, Stack

RECOVER_TIMEOUT_S = 30.0  # a student whose replica died must be served again within this


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
    mix: tuple[tuple[str, str], ...] = ()  # (page, key) per student, round robin; () = (page, key)
    kill_at_s: float | None = None  # SIGKILL one replica this many seconds in; students reconnect

    def assignment(self, index: int) -> tuple[str, str]:
        """(page, widget key) of student `index`."""
        mix = self.mix or ((self.page, self.key),)
        return mix[index % len(mix)]

    @property
    def reconnect(self) -> bool:
        return self.kill_at_s is not None


async def reconnect(session: Session, url: str, source: str, cfg: LoadConfig) -> None:
    """The browser's move when its server goes away: reconnect (nginx sends it to a live replica)
    and load the page from its URL alone (query string + page), as a reload does."""
    stats, lost_at = session.stats, time.monotonic()
    stats.disconnects += 1
    with contextlib.suppress(Exception):
        async with asyncio.timeout(2):
            await session.ws.close()
    while True:
        try:
            session.ws = await open_ws(url, source)
            break
        except Exception:  # refused while nginx still tries the dead replica, or a timeout
            if time.monotonic() - lost_at > RECOVER_TIMEOUT_S:
                raise
            await asyncio.sleep(0.25)
    session.widgets.clear()
    session.fragments.clear()
    await session.rerun([], cfg.rerun_timeout_s)
    stats.recovered_after_s.append(time.monotonic() - lost_at)


@dataclass
class _Student:
    """One session's student: the connection, where it connects from, what it changes, its dice."""

    session: Session
    url: str
    source: str
    cfg: LoadConfig
    key: str
    rng: random.Random


async def run_session(url: str, cfg: LoadConfig, index: int, deadline: float) -> SessionStats:
    """Open one session, load the page, then change the widget until the deadline.

    With cfg.reconnect a lost connection is not an error: the student reconnects, and what the
    reloaded page shows is compared with the last state the server confirmed."""
    page, key = cfg.assignment(index)
    stats = SessionStats(page)
    rng = random.Random(cfg.seed * 100_003 + index)
    source = source_address(index)
    await asyncio.sleep(rng.uniform(0, cfg.ramp_s))
    try:
        ws = await open_ws(url, source)
    except Exception as exc:  # refused, timed out, or a handshake the server rejected (403)
        stats.errors.append(f"connect failed: {exc!r}")
        return stats
    session = Session(ws, page, stats)
    try:
        stats.first_load_s = await session.rerun([], cfg.rerun_timeout_s)
        await _change_until(_Student(session, url, source, cfg, key, rng), deadline)
    except TimeoutError:
        stats.errors.append(f"no script_finished within {cfg.rerun_timeout_s:.0f} s")
    except (LookupError, ValueError, OSError) as exc:
        stats.errors.append(repr(exc))
    except Exception as exc:  # websockets.ConnectionClosed and friends: record, never hang
        stats.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                await session.ws.close()
    return stats


async def _change_until(st: _Student, deadline: float) -> None:
    """Think, change the widget (to its changed value, then back, in turn), until the deadline; a
    lost connection reconnects (cfg.reconnect) or raises."""
    session, cfg, stats = st.session, st.cfg, st.session.stats
    changed, back = widget_states_for(*session.find_widget(st.key))
    confirmed = back  # the widget's value as the server last confirmed it
    i = 0
    while True:
        think = cfg.think_s * st.rng.uniform(1 - cfg.jitter, 1 + cfg.jitter)
        if time.monotonic() + think >= deadline:
            break
        closed = await session.idle(think)
        state = changed if i % 2 == 0 else back  # the change the student makes next
        url_before = session.query_string
        if not closed:
            try:
                took = await session.rerun([state], cfg.rerun_timeout_s, session.fragment_of(state.id))
            except (ConnectionClosed, OSError):
                if not cfg.reconnect:
                    raise
            else:
                stats.latencies_s.append(took)
                stats.finished_at.append(time.monotonic())
                confirmed, i = state, i + 1
                continue
        if not cfg.reconnect:
            raise ConnectionError("the server closed the connection")
        # If the run of the change in flight had already put it in the URL (page_info_changed
        # arrived before the replica died), the browser's address bar shows it: the reload
        # must too. Otherwise the reload must show the last confirmed value, and the change is
        # sent again next, as a browser resends its widget states.
        expected = state if session.query_string != url_before else confirmed
        if await _reload_shows(st, expected) and expected is state:
            confirmed, i = state, i + 1


async def _reload_shows(st: _Student, expected) -> bool:
    """Reconnect and reload the page: whether it shows ``expected`` (else the loss is recorded)."""
    await reconnect(st.session, st.url, st.source, st.cfg)
    kind, proto = st.session.find_widget(st.key)
    restored = widget_states_for(kind, proto)[1]
    if restored.SerializeToString() != expected.SerializeToString():
        st.session.stats.lost.append(
            f"{st.session.page} {st.key}: had {expected}, the reload showed {restored}".replace("\n", " ")
        )
        return False
    return True


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
    # Several processes (--replicas): CPU s and RSS are totals; this splits them, label -> (CPU s,
    # VmRSS KiB at the end). One server: {"server": ...}.
    per_process: dict[str, tuple[float, int]] = field(default_factory=dict)
    target: str = "one server"
    load_avg_start: tuple[float, float, float] = (float("nan"),) * 3
    killed: tuple[str, float] | None = None  # (which replica, seconds into the run) with --kill-one-at
    t0: float = 0.0  # time.monotonic() when the students started
    machine_busy_s: float = float("nan")  # CPU seconds the whole machine spent (/proc/stat), all cores

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

    @property
    def disconnected(self) -> list[SessionStats]:
        return [s for s in self.sessions if s.disconnects]

    @property
    def lost_anything(self) -> list[SessionStats]:
        """Students who lost a confirmed widget value or were never served again."""
        return [s for s in self.sessions if s.lost or len(s.recovered_after_s) < s.disconnects]

    @property
    def recovered_after_s(self) -> list[float]:
        return [t for s in self.sessions for t in s.recovered_after_s]

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
    """One load of every page in the mix before timing: the first run in a fresh server imports
    torch, plotly and the page."""
    for page, key in dict.fromkeys(cfg.assignment(i) for i in range(max(1, len(cfg.mix)))):
        stats = SessionStats()
        async with asyncio.timeout(cfg.rerun_timeout_s + CONNECT_TIMEOUT_S):
            async with connect(url, subprotocols=["streamlit"], max_size=MAX_FRAME_BYTES) as ws:
                session = Session(ws, page, stats)
                await session.rerun([], cfg.rerun_timeout_s)
                if stats.errors or stats.exceptions:
                    raise RuntimeError(f"warm-up load of {page!r} failed: {stats.errors + stats.exceptions}")
                session.find_widget(key)  # fail early, with a clear message, on a wrong key


async def _sample(meter: Meter, until: float) -> None:
    while time.monotonic() < until:
        meter.sample()
        await asyncio.sleep(0.5)


async def _kill_one(target, at: float, out: list[tuple[str, float]], t0: float) -> None:
    """SIGKILL the first replica at monotonic time `at` (no goodbye: as a crash or an OOM kill)."""
    await asyncio.sleep(max(0.0, at - time.monotonic()))
    port, pid = min(target.replica_pids().items())
    os.kill(pid, signal.SIGKILL)
    out.append((f"replica :{port}", time.monotonic() - t0))


async def run_load_async(target: Server | Stack, cfg: LoadConfig) -> LoadResult:
    for url in target.warm_urls:
        await _warm_up(url, cfg)
    meter = Meter(target.processes())
    meter.sample()
    rss_start = meter.rss_now_kib()
    client0, load0, busy0 = time.process_time(), os.getloadavg(), machine_busy_s()
    t0 = time.monotonic()
    deadline = t0 + cfg.duration_s
    sampler = asyncio.create_task(_sample(meter, deadline))
    killed: list[tuple[str, float]] = []
    killer = asyncio.create_task(_kill_one(target, t0 + cfg.kill_at_s, killed, t0)) if cfg.reconnect else None
    tasks = [run_session(target.ws, cfg, i, deadline) for i in range(cfg.sessions)]
    # Bounded: each session stops starting reruns at the deadline, and one rerun is capped.
    hard_cap = cfg.duration_s + cfg.ramp_s + CONNECT_TIMEOUT_S + cfg.rerun_timeout_s + RECOVER_TIMEOUT_S + 30
    try:
        async with asyncio.timeout(hard_cap):
            stats = await asyncio.gather(*tasks)
    finally:
        wall = time.monotonic() - t0
        for task in (sampler, killer):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    meter.sample()
    return LoadResult(
        cfg,
        wall,
        tuple(stats),
        meter.cpu_s(),
        time.process_time() - client0,
        rss_start,
        meter.rss_now_kib(),
        meter.peak_kib(),
        os.getloadavg(),
        per_process=meter.per_label(),
        target=target.describe(),
        load_avg_start=load0,
        t0=t0,
        machine_busy_s=machine_busy_s() - busy0,
        killed=killed[0] if killed else None,
    )


def run_load(server: Server | Stack, cfg: LoadConfig) -> LoadResult:
    """Drive `cfg.sessions` simulated students against a running server or stack (blocking).

    The event loop runs in a worker thread, so this also works from a thread that already has a
    running loop (pytest after Playwright's sync API, which keeps one in the main thread)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run_load_async(server, cfg)).result()
