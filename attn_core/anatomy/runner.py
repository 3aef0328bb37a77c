"""The check against transformers' build of a pasted config, run where the server can stop it: a
child process (`attn_core.bounded_child`) with a wall-clock limit (BUILD_SECONDS), an address
space cap (BUILD_MEMORY_BYTES beyond its imports), a lower priority, and at most MAX_BUILDS at a
time on this server; one more is refused at once ("busy"), never queued. The server never imports
torch for it and never waits on it: `poll` starts a build (or finds it) and answers at once.

Outcomes are kept by the config's content (`config_key`): the last KEEP in memory, and a done
one on disk (`CACHE_DIR`, at most DISK_KEEP files, the oldest dropped) under a key that holds the
installed transformers version and the source of the code that makes the record (`attn_core.cost`,
`attn_core.anatomy`), so a record is never read across a change of either.

    python -m attn_core.anatomy.runner   (stdin: {"config", "cpu_seconds", "memory_bytes"} as
    JSON; stdout: {"status": "ok", "check": Check.to_json()} or {"status": "failed", "line"})
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attn_core.bounded_child import Child, cap_address_space, cap_cpu, child_streams, one_line, spawn
from attn_core.limits import ServerSlot

# A meta build of the largest config the caps allow (1,024 layers; 131,072 layer-experts) took
# 83 s here before the builds were cut to one layer of each kind; a shipped model's, 2 to 9 s.
BUILD_SECONDS = 30.0
# Beyond what torch and transformers map: a reduced copy on the CPU (MAX_REDUCED_BYTES, 4 GiB)
# and the meta model's module objects (under 1 GiB at the caps), + 1 GiB reserved and untouched.
BUILD_MEMORY_BYTES = 6 * 2**30
MAX_BUILDS = 2  # at a time, server-wide: each runs at a lower priority than the server
NICE = 10
KEEP = 64  # outcomes kept in memory
DISK_KEEP = 512  # records kept on disk (a record is a few KiB to ~100 KiB)
CACHE_DIR = (
    Path(os.environ.get("ATTN_LAB_CACHE") or Path.home() / ".cache" / "attention-lab") / "build-checks"
)
BUSY_LINE = (
    "transformers' build check is busy with other configs on this server; try again in a moment "
    "(the figures below are the formulas' alone)"
)


class BuildBusy(RuntimeError):
    """Every build slot of this server is held."""


@dataclass(frozen=True)
class Outcome:
    """Where a config's build check stands: "done" (``record``: `Check.to_json()`), "pending",
    "busy" (no slot free, nothing started) or "failed" (``line`` says why: the limit, memory)."""

    status: str
    record: dict[str, Any] | None = None
    line: str | None = None


class BuildCheck(Child):
    """One config's build check in a child process."""

    what = "the build check"

    def __init__(self, config: Mapping[str, Any], seconds: float, on_end=None, proc=None) -> None:
        self.outcome: Outcome | None = None
        payload = {"config": config, "cpu_seconds": int(seconds) + 5, "memory_bytes": BUILD_MEMORY_BYTES}
        super().__init__(MODULE, json.dumps(payload).encode(), seconds, on_end, proc)

    def read_outcome(self, out: bytes) -> None:
        got = json.loads(out)
        if got.get("status") == "ok":
            self.outcome = Outcome("done", record=got["check"])
        else:
            self.error = str(got.get("line") or "the build check failed")

    def result(self) -> Outcome:
        """The outcome once done: "done" with the record, or "failed" with the one line."""
        if not self.done:
            return Outcome("pending")
        if self.error is not None or self.outcome is None:
            return Outcome("failed", line=self.error or "the build check gave no result")
        return self.outcome


MODULE = "attn_core.anatomy.runner"
# transformers' modeling machinery, loaded on a model's first build (masks, generation, the
# integrations): built once while the child waits for its job, so a job does not pay for it.
WARM_UP = {
    "model_type": "llama",
    "num_hidden_layers": 1,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "vocab_size": 128,
}


def child_main() -> int:
    """The child: lower its priority, import and warm up (a spare does this before it has a job),
    read the job, cap itself, build, write the outcome. An empty stdin (the server stopped before
    handing it a job) ends it quietly."""
    out = child_streams()
    os.nice(NICE)
    from attn_core.anatomy.compare import compare_config  # torch and transformers, before the caps

    compare_config(WARM_UP)
    payload = sys.stdin.buffer.read()
    if not payload:
        return 0
    job = json.loads(payload)
    cap_cpu(int(job["cpu_seconds"]))
    try:
        cap_address_space(int(job["memory_bytes"]))
        got = {"status": "ok", "check": compare_config(job["config"]).to_json()}
    except MemoryError as exc:
        got = {"status": "failed", "line": f"the build ran out of its memory limit ({one_line(exc)})"}
    except Exception as exc:  # a build that raises past transformers' own refusals: one line
        got = {"status": "failed", "line": f"the build failed ({one_line(exc)})"}
    out.write(json.dumps(got, default=str).encode())
    out.close()
    return 0


def _busy() -> Exception:
    return BuildBusy(BUSY_LINE)


