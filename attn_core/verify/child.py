"""One check in a child process: the server (or the CLI) never builds a layer itself. The child
gets the model and the request on stdin, caps its own address space at what the plan says it
needs, runs `run.verify`, and writes the result (or one line saying why not) on stdout. The parent
holds the one check slot of this machine, enforces a wall-clock limit, and can stop the child at
any moment; whatever happens — a refusal, MemoryError, a torch allocation failure, the limit, a
kill — comes back as one line (`CheckFailed`), never as an exception from deep in torch.

Why a child: a Python thread cannot be stopped, holds the GIL between torch calls (a mixture of
200,000 tiny experts held it 33 s), and a process cannot take back memory it gave the allocator;
a child is killed whole and its memory goes with it (the machinery, shared with the build check
of a pasted config, is `attn_core.bounded_child`).

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

import dataclasses
import os
import sys
from dataclasses import dataclass, field

from attn_core.bounded_child import (
    Child,
    cap_address_space,
    cap_cpu,
    child_streams,
    one_line,
    status_bytes,
)
from attn_core.cost.config_reader import ModelShape
from attn_core.limits import ServerSlot

ADDRESS_SLACK = 1 << 30  # mapped but not resident: arenas, stacks, late libraries (argued above)


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
    if device == "cpu":
        return cap_address_space(job.memory_bytes)
    import torch

    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, job.memory_bytes / total))
    return status_bytes("VmSize")


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
    out = child_streams()  # anything printed goes to stderr: stdout carries only the outcome
    job = Job.from_json(sys.stdin.buffer.read())
    from attn_core.verify import peak, plan, run, wire

    for name, sizes in job.probe_sizes.items():
        getattr(peak, name).update(sizes)
    cap_cpu(job.cpu_seconds)
    try:
        device = plan.select_device(job.request.device)
        _warm_up(job, device)
        _limit_memory(job, device)
        base = status_bytes("VmRSS")
        result = run.verify(job.shape, job.request, config=job.config)
        grown = status_bytes("VmHWM") - base
        outcome = {"status": "ok", "result": result, "grown": max(grown, 0)}
    except plan.VerifyError as exc:
        outcome = {"status": "refused", "line": str(exc)}
    except MemoryError as exc:
        outcome = {"status": "failed", "line": f"ran out of its memory limit ({one_line(exc)})"}
    except Exception as exc:  # a torch allocation failure is a RuntimeError; any other, one line too
        memory = "alloc" in str(exc).lower() or "memory" in str(exc).lower()
        why = "ran out of its memory limit" if memory else "failed"
        outcome = {"status": "failed", "line": f"{why} ({one_line(exc)})"}
    out.write(wire.dumps(outcome))
    out.close()
    return 0


class Check(Child):
    """A check running in a child process, stoppable; ``wait`` or poll ``done`` for the outcome.
    Start one with `start_check`, which holds the machine's one check slot while it runs."""

    what = "the check"

    def __init__(self, job: Job, seconds: float, on_end=None) -> None:
        self.result = None  # a VerifyResult once done
        self.refused = False  # the plan refused it (VerifyError in the child)
        self.measured_peak_bytes = 0  # the child's peak resident memory beyond its start
        super().__init__("attn_core.verify.child", job.to_json(), seconds, on_end)

    def read_outcome(self, out: bytes) -> None:
        from attn_core.verify import wire

        outcome = wire.loads(out)
        if outcome["status"] == "ok":
            self.result, self.measured_peak_bytes = outcome["result"], outcome["grown"]
        else:
            self.error, self.refused = outcome["line"], outcome["status"] == "refused"

    def wait(self, timeout: float | None = None):
        """The result, or CheckFailed with the one line."""
        self.join(timeout)
        if not self.done:
            raise CheckFailed("the check is still running")
        if self.error is not None:
            raise CheckFailed(self.error)
        return self.result


def _busy() -> Exception:
    from attn_core.verify import run

    return run.VerifyBusy("another check is running on this machine; try again when it ends")


_SLOTS = ServerSlot("check", 1, busy=_busy)  # the machine's one check slot


def running() -> Check | None:
    """The check running on this machine now, if any."""
    held = _SLOTS.running()
    return held[0] if held else None


def start_check(
    shape: ModelShape, request, seconds: float, memory_bytes: int | None = None, config: dict | None = None
) -> Check:
    """Plan (VerifyError for what is refused), then start the check in a child with the planned
    peak + ADDRESS_SLACK of address space (``memory_bytes`` overrides it) and ``seconds`` of wall
    clock; with the model's ``config``, transformers' own layers where it builds them (`hf`).
    VerifyBusy when another check holds the slot."""
    from attn_core.verify import peak, plan

    planned = plan.plan_build(shape, request, config)
    sizes = {
        n: dict(getattr(peak, n))
        for n in ("PEAK_N", "COLD_BYTES", "STREAM_BYTES", "PROBE_ROWS", "PROBE_COLS")
    }
    job = Job(
        shape,
        request,
        memory_bytes if memory_bytes is not None else planned.peak_bytes + ADDRESS_SLACK,
        cpu_seconds=int(seconds * max(1, request.threads or os.cpu_count() or 1)) + 5,
        probe_sizes=sizes,
        config=config,
        hf_config=planned.hf_config,
    )
    return _SLOTS.start(lambda release: Check(job, seconds, release))


if __name__ == "__main__":
    sys.exit(child_main())
