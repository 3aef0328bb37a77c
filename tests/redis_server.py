"""A real redis-server on a free loopback port that a test can stop, kill and restart (Debian's
package; `make test` installs it). Shared by the room, classroom and deploy tests."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from harness.ports import free_port  # benchmarks/harness/ (pytest's pythonpath)


class RedisServer:
    """``persist``: append-only file on (as deploy/serve.sh runs it), so a restart keeps rooms."""

    def __init__(self, directory: Path, persist: bool = True):
        if shutil.which("redis-server") is None:
            pytest.skip("redis-server is not installed (make test installs Debian's package)")
        self.dir, self.persist, self.port = directory, persist, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> RedisServer:
        import redis

        aof = ["--appendonly", "yes", "--appendfsync", "always"] if self.persist else ["--appendonly", "no"]
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                *aof,
                "--dir",
                str(self.dir),
            ],
            stdout=subprocess.DEVNULL,
        )
        for _ in range(200):
            try:
                redis.Redis.from_url(self.url).ping()
                return self
            except (redis.ConnectionError, redis.BusyLoadingError):
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def stop(self, sig: int = signal.SIGKILL) -> None:
        """SIGKILL by default: a crash, not a polite shutdown."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(10)
        self.proc = None
