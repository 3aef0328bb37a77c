"""The check against transformers' build of a pasted config runs in a bounded child process
(`attn_core.anatomy.runner`): a config at the caps is stopped at its wall-clock limit, one over
its memory cap ends in one line, the server's build slots are few and a request beyond them is
"busy" at once, and the parent reads the formulas' shape from the child's record exactly as the
in-process check reads it.

Oracles: the wall clock (time.monotonic) and the child's process group (os.killpg(pid, 0));
`compare_config` run in this process for the shape."""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from attn_core.anatomy import runner
from attn_core.anatomy.build import MAX_BUILD_LAYERS
from attn_core.anatomy.compare import compare_config
from attn_core.cost.config_reader import load_preset_config
from attn_core.views.cost_check import shape_of_record


# A llama at the layer cap: its whole meta build took 83 s on this machine's CLI before
# the child; a fresh name each time, so no kept outcome answers for it.
def at_the_caps() -> dict:
    return load_preset_config("llama-3-8b") | {
        "num_hidden_layers": MAX_BUILD_LAYERS,
        "_name_or_path": f"caps-{uuid.uuid4().hex}",
    }


def gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(autouse=True)
def no_builds_left(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "CACHE_DIR", tmp_path / "build-checks")  # this test's own disk cache
    yield
    runner.stop_all()
    for check in runner.running():
        check.join(10)


def test_a_config_at_the_caps_cannot_run_past_its_deadline():
    start = time.monotonic()
    outcome = runner.wait(at_the_caps(), timeout=30, seconds=1.0)
    took = time.monotonic() - start
    assert (
        outcome.status == "failed"
        and outcome.line == "the build check ran past its 1 s limit and was stopped"
    )
    # the 1 s limit, + the kill and the watcher's wake-up (argued: well under a second on a loaded machine)
    assert took < 1.0 + 3.0
    assert runner.running() == []  # its slot is free again


def test_a_killed_build_leaves_no_process():
    config = at_the_caps()
    runner.poll(config, seconds=60)
    (check,) = [c for c in runner.running()]
    check.stop()
    assert check.join(10) and gone(check._proc.pid)
    assert runner.poll(config).line == "the build check was stopped"


def limits_of(pid: int) -> dict[str, str]:
    """A process's soft limits, by name, as /proc/<pid>/limits lists them."""
    with open(f"/proc/{pid}/limits") as f:
        rows = f.read().splitlines()[1:]
    return {row[:26].strip(): row[26:47].strip() for row in rows}


def test_the_build_child_caps_its_address_space_and_cpu_and_yields_to_the_server():
    """Once it has its job, the child's own limits (oracle: the kernel's /proc/<pid>/limits and
    /proc/<pid>/stat) are finite: its address space within BUILD_MEMORY_BYTES of what it maps,
    its CPU seconds, and it runs at a lower priority than the server."""
    runner.poll(at_the_caps(), seconds=120)
    (check,) = runner.running()
    pid = check._proc.pid
    deadline = time.monotonic() + 60
    while limits_of(pid)["Max address space"] == "unlimited" and time.monotonic() < deadline:
        check.join(0.2)  # waits on the child, not a fixed sleep: it ends early if the build does
    limits = limits_of(pid)
    assert limits["Max address space"] != "unlimited" and limits["Max cpu time"] != "unlimited"
    with open(f"/proc/{pid}/status") as f:
        mapped = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    assert int(limits["Max address space"]) <= mapped + runner.BUILD_MEMORY_BYTES
    with open(f"/proc/{pid}/stat") as f:
        nice = int(f.read().rsplit(")", 1)[1].split()[16])
    assert nice == os.nice(0) + runner.NICE


def test_requests_beyond_the_slots_are_busy_at_once():
    held = [runner.poll(at_the_caps(), seconds=120) for _ in range(runner.MAX_BUILDS)]
    assert [o.status for o in held] == ["pending"] * runner.MAX_BUILDS
    start = time.monotonic()
    extra = runner.poll(at_the_caps(), seconds=120)
    assert extra.status == "busy" and "try again in a moment" in extra.line
    assert time.monotonic() - start < 1.0  # answered at once, nothing started
    assert len(runner.running()) == runner.MAX_BUILDS


@pytest.mark.parametrize("name", ["llama-3-8b", "qwen3-30b-a3b", "gemma-3-27b"])
def test_the_parent_reads_the_shape_the_check_read(name):
    """The record crosses the pipe as JSON; the formulas' shape rebuilt from it is the one
    `compare_config` read in-process."""
    config = load_preset_config(name)
    check = compare_config(config)
    record = json.loads(json.dumps(check.to_json(), default=str))
    assert check.shape is not None and shape_of_record(config, record) == check.shape


TINY = {
    "model_type": "llama",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 96,
    "vocab_size": 100,
}


def test_a_done_check_is_read_from_disk_and_never_across_transformers_versions(monkeypatch):
    """A config built once is answered from disk at once (nothing started), the record the child
    gave; a different transformers version (or code) misses and builds again."""
    config = TINY | {"_name_or_path": f"disk-{uuid.uuid4().hex}"}
    first = runner.wait(config, timeout=120)
    assert first.status == "done" and len(list(runner.CACHE_DIR.glob("*.json"))) == 1
    runner.forget()  # memory cleared: a new server process
    again = runner.poll(config)
    assert again.status == "done" and again.record == first.record and runner.running() == []
    runner.forget()
    monkeypatch.setattr(runner, "_transformers_version", lambda: "0.0.0-another")
    assert runner.poll(config).status == "pending"  # built again, not read


def test_a_config_only_the_build_completes_says_the_build_is_running(monkeypatch):
    """OLMo named by its type alone: the formulas cannot read it until transformers completes it,
    so while the build runs the page's message says it is running (never a bare refusal)."""
    from attn_core.cost.config_keys import ConfigError
    from attn_core.cost.config_reader import parse_config_text
    from attn_core.views.cost_check import shape_of_config

    text = json.dumps({"model_type": "olmo"})
    with pytest.raises(ConfigError):
        parse_config_text(text)  # the oracle: the formulas alone refuse it
    monkeypatch.setattr(runner, "poll", lambda config, seconds=None: runner.Outcome("pending"))
    with pytest.raises(ConfigError, match="still running"):
        shape_of_config(text)


def test_the_next_spare_starts_only_after_the_build_ends():
    """A build takes the warm spare; its replacement (torch's and transformers' imports, a warm-up
    build: seconds of CPU) starts when the build ends, so it never competes with the build for
    this machine's cores. Oracle: the processes alive while the build runs and after it."""
    runner.prewarm()
    spare = runner._SPARE[0]
    config = load_preset_config("llama-2-7b") | {"_name_or_path": f"spare-{uuid.uuid4().hex}"}
    assert runner.poll(config).status == "pending"
    check = runner.running()[0]
    assert check._proc is spare  # the warm spare runs the build
    assert not [p for p in runner._SPARE if p.poll() is None]  # nothing else importing beside it
    check.join(60)
    assert runner.poll(config).status == "done"
    assert len(runner._SPARE) == 1 and runner._SPARE[0] is not spare and runner._SPARE[0].poll() is None
