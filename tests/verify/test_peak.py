"""A check cannot take the server down: the planned peak is an upper bound of what the check's
child process really holds, what one check may build is capped, the child is stopped by its
memory limit, its wall clock or a Stop, and every failure comes back as one line; the CLI bounds
its flags by this machine.

Oracles: the child's own peak resident memory (``VmHWM`` beyond its start, read by the
kernel, not by the plan); direct products of the config's numbers for the activations the audit
named (B·T·d_ff wide MLP outputs, experts built); the exit status and stderr of the CLI. The heavy
cases at the audit's sizes are measured by benchmarks/verify_bounds.py (RESULTS.md).
"""

from __future__ import annotations

import os
import time

import pytest

from attn_core.cost.config_reader import from_hf_config, load_preset
from attn_core.verify import cli as verify_cli
from attn_core.verify import peak
from attn_core.verify.child import CheckFailed, running, start_check
from attn_core.verify.examples import HYBRID, LLAMA, MANY_HEADS, MIXTRAL, NEMOTRON
from attn_core.verify.peak import FLOOR_BYTES, MAX_EXPERTS
from attn_core.verify.plan import VerifyError, VerifyRequest, plan_build
from attn_core.verify.run import VerifyBusy, expected_seconds

# Wider than the examples' hybrids, so that the run's own terms (the scan's chunk states, the
# delta rule's) dominate the planned peak the child's measured peak is held against.
NEMOTRON_WIDE = NEMOTRON | {
    "hidden_size": 128,
    "mamba_num_heads": 16,
    "mamba_head_dim": 32,
    "ssm_state_size": 64,
}
HYBRID_WIDE = HYBRID | {
    "linear_num_key_heads": 4,
    "linear_num_value_heads": 8,
    "linear_key_head_dim": 32,
    "linear_value_head_dim": 32,
}


def _shape(config: dict, **changes):
    return from_hf_config(config | changes, name=config["model_type"])


def _request(**kw) -> VerifyRequest:
    return VerifyRequest(**({"device": "cpu", "decode_steps": 4} | kw))


# -- the plan is an upper bound of the child's peak ----------------------------------------------
@pytest.mark.parametrize(
    "config, changes, T, B",
    [
        (LLAMA, {"intermediate_size": 40_000}, 128, 2),  # the MLP's B·T·4·d_ff dominates
        (MIXTRAL, {"num_local_experts": 600}, 64, 2),  # capped at MAX_EXPERTS: module objects count
        (NEMOTRON_WIDE, {}, 128, 2),  # the SSD scan's fp32 chunk states
        (HYBRID_WIDE, {}, 128, 2),  # Gated DeltaNet's chunked delta rule
    ],
    ids=["wide-mlp", "many-experts", "mamba2-scan", "gated-deltanet"],
)
def test_planned_peak_bounds_the_child_measured_peak(small_probe, config, changes, T, B):
    shape = _shape(config, **changes)
    request = _request(seq_len=T, batch=B)
    plan = plan_build(shape, request)
    check = start_check(shape, request, 120)
    result = check.wait(130)
    assert result.plan.peak_bytes == plan.peak_bytes
    # the kernel's high-water mark of the child's resident memory, beyond its warmed-up start
    assert 0 < check.measured_peak_bytes <= plan.peak_bytes
    # … and the plan is not vacuous: within 3× of it plus the floor
    assert plan.peak_bytes <= 3 * check.measured_peak_bytes + FLOOR_BYTES


# -- the audit's cases, at small scale --------------------------------------------------------
def test_wide_mlp_counts_its_activations_and_is_capped_by_width():
    """A 64-wide llama with d_ff 100,000 at T = 512, B = 4 was planned at 73 MiB (weights and
    cache only) and took 3.2 GiB: its B·T × 2·d_ff activations are over the width cap now, and
    at a smaller size the plan holds its up-projection, activation and product (4·d_ff per token)."""
    with pytest.raises(VerifyError, match="wide activations is over"):
        plan_build(_shape(LLAMA, intermediate_size=100_000), _request(seq_len=512, batch=4))
    plan = plan_build(_shape(LLAMA, intermediate_size=20_000), _request(seq_len=512, batch=4))
    assert plan.peak.activations >= 512 * 4 * 4 * 20_000 * 4
    assert plan.peak_bytes > plan.weight_bytes + plan.cache_bytes + 512 * 4 * 4 * 20_000 * 4


def test_many_tiny_experts_are_cut_to_the_cap_with_their_module_cost():
    plan = plan_build(_shape(MIXTRAL), _request(seq_len=128, batch=4))
    assert plan.experts_built == MAX_EXPERTS and plan.model_experts == 200_000
    assert plan.shape.moe.top_k == 2 and any("200,000 routed experts" in n for n in plan.notes)
    assert plan.peak.modules == 2 * MAX_EXPERTS * peak.MODULE_BYTES


