"""Work the server must be able to stop, run in a child process: a wall-clock limit the parent
enforces (SIGKILL to the child's whole process group), limits the child sets on itself (its address
space, its CPU seconds, a lower priority), and a few slots server-wide (`attn_core.limits.ServerSlot`,
the server's one slot mechanism), each taken for as long as a child runs; a request beyond them
is refused at once ("busy") instead of queued.

Why a child: a Python thread cannot be stopped, holds the GIL between torch calls, and a process
cannot take back memory it gave the allocator; a child is killed whole and its memory goes with
it. Two users: `attn_core.verify.child` (a check of the lab's layers) and `attn_core.anatomy.runner`
(transformers' meta build of a pasted config).

The child's side: `child_streams` (stdout keeps only the outcome), `cap_cpu`, `cap_address_space`.
The parent's side: `Child` (subclass it to read the outcome), started in a slot by
`ServerSlot.start`.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import BinaryIO


def one_line(exc: BaseException) -> str:
    """An exception as one line: its class and the first line of its message (≤ 200 characters)."""
    text = str(exc).strip()
    first = text.splitlines()[0][:200] if text else ""
    return f"{exc.__class__.__name__}: {first}" if first else exc.__class__.__name__


def status_bytes(field: str) -> int:
    """A size from /proc/self/status (VmRSS: resident now; VmHWM: this process image's peak
    resident memory; VmSize: mapped now); 0 where there is none."""
    with contextlib.suppress(OSError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def child_streams() -> BinaryIO:
    """In the child: the stream its outcome goes to (the real stdout); anything else printed
    goes to stderr from here on."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return out


def cap_cpu(seconds: int) -> None:
    """In the child: RLIMIT_CPU, the back-up of the parent's wall clock: ``seconds`` more than
    it has used so far (a child started ahead of its job has used some on its imports)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    limit = int(used.ru_utime + used.ru_stime) + seconds
    resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))


def cap_address_space(extra_bytes: int) -> int:
    """In the child: cap its address space at what is mapped now + ``extra_bytes`` (RLIMIT_AS),
    so that growing past it is a MemoryError in the child, never the server's memory. Returns
    the bytes mapped before the cap."""
    mapped = status_bytes("VmSize")
    limit = mapped + extra_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return mapped


def spawn(module: str) -> subprocess.Popen:
    """``python -m module`` in its own process group (killed whole), its stdin, stdout and
    stderr piped to this process; it reads its job from stdin when it is ready for one."""
    return subprocess.Popen(
        [sys.executable, "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


class Child:
    """A child process running ``python -m module`` on ``payload`` (stdin), stopped after
    ``seconds`` of wall clock; ``wait`` or poll ``done``. ``proc``: a process `spawn` started
    ahead (its imports done while it waited for a job) instead of a new one. A subclass reads the outcome in
    ``read_outcome`` (called with the child's stdout when it exited 0 with some); every other
    ending is one line in ``error``. ``what`` names it in those lines ("the check")."""

    what = "the child"

    def __init__(
        self,
        module: str,
        payload: bytes,
        seconds: float,
        on_end: Callable | None = None,
        proc: subprocess.Popen | None = None,
    ) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.error: str | None = None
        self._stopped = False
        self._on_end = on_end
        self._proc = proc if proc is not None and proc.poll() is None else spawn(module)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(payload,), daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def read_outcome(self, out: bytes) -> None:
        """Read the child's stdout (a subclass's format)."""
        raise NotImplementedError

    def _watch(self, payload: bytes) -> None:
        try:
            out, err = self._proc.communicate(payload, timeout=self.seconds)
            self._read(out, err)
        except subprocess.TimeoutExpired:
            self._kill()
            self._proc.communicate()
            self.error = f"{self.what} ran past its {self.seconds:g} s limit and was stopped"
        except Exception as exc:  # a broken pipe from a child that died at once, an unreadable outcome
            self._kill()
            self.error = f"{self.what} failed to run ({one_line(exc)})"
        finally:
            if self._on_end is not None:
                self._on_end(self)
            self._done.set()

    def _read(self, out: bytes, err: bytes) -> None:
        code = self._proc.returncode
        if self._stopped:
            self.error = f"{self.what} was stopped"
        elif code != 0 or not out:
            how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            tail = err.decode(errors="replace").strip().splitlines()[-1:] if err else []
            hint = " (out of memory?)" if code == -signal.SIGKILL else ""
            self.error = f"{self.what}'s process ended without a result: {how}{hint}" + (
                f"; {tail[0][:200]}" if tail else ""
            )
        else:
            self.read_outcome(out)

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)

    def stop(self) -> None:
        """Stop the child now (its memory goes with it); the outcome says it was stopped."""
        self._stopped = True
        self._kill()

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the child to end; whether it has."""
        return self._done.wait(timeout)
