"""The kernel bench runs the Cost page can calibrate with: this server's last Kernels sweep
(published here by `attn_core.views.kernels` as its records arrive, like its ``_LAST``: one per
server process) and the GPU runs recorded in ``assets/bench/gpu-results*.json``. A recorded file
that cannot be read is reported by name (``problems``), never raised. No torch: the Cost page's
views stay numpy only.
"""

from __future__ import annotations

import datetime
import functools
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from attn_core.cost.calibration import (
    SERVER_GPU,
    Calibration,
    CalibrationError,
    load_calibration,
    read_calibration,
)

SERVER = "this server (measured)"  # the Cost page's hardware choice, shown once a CPU sweep exists
SERVER_ID = SERVER_GPU  # what a link carries for it, and its hardware's name
RECORDED_DIR = Path(__file__).resolve().parents[2] / "assets" / "bench"
RECORDED_GLOB = "gpu-results*.json"
SERVER_RUN_NAME = "this server's Kernels sweep"
HINT = (
    "No kernel bench run for {hardware} yet: run the sweep on the **Kernels** page to time this "
    "server's CPU, and a calibrated column appears here."
)

_LOCK = threading.Lock()
_SERVER_RUN: dict | None = None  # {"meta": …, "records": […]} of the last sweep on this server


def machine_memory_bytes() -> int | None:
    """This machine's RAM (bytes), None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def publish_server_run(meta: dict, records: list[dict]) -> None:
    """The Kernels page's sweep so far, in the bench's run format (``meta`` as
    `benchmarks/kernel_bench.py gpu` writes it, plus ``kind``, ``measured`` and ``memory_bytes``)."""
    global _SERVER_RUN
    with _LOCK:
        _SERVER_RUN = {"meta": dict(meta), "records": [dict(r) for r in records]}


def server_run() -> dict | None:
    """The last published run (for the Kernels page's download), None before any sweep."""
    with _LOCK:
        return (
            None
            if _SERVER_RUN is None
            else {"meta": dict(_SERVER_RUN["meta"]), "records": list(_SERVER_RUN["records"])}
        )


def clear_server_run() -> None:
    global _SERVER_RUN
    with _LOCK:
        _SERVER_RUN = None


@functools.lru_cache(maxsize=64)
def _load(path: Path, mtime_ns: int, size: int) -> Calibration:
    """One recorded file, read again only when it changes (mtime and size are the cache key)."""
    return load_calibration(path)


@dataclass(frozen=True)
class Calibrations:
    """The runs at hand: this server's sweep (None before one ran or when it timed nothing
    usable), the recorded GPU runs (newest file name first) and what could not be read."""

    server: Calibration | None
    recorded: tuple[Calibration, ...]
    problems: tuple[str, ...]

    def for_hardware(self, gpu_name: str) -> Calibration | None:
        """The run that calibrates a hardware choice: SERVER_ID → this server's CPU sweep; a
        GPU preset → this server's sweep if it ran on that GPU, else the newest recorded run of it."""
        server = self.server
        if gpu_name == SERVER_ID:
            return server if self.has_server_cpu else None
        runs = ([server] if server is not None and server.kind == "cuda" else []) + list(self.recorded)
        return next((c for c in runs if c.preset == gpu_name), None)

    @property
    def has_server_cpu(self) -> bool:
        """A CPU sweep with the machine's memory size: it can stand in for hardware."""
        return self.server is not None and self.server.kind == "cpu" and bool(self.server.memory_bytes)


def server_calibration() -> tuple[Calibration | None, str | None]:
    """(this server's last sweep as a calibration, None), or (None, why it is not one)."""
    run = server_run()
    if run is None:
        return None, None
    try:
        return read_calibration(run, SERVER_RUN_NAME), None
    except CalibrationError as exc:
        return None, f"Calibration {exc}: ignored."


def available(folder: Path | None = None) -> Calibrations:
    """This server's sweep and every recorded GPU run; unreadable ones become ``problems``."""
    server, problem = server_calibration()
    problems = [] if problem is None else [problem]
    recorded = []
    for path in sorted((folder or RECORDED_DIR).glob(RECORDED_GLOB), reverse=True):
        try:
            stat = path.stat()
            recorded.append(_load(path, stat.st_mtime_ns, stat.st_size))
        except CalibrationError as exc:
            problems.append(f"Calibration {exc}: ignored.")
        except OSError as exc:
            problems.append(f"Calibration {path.name}: cannot read it ({exc.__class__.__name__}): ignored.")
    return Calibrations(server, tuple(recorded), tuple(problems))
