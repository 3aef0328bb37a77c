"""One check in a child process: the server (or the CLI) never builds a layer itself. The child
gets the model and the request on stdin, caps its own address space at what the plan says it
needs, runs `run.verify`, and writes the result (or one line saying why not) on stdout. The parent
holds the one check slot of this machine, enforces a wall-clock limit, and can stop the child at
any moment; whatever happens — a refusal, MemoryError, a torch allocation failure, the limit, a
kill — comes back as one line (`CheckFailed`), never as an exception from deep in torch.

Why a child: a Python thread cannot be stopped, holds the GIL between torch calls (a mixture of
200,000 tiny experts held it 33 s), and a process cannot take back memory it gave the allocator;
a child is killed whole and its memory goes with it.

The memory limit is RLIMIT_AS, the child's address space: set once torch (and transformers, for a
hybrid) are imported, at what is mapped then + the planned peak + ADDRESS_SLACK. The plan is an
upper bound of the bytes the check allocates (`tests/verify/test_peak.py` measures the child's
peak resident memory against it); resident ≤ mapped, and the slack covers mappings that are
reserved but never touched (a malloc arena, a thread's stack, a library loaded late). So a check
that stays within its plan is never stopped by it, and one that does not (a plan that missed a
term) fails with MemoryError in the child instead of growing the server. RLIMIT_AS is not set on
a GPU (the CUDA driver reserves far more address space than memory); there the planned peak is
given to torch as the process's share of the device. RLIMIT_CPU backs up the wall clock.

    python -m attn_core.verify.child   (stdin: a `Job` as JSON; stdout: the outcome as JSON, `wire`)
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from attn_core.cost.shapes import ModelShape

ADDRESS_SLACK = 1 << 30  # mapped but not resident: arenas, stacks, late libraries (argued above)
KILL_GRACE_S = 2.0  # after a stop: SIGTERM, then SIGKILL this long after


class CheckFailed(RuntimeError):
    """A check that did not finish: one line saying why (refused, out of memory, limit, stopped)."""


@dataclass(frozen=True)
class Job:
    """What the child runs: the model, the request, its limits, and the probe's buffer sizes (the
    parent's, so that what was planned is what runs)."""

    shape: ModelShape
    request: object  # a VerifyRequest (`plan`, which imports torch)
    memory_bytes: int  # the address space allowed beyond what is mapped after the imports
    cpu_seconds: int
    probe_sizes: dict = field(default_factory=dict)
    config: dict | None = None  # the model's config.json: transformers builds it where it can
    hf_config: object = None  # transformers' config of the planned layers, for the warm-up

    def to_json(self) -> bytes:
        """The job for the child's stdin: its fields as JSON (`wire`), never a pickle."""
        from attn_core.verify import wire

        return wire.dumps({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})

    @classmethod
    def from_json(cls, payload: bytes) -> Job:
        from attn_core.verify import wire

        return cls(**wire.loads(payload))


def _limit_memory(job: Job, device: str) -> int:
    """Cap the address space (CPU) and return the bytes mapped before the cap (VmSize)."""
    mapped = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                mapped = int(line.split()[1]) * 1024
    if device == "cpu":
        limit = mapped + job.memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    else:
        import torch

        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, job.memory_bytes / total))
    return mapped


def _status_bytes(field: str) -> int:
    """A size from /proc/self/status (VmRSS: resident now; VmHWM: this process image's peak
    resident memory — unlike getrusage's ru_maxrss, which keeps the forking parent's peak across
    the exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0][:200] if text else ""
    return f"{exc.__class__.__name__}: {first}" if first else exc.__class__.__name__


def _warm_up(job: Job, device: str) -> None:
    """Load what a check loads on first use, before the cap and the baseline: torch's matmul and
    SDPA kernels, and a linear layer's core (transformers' fallbacks import more modules on their
    first call: ~90 MiB resident for Nemotron-H's), each at its head shapes on 2 tokens."""
    import torch

    from attn_core.verify import layers

    x = torch.randn(1, 2, 2, 8, device=device)
    torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True)
    x[0, 0] @ x[0, 0].T
    if job.hf_config is not None:  # transformers' modeling module, masks and fallbacks
        from attn_core.verify.hf import warm_up

        warm_up(job.hf_config)
    elif job.shape.state_mixer is not None and job.shape.state_mixer.kind in layers.STATE_CORES:
        core = layers.STATE_CORES[job.shape.state_mixer.kind]
        for q_len, kv_len in ((2, 2), (1, 3)):
            core(job.shape, q_len, kv_len, 1, torch.float32, device)()


