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
import asyncio
import concurrent.futures
import contextlib
import ipaddress
import math
import os
import random
import shutil
import signal
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
from websockets.exceptions import ConnectionClosed

ROOT = Path(__file__).resolve().parents[1]
HEALTH_TIMEOUT_S = 120.0  # importing torch + streamlit on a busy 2-core machine takes ~10-40 s
CONNECT_TIMEOUT_S = 30.0
MAX_FRAME_BYTES = 64 * 2**20  # a Plotly figure is tens of KiB; the server's own cap is 200 MB
RECOVER_TIMEOUT_S = 30.0  # a student whose replica died must be served again within this
DEPLOY = ROOT / "deploy" / "serve.sh"
FIRST_SOURCE = ipaddress.IPv4Address("127.0.0.2")  # student i connects from FIRST_SOURCE + i
# One common widget change per page (--mix): user keys of controls shown at each page's defaults.
MIX = (
    ("playground", "in_scale"),
    ("masks", "mk_T"),
    ("gradients", "gr_tau"),
    ("online_softmax", "os_block"),
    ("costs", "co_T"),
)


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

    # What run_load needs of a target (Server or Stack):
    @property
    def warm_urls(self) -> list[str]:
        return [self.ws]

    def replica_pids(self) -> dict[int, int]:
        return {self.port: self.proc.pid}

    def processes(self) -> list[tuple[int, str]]:
        return [(self.proc.pid, "server")]

    def describe(self) -> str:
        return "one server"


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


@dataclass
class Stack:
    """The lecture-hall stack deploy/serve.sh started: replicas on loopback ports, nginx before them."""

    run_dir: Path
    replica_ports: list[int]
    proxy_port: int

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.proxy_port}/_stcore/stream"

    @property
    def warm_urls(self) -> list[str]:
        """Each replica directly: every one imports torch and the pages on its first run."""
        return [f"ws://127.0.0.1:{p}/_stcore/stream" for p in self.replica_ports]

    def replica_pids(self) -> dict[int, int]:
        out = {}
        for port in self.replica_ports:
            with contextlib.suppress(OSError, ValueError):
                out[port] = int((self.run_dir / f"replica-{port}.pid").read_text())
        return out

    def processes(self) -> list[tuple[int, str]]:
        master = int((self.run_dir / "nginx.pid").read_text())
        replicas = [(pid, f"replica :{port}") for port, pid in self.replica_pids().items()]
        return [*replicas, (master, "nginx"), *((w, "nginx") for w in child_pids(master))]

    def describe(self) -> str:
        return f"nginx + {len(self.replica_ports)} replicas"

    def log_tail(self, chars: int = 3000) -> str:
        logs = sorted(self.run_dir.glob("*.log"))
        return "\n".join(f"--- {p.name}\n" + p.read_text(errors="replace")[-chars:] for p in logs)


def free_port_run(n: int) -> int:
    """A port p such that p, p + 1, …, p + n − 1 are all free on loopback right now."""
    for _ in range(50):
        base = free_port()
        if base + n > 65535:
            continue
        socks = []
        try:
            for port in range(base, base + n):
                socks.append(socket.socket())
                socks[-1].bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"found no {n} consecutive free loopback ports")


@contextlib.contextmanager
def serve_stack(replicas: int) -> Iterator[Stack]:
    """Start `replicas` Streamlit processes + nginx with deploy/serve.sh (the script `make serve`
    runs) in a private run dir on free ports; yield the stack; always stop it."""
    run_dir = Path(tempfile.mkdtemp(prefix="serve_stack_"))
    base = free_port_run(replicas + 2)  # replicas, nginx, and the Redis that holds classroom rooms
    env = {k: v for k, v in os.environ.items() if k != "UPSTREAMS"}
    env.update(
        RUN_DIR=str(run_dir),
        REPLICAS=str(replicas),
        BASE_PORT=str(base),
        LISTEN=f"127.0.0.1:{base + replicas}",
        REDIS_PORT=str(base + replicas + 1),
        PYTHON=sys.executable,
        HEALTH_TIMEOUT=str(int(HEALTH_TIMEOUT_S)),
    )
    stack = Stack(run_dir, list(range(base, base + replicas)), base + replicas)
    try:
        res = subprocess.run(
            [str(DEPLOY), "start"], env=env, capture_output=True, text=True, timeout=HEALTH_TIMEOUT_S + 30
        )
        if res.returncode != 0:
            raise RuntimeError(f"deploy/serve.sh start failed:\n{res.stderr}{res.stdout}\n{stack.log_tail()}")
        yield stack
    finally:
        subprocess.run([str(DEPLOY), "stop"], env=env, capture_output=True, timeout=120, check=False)
        shutil.rmtree(run_dir, ignore_errors=True)