_SLOTS = ServerSlot("build check", MAX_BUILDS, busy=_busy)
_LOCK = threading.Lock()
_KEPT: OrderedDict[str, Outcome] = OrderedDict()  # done or failed, by config content
_PENDING: dict[str, BuildCheck] = {}
_SPARE: list = []  # a child started ahead, importing and warming up while no job needs it


def _take_spare():
    """The spare child if it is still alive (else None). Its replacement starts when the build
    ends (`_then_prewarm`): its imports and warm-up take seconds of CPU that a build on this
    machine's few cores would otherwise share."""
    spare = _SPARE.pop() if _SPARE else None
    return spare if spare is not None and spare.poll() is None else None


def _then_prewarm(release):
    """The slot's release, then a spare started for the next build."""

    def end(child) -> None:
        release(child)
        prewarm()

    return end


def prewarm() -> None:
    """Start a spare child now (if none is waiting), so that the next build starts warm."""
    with _LOCK:
        if not _SPARE or _SPARE[0].poll() is not None:
            _SPARE[:] = [spawn(MODULE)]


def _keep(key: str, outcome: Outcome) -> Outcome:
    _KEPT[key] = outcome
    _KEPT.move_to_end(key)
    while len(_KEPT) > KEEP:
        _KEPT.popitem(last=False)
    return outcome


def _transformers_version() -> str:
    from importlib.metadata import version  # the installed one, without importing it

    return version("transformers")


@functools.cache
def _code_version() -> str:
    """A hash of the source that makes a record: the formulas, the build's reading, and the
    recorded facts they read (assets/derived)."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    derived = (root.parent / "assets" / "derived").glob("*.json")
    for path in sorted([*(root / "cost").rglob("*.py"), *(root / "anatomy").rglob("*.py"), *derived]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _disk_path(key: str) -> Path:
    tag = f"transformers {_transformers_version()}; code {_code_version()}\n{key}"
    return CACHE_DIR / f"{hashlib.sha256(tag.encode()).hexdigest()}.json"


def _from_disk(key: str) -> Outcome | None:
    """A done outcome recorded on disk for this config, transformers version and record version."""
    try:
        return Outcome("done", record=json.loads(_disk_path(key).read_text()))
    except (OSError, ValueError):  # none, or unreadable: built again
        return None


def _to_disk(key: str, outcome: Outcome) -> None:
    """Record a done outcome (atomically: a temporary file renamed), then drop the oldest files
    beyond DISK_KEEP. A cache that cannot be written is no cache, never an error."""
    with contextlib.suppress(OSError):
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=CACHE_DIR, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(outcome.record, f, default=str)
        os.replace(tmp, _disk_path(key))
        files = sorted(CACHE_DIR.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in files[: max(0, len(files) - DISK_KEEP)]:
            old.unlink(missing_ok=True)


def config_key(config: Mapping[str, Any]) -> str:
    """The config's content as one canonical string (sorted keys)."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)


def poll(config: Mapping[str, Any], seconds: float | None = None) -> Outcome:
    """Where ``config``'s build check stands, at once: a kept outcome, the running one's state, or
    a new build started in a free slot ("pending"); "busy" when none is free. ``seconds``: the
    wall-clock limit of a build started now (BUILD_SECONDS)."""
    key = config_key(config)
    with _LOCK:
        if key in _KEPT:
            _KEPT.move_to_end(key)
            return _KEPT[key]
        check = _PENDING.get(key)
        on_disk = _from_disk(key) if check is None else None
        if on_disk is not None:
            return _keep(key, on_disk)
        if check is None:
            limit = BUILD_SECONDS if seconds is None else seconds
            try:
                check = _SLOTS.start(
                    lambda release: BuildCheck(config, limit, _then_prewarm(release), _take_spare())
                )
            except BuildBusy as exc:
                return Outcome("busy", line=str(exc))
            _PENDING[key] = check
        outcome = check.result()
        if outcome.status != "pending":
            _PENDING.pop(key, None)
            _keep(key, outcome)
            if outcome.status == "done":
                _to_disk(key, outcome)
        return outcome


def wait(config: Mapping[str, Any], timeout: float, seconds: float | None = None) -> Outcome:
    """`poll`, then up to ``timeout`` seconds for a pending build to end; where it stands then."""
    outcome = poll(config, seconds)
    if outcome.status == "pending":
        with _LOCK:
            check = _PENDING.get(config_key(config))
        if check is not None:
            check.join(timeout)
        outcome = poll(config, seconds)
    return outcome


def running() -> list[BuildCheck]:
    """The build checks holding a slot now."""
    return _SLOTS.running()


def stop_all() -> None:
    """Stop every running build check and the spare (tests; a server shutting down)."""
    for check in _SLOTS.running():
        check.stop()
    with _LOCK:
        for spare in _SPARE:
            spare.kill()
            spare.communicate()
        _SPARE.clear()


def forget() -> None:
    """Drop every kept outcome (tests)."""
    with _LOCK:
        _KEPT.clear()


if __name__ == "__main__":
    sys.exit(child_main())
