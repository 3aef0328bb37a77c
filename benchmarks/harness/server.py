"""Start the app for a benchmark or a test: one Streamlit server, or the lecture-hall stack.

``serve()`` starts the lab as ``make run`` does (``python -m lab_ui.launch run app.py``) (so .streamlit/config.toml
applies) on a free loopback port and waits for /_stcore/health; ``serve_stack(n)`` runs
deploy/serve.sh (the script ``make serve`` runs): n replicas, nginx before them and the Redis that
holds classroom rooms, in a private run dir on free ports. Both stop what they started in a
``finally``, whatever happens.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from .meter import child_pids
from .ports import free_port, free_port_run

ROOT = Path(__file__).resolve().parents[2]
HEALTH_TIMEOUT_S = 120.0  # importing torch + streamlit on a busy 2-core machine takes ~10-40 s
DEPLOY = ROOT / "deploy" / "serve.sh"


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


@contextlib.contextmanager
def serve(
    port: int | None = None, app: str = "app.py", cwd: Path = ROOT, env: Mapping[str, str] | None = None
) -> Iterator[Server]:
    """Start ``app`` (the lab, unless told otherwise) from ``cwd`` with this environment plus
    ``env``, wait until /_stcore/health answers, yield it; always terminate it."""
    port = port or free_port()
    log_dir = Path(tempfile.mkdtemp(prefix="serve_load_"))
    log_path = log_dir / "server.log"
    # The lab starts as `make run` starts it: its imports first (lab_ui/launch.py); another app plainly.
    launcher = "lab_ui.launch" if app == "app.py" else "streamlit"
    cmd = [
        sys.executable,
        "-m",
        launcher,
        "run",
        app,
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
    ]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )
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