def child_main() -> int:
    """The child: read the job, cap itself, run, write {"status": "ok", "result", "grown"} or
    {"status": "refused" | "failed", "line"} (JSON, `wire`)."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr: stdout carries only the outcome
    job = Job.from_json(sys.stdin.buffer.read())
    from attn_core.verify import peak, plan, run, wire

    for name, sizes in job.probe_sizes.items():
        getattr(peak, name).update(sizes)
    resource.setrlimit(resource.RLIMIT_CPU, (job.cpu_seconds, job.cpu_seconds + 5))
    try:
        device = plan.select_device(job.request.device)
        _warm_up(job, device)
        _limit_memory(job, device)
        base = _status_bytes("VmRSS")
        result = run.verify(job.shape, job.request, config=job.config)
        grown = _status_bytes("VmHWM") - base
        outcome = {"status": "ok", "result": result, "grown": max(grown, 0)}
    except plan.VerifyError as exc:
        outcome = {"status": "refused", "line": str(exc)}
    except MemoryError as exc:
        outcome = {"status": "failed", "line": f"ran out of its memory limit ({_one_line(exc)})"}
    except Exception as exc:  # a torch allocation failure is a RuntimeError; any other, one line too
        memory = "alloc" in str(exc).lower() or "memory" in str(exc).lower()
        why = "ran out of its memory limit" if memory else "failed"
        outcome = {"status": "failed", "line": f"{why} ({_one_line(exc)})"}
    out.write(wire.dumps(outcome))
    out.close()
    return 0


class Check:
    """A check running in a child process, stoppable; ``wait`` or poll ``done`` for the outcome.
    Start one with `start_check`, which holds the machine's one check slot while it runs."""

    def __init__(self, job: Job, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.result = None  # a VerifyResult once done
        self.error: str | None = None  # or one line
        self.refused = False  # the plan refused it (VerifyError in the child)
        self.measured_peak_bytes = 0  # the child's peak resident memory beyond its start
        self._stopped = False
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "attn_core.verify.child"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(job.to_json(),), daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _watch(self, payload: bytes) -> None:
        try:
            out, err = self._proc.communicate(payload, timeout=self.seconds)
            self._read(out, err)
        except subprocess.TimeoutExpired:
            self._kill()
            self._proc.communicate()
            self.error = f"the check ran past its {self.seconds:g} s limit and was stopped"
        except Exception as exc:  # a broken pipe from a child that died at once, …
            self._kill()
            self.error = f"the check failed to run ({_one_line(exc)})"
        finally:
            _release(self)
            self._done.set()

    def _read(self, out: bytes, err: bytes) -> None:
        code = self._proc.returncode
        if self._stopped:
            self.error = "the check was stopped"
        elif code != 0 or not out:
            how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            tail = err.decode(errors="replace").strip().splitlines()[-1:] if err else []
            hint = " (out of memory?)" if code == -signal.SIGKILL else ""
            self.error = f"the check's process ended without a result: {how}{hint}" + (
                f"; {tail[0][:200]}" if tail else ""
            )
        else:
            from attn_core.verify import wire

            outcome = wire.loads(out)
            if outcome["status"] == "ok":
                self.result, self.measured_peak_bytes = outcome["result"], outcome["grown"]
            else:
                self.error, self.refused = outcome["line"], outcome["status"] == "refused"

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

    def wait(self, timeout: float | None = None):
        """The result, or CheckFailed with the one line."""
        self._done.wait(timeout)
        if not self.done:
            raise CheckFailed("the check is still running")
        if self.error is not None:
            raise CheckFailed(self.error)
        return self.result


_SLOT = threading.Lock()
_RUNNING: list[Check] = []  # the check holding the slot, if any


def _release(check: Check) -> None:
    with _SLOT:
        if check in _RUNNING:
            _RUNNING.remove(check)


def running() -> Check | None:
    """The check running on this machine now, if any."""
    with _SLOT:
        return _RUNNING[0] if _RUNNING else None


def start_check(
    shape: ModelShape, request, seconds: float, memory_bytes: int | None = None, config: dict | None = None
) -> Check:
    """Plan (VerifyError for what is refused), then start the check in a child with the planned
    peak + ADDRESS_SLACK of address space (``memory_bytes`` overrides it) and ``seconds`` of wall
    clock; with the model's ``config``, transformers' own layers where it builds them (`hf`).
    VerifyBusy when another check holds the slot."""
    from attn_core.verify import peak, plan, run

    planned = plan.plan_build(shape, request, config)
    sizes = {
        n: dict(getattr(peak, n))
        for n in ("PEAK_N", "COLD_BYTES", "STREAM_BYTES", "PROBE_ROWS", "PROBE_COLS")
    }
    job = Job(
        shape, request, memory_bytes if memory_bytes is not None else planned.peak_bytes + ADDRESS_SLACK,
        cpu_seconds=int(seconds * max(1, request.threads or os.cpu_count() or 1)) + 5, probe_sizes=sizes,
        config=config, hf_config=planned.hf_config,
    )  # fmt: skip
    with _SLOT:
        if _RUNNING and not _RUNNING[0].done:
            raise run.VerifyBusy("another check is running on this machine; try again when it ends")
        check = Check(job, seconds)
        _RUNNING[:] = [check]
    return check


if __name__ == "__main__":
    sys.exit(child_main())