def child_pids(pid: int) -> list[int]:
    """Processes whose parent is `pid` (nginx's workers), from /proc/*/stat."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out.append(int(entry))
    return out


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


def machine_busy_s() -> float:
    """CPU seconds all cores have spent busy since boot (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


class Meter:
    """CPU seconds and resident memory of a fixed set of processes, sampled from /proc.

    A process that has gone (a killed replica) keeps the figures of its last sample; a zombie
    has no VmRSS and counts as gone."""

    def __init__(self, processes: list[tuple[int, str]]) -> None:
        self.labels = dict(processes)
        self.cpu0: dict[int, float] = {}
        self.last: dict[int, tuple[float, int, int]] = {}  # pid -> (CPU s, VmRSS KiB, VmHWM KiB)
        self.totals_kib: list[int] = []  # summed VmRSS of the live processes, per sample

    def sample(self) -> None:
        total = 0
        for pid in self.labels:
            try:
                cpu, (rss, hwm) = cpu_seconds(pid), rss_kib(pid)
            except (OSError, KeyError, IndexError, ValueError):
                cpu, _, hwm = self.last.get(pid, (0.0, 0, 0))
                self.last[pid] = (cpu, 0, hwm)  # gone: no resident memory; CPU and peak as last seen
                continue
            self.cpu0.setdefault(pid, cpu)
            self.last[pid] = (cpu, rss, hwm)
            total += rss
        self.totals_kib.append(total)

    def cpu_s(self, label: str | None = None) -> float:
        return sum(
            self.last[p][0] - self.cpu0[p] for p in self.cpu0 if label is None or self.labels[p] == label
        )

    def rss_now_kib(self, label: str | None = None) -> int:
        return sum(v[1] for p, v in self.last.items() if label is None or self.labels[p] == label)

    def peak_kib(self) -> int:
        """Sum of every process's own peak (VmHWM): an upper bound of the total's peak, and for one
        process exactly its peak; never below the highest sampled total."""
        return max([sum(v[2] for v in self.last.values()), *self.totals_kib])

    def per_label(self) -> dict[str, tuple[float, int]]:
        """label -> (CPU seconds, VmRSS KiB now), in first-seen order."""
        return {lab: (self.cpu_s(lab), self.rss_now_kib(lab)) for lab in dict.fromkeys(self.labels.values())}


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

    page: str = ""
    first_load_s: float | None = None
    latencies_s: list[float] = field(default_factory=list)
    finished_at: list[float] = field(default_factory=list)  # time.monotonic() at each rerun's end
    exceptions: list[str] = field(default_factory=list)  # exception deltas: "Type: message"
    errors: list[str] = field(default_factory=list)  # protocol problems, timeouts, missing widget
    metric_values: dict[str, set[str]] = field(default_factory=dict)  # st.metric label -> bodies
    disconnects: int = 0  # connections lost mid-session (a killed replica)
    recovered_after_s: list[float] = field(default_factory=list)  # connection lost → page served again
    lost: list[str] = field(default_factory=list)  # what a reconnect did not restore


class Session:
    """A websocket client that behaves like one browser tab on one page."""

    def __init__(self, ws, page: str, stats: SessionStats) -> None:
        self.ws, self.page, self.stats = ws, page, stats
        self.query_string = ""
        self.page_script_hash = ""
        self.page_shown = ""  # url path of the page the last run showed (from `navigation`)
        self.widgets: dict[str, tuple[str, object]] = {}  # widget id -> (element kind, proto)
        self.fragments: dict[str, str] = {}  # widget id -> id of the st.fragment it is in ("" if none)

    async def rerun(self, states: list[WidgetState], timeout: float, fragment_id: str = "") -> float:
        """Send one rerun_script and read until the run finishes; returns the seconds it took.

        A widget inside an st.fragment reruns only its fragment: a browser then sends the
        fragment's id, and so does this client (pass `fragment_of(widget id)`)."""
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query_string
        cs.page_script_hash = self.page_script_hash
        cs.page_name = "" if self.page_script_hash else self.page
        cs.fragment_id = fragment_id
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
                self.fragments[proto.id] = fwd.delta.fragment_id

    def fragment_of(self, widget_id: str) -> str:
        return self.fragments.get(widget_id, "")

    async def idle(self, seconds: float) -> bool:
        """Think for `seconds`; True (at once) if the connection closes meanwhile, as a browser
        notices a dead server at once and reconnects."""
        closed = asyncio.ensure_future(self.ws.wait_closed())
        try:
            done, _ = await asyncio.wait({closed}, timeout=seconds)
        finally:
            closed.cancel()
        return bool(done)

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
    mix: tuple[tuple[str, str], ...] = ()  # (page, key) per student, round robin; () = (page, key)
    kill_at_s: float | None = None  # SIGKILL one replica this many seconds in; students reconnect

    def assignment(self, index: int) -> tuple[str, str]:
        """(page, widget key) of student `index`."""
        mix = self.mix or ((self.page, self.key),)
        return mix[index % len(mix)]

    @property
    def reconnect(self) -> bool:
        return self.kill_at_s is not None


def source_address(index: int) -> str:
    """Loopback source address of student `index`: 127.0.0.2, 127.0.0.3, … (Linux answers for all
    of 127.0.0.0/8 without configuration), so that nginx sees one client address per student."""
    addr = FIRST_SOURCE + index
    if addr not in ipaddress.IPv4Network("127.0.0.0/8"):
        raise ValueError(f"student {index} would connect from {addr}, outside 127.0.0.0/8")
    return str(addr)


async def open_ws(url: str, source: str, headers: dict[str, str] | None = None):
    """``headers``: extra handshake headers (a browser's Cookie, say)."""
    async with asyncio.timeout(CONNECT_TIMEOUT_S):
        return await connect(
            url,
            subprotocols=["streamlit"],
            max_size=MAX_FRAME_BYTES,
            open_timeout=None,
            additional_headers=headers,
            local_addr=(source, 0),  # passed on to loop.create_connection: binds the source address
        )


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
        changed, back = widget_states_for(*session.find_widget(key))
        confirmed = back  # the widget's value as the server last confirmed it
        i = 0
        while True:
            think = cfg.think_s * rng.uniform(1 - cfg.jitter, 1 + cfg.jitter)
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
            await reconnect(session, url, source, cfg)
            kind, proto = session.find_widget(key)
            restored = widget_states_for(kind, proto)[1]
            if restored.SerializeToString() != expected.SerializeToString():
                stats.lost.append(
                    f"{page} {key}: had {expected}, the reload showed {restored}".replace("\n", " ")
                )
            elif expected is state:
                confirmed, i = state, i + 1
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
        f"  exception deltas {len(res.exceptions)}, errors {len(res.errors)}",
    ]
    others = res.machine_busy_s - res.server_cpu_s - res.client_cpu_s
    lines.insert(
        -1,
        f"  machine: {os.cpu_count()} cores {100 * res.machine_busy_s / res.wall_s / os.cpu_count():.0f}% busy; "
        f"processes other than this benchmark's used {100 * others / res.wall_s:.0f}% of one core",
    )
    pages = dict.fromkeys(x.page for x in res.sessions)
    if len(pages) > 1:
        per_page = {p: [t for x in res.sessions if x.page == p for t in x.latencies_s] for p in pages}
        lines.insert(
            -1,
            "  per page p50 / p95: "
            + ", ".join(
                f"{p} {1e3 * percentile(v, 50):.0f} / {1e3 * percentile(v, 95):.0f} ms"
                for p, v in per_page.items()
                if v
            ),
        )
    if len(res.per_process) > 1:
        lines.insert(
            -1,
            "  per process: "
            + "; ".join(
                f"{label} CPU {100 * cpu / res.wall_s:.0f}%, RSS {_mib(rss)}"
                for label, (cpu, rss) in res.per_process.items()
            ),
        )
    if res.killed:
        back = res.recovered_after_s
        lines.insert(
            -1,
            f"  killed {res.killed[0]} at {res.killed[1]:.1f} s: {len(res.disconnected)} students lost "
            f"their connection, {sum(bool(x.recovered_after_s) for x in res.disconnected)} served again "
            + (f"(p50 {percentile(back, 50):.2f} s, max {max(back):.2f} s after losing it)" if back else "")
            + f"; lost anything: {len(res.lost_anything)}",
        )
        cut = res.t0 + res.killed[1]
        for name, keep in (("before", lambda t: t < cut), ("after", lambda t: t >= cut)):
            lat = [
                d for x in res.sessions for d, t in zip(x.latencies_s, x.finished_at, strict=True) if keep(t)
            ]
            if lat:
                lines.insert(
                    -1,
                    f"  reruns {name} the kill {len(lat)}: p50 {1e3 * percentile(lat, 50):.0f} ms, "
                    f"p95 {1e3 * percentile(lat, 95):.0f} ms",
                )
        for x in res.lost_anything[:3]:
            lines.append(f"    lost: {x.lost[:1] or 'never served again'}")
    for problem in sorted(set(res.exceptions + res.errors))[:5]:
        lines.append(f"    {problem}")
    return "\n".join(lines)


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


def main() -> int:
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
    args = parser.parse_args()
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
            mix=mix,
            kill_at_s=args.kill_one_at,
        )
        try:
            with serve_stack(args.replicas) if args.replicas else serve() as target:
                res = run_load(target, cfg)
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