def test_tiny_scan_chunks_are_refused_by_name():
    with pytest.raises(VerifyError, match="chunk_size 1 is below the 16"):
        plan_build(_shape(NEMOTRON_WIDE, chunk_size=1), _request())
    # at the smallest chunk allowed, the c + 1 chunk states (P × N per head, fp32) are planned
    plan = plan_build(_shape(NEMOTRON_WIDE), _request(seq_len=512, batch=4))
    m = plan.shape.state_mixer
    assert plan.peak.activations >= 4 * 4 * m.n_heads * (512 // 16 + 1) * m.head_dim * m.d_state * 4


def test_many_heads_is_refused_by_its_expected_time():
    """64 layers of 1,024 heads ran 200 s at the 0.5 GiB setting: its expected time is shown
    before it runs and is over the page's limit."""
    from lab_ui import cost_verify

    request = _request(seq_len=512, batch=4, memory_bytes=2**30)
    plan = plan_build(_shape(MANY_HEADS), request)
    assert expected_seconds(plan, request, "cpu") > cost_verify.LIMIT_S


def test_a_child_over_its_memory_limit_is_one_line(small_probe):
    """The address-space cap given to the child far under what the check holds: the allocation
    fails inside the child and the page gets one line (not a blank page, not a dead server)."""
    shape = _shape(LLAMA, intermediate_size=40_000)
    check = start_check(shape, _request(seq_len=128, batch=2), 60, memory_bytes=32 << 20)
    with pytest.raises(CheckFailed) as failed:
        check.wait(90)
    line = str(failed.value)
    assert "\n" not in line and "memory" in line
    assert running() is None  # the slot is free again


def test_a_child_past_its_wall_clock_is_stopped_and_one_line(small_probe):
    check = start_check(_shape(LLAMA), _request(seq_len=64), 0.5)
    with pytest.raises(CheckFailed, match=r"^the check ran past its 0\.5 s limit and was stopped$"):
        check.wait(30)


def test_stop_ends_the_child_and_frees_the_slot(small_probe):
    check = start_check(_shape(LLAMA), _request(seq_len=64), 60)
    with pytest.raises(VerifyBusy):
        start_check(_shape(LLAMA), _request(seq_len=64), 60)
    start = time.monotonic()
    check.stop()
    with pytest.raises(CheckFailed, match=r"^the check was stopped$"):
        check.wait(10)
    assert time.monotonic() - start < 5 and running() is None
    with pytest.raises(ProcessLookupError):  # the child and its group are gone
        os.killpg(check._proc.pid, 0)


# -- the CLI bounds its flags by the machine ------------------------------------------------
@pytest.mark.parametrize(
    "args, says",
    [
        (["--model", "llama-3-8b", "--memory-gib", "1e7"], "--memory-gib"),
        (["--model", "llama-3-8b", "--memory-gib", "100000"], "over this machine's"),
        (["--model", "llama-3-8b", "--threads", "1024"], f"outside 0…{os.cpu_count()}"),
        (["--model", "llama-3-8b", "--seq-len", "131072", "--memory-gib", "1"], "one check holds"),
        # transformers' build holds the 128,256-row embedding table (2 GiB in fp32): a larger cap
        (["--model", "llama-3-8b", "--time-limit", "1", "--memory-gib", "8"], "over --time-limit 1 s"),
    ],
)
def test_cli_refuses_flags_beyond_the_machine(args, says, capsys):
    assert verify_cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err


def test_cli_memory_bound_is_this_machines_memtotal():
    with open("/proc/meminfo") as f:
        total_kib = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
    assert verify_cli.machine_memory_gib() == pytest.approx(total_kib / 2**20)


def test_presets_plan_within_the_default_cap():
    """The models the benchmark checks still plan within 2 GiB, their peak counted in full."""
    for name in ("llama-3-8b", "qwen3-30b-a3b", "qwen3-next-80b-a3b", "nemotron-h-8b"):
        plan = plan_build(load_preset(name), VerifyRequest(device="cpu"))
        assert plan.peak_bytes <= VerifyRequest().memory_bytes
        assert plan.peak.activations > 0 and plan.peak.probe > 0


def _cost_panel():
    """The Cost page's check panel under a model whose check runs for a while (the default probe)."""
    from attn_core.cost.config_reader import from_hf_config
    from attn_core.verify.examples import LLAMA
    from lab_ui import cost_verify

    cost_verify.check_on_this_machine(from_hf_config(LLAMA | {"intermediate_size": 20_000}, name="wide"))


def test_the_page_shows_the_plan_first_and_stop_gives_one_line():
    from streamlit.testing.v1 import AppTest

    from tests.verify.test_run_verify import open_check

    at = open_check(AppTest.from_function(_cost_panel, default_timeout=60).run())
    assert any(c.value.startswith("Planned peak ") and "stopped at 120 s" in c.value for c in at.caption)
    at.button(key="co_vf_run").click().run()
    assert at.info and at.info[0].value.startswith("Running:")
    at.button(key="co_vf_stop").click().run()
    start = time.monotonic()
    while at.info and at.info[0].value.startswith("Running") and time.monotonic() - start < 30:
        time.sleep(0.2)
        at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["the check was stopped"]
    assert running() is None or running().done
