"""Smoke test of benchmarks/serve_load.py: its protocol client drives a real server correctly.

Two simulated sessions change the Playground's scale for ~3 s against a live `streamlit run
app.py`. The oracle for "the reruns really ran with the new widget value" is arithmetic, not our
code: on the toy input d_k = 2, so the "scale" metric must read 1/√2 for "1/√d_k" and 1/2 for
"1/d_k" (formatted to 4 significant digits as the page does). A client that sent a widget state
the server ignored, or that fell back to another page, would time reruns of the wrong thing;
this catches both. No latency is asserted: speed is the benchmark's job, not a test's.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
from conftest import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(120)  # server start (~5-15 s on a busy 2-core machine) + 3 s of load
def test_two_sessions_rerun_the_playground_without_exceptions():
    sl = load_benchmark("serve_load")
    cfg = sl.LoadConfig(sessions=2, duration_s=3.0, think_s=0.3, jitter=0.5, ramp_s=0.2, rerun_timeout_s=30)
    with sl.serve() as server:
        res = sl.run_load(server, cfg)
    assert server.proc.poll() is not None, "the server must be terminated when serve() exits"

    assert res.errors == [] and res.exceptions == []
    expected = {f"{1 / math.sqrt(2):.4g}", f"{1 / 2:.4g}"}  # "0.7071" and "0.5"
    for session in res.sessions:
        assert session.first_load_s is not None
        # Both scale values need ≥ 2 reruns; 3 s of 0.15-0.45 s think time gives ~8 on a quiet
        # machine and still ≥ 2 if a busy one stretches each rerun to ~1 s.
        assert len(session.latencies_s) >= 2
        assert session.metric_values["scale"] == expected
    s = res.summary()
    assert s["reruns"] == sum(len(x.latencies_s) for x in res.sessions)
    assert s["p50_ms"] <= s["p95_ms"] <= s["p99_ms"] <= s["max_ms"]
    assert res.rss_peak_kib >= res.rss_end_kib > 0


def running(pid: int) -> bool:
    """Alive and not a zombie (an exited child stays in /proc until its parent reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.timeout(150)
@pytest.mark.skipif(
    shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists(),
    reason="nginx is not installed (`make serve` installs Debian's nginx; `apt-get install nginx`)",
)
def test_replicas_behind_nginx_survive_a_killed_replica():
    """12 students through deploy/serve.sh's nginx + 2 replicas; one replica is SIGKILLed 2.5 s in.

    With one loopback address per student, address stickiness puts students on both replicas
    (all 12 on one has odds of about 2⁻¹¹), so the kill disconnects some but not all. Each
    disconnected student must be served again by the survivor with its view rebuilt from its URL
    (the reloaded widget shows the value the server last confirmed or the change in flight)."""
    sl = load_benchmark("serve_load")
    cfg = sl.LoadConfig(
        sessions=12, duration_s=6.0, think_s=0.5, jitter=0.5, ramp_s=0.5, rerun_timeout_s=30, kill_at_s=2.5
    )
    with sl.serve_stack(2) as stack:
        res = sl.run_load(stack, cfg)
        pids = stack.replica_pids()
    assert not any(running(pid) for pid in pids.values()), "serve_stack must stop its replicas"

    assert res.errors == [] and res.exceptions == []
    assert res.killed is not None and res.killed[0].startswith("replica :")
    assert 1 <= len(res.disconnected) < cfg.sessions
    assert res.lost_anything == []
    assert all(len(s.recovered_after_s) == s.disconnects for s in res.sessions)
    assert max(res.recovered_after_s) < 10  # back within 10 s (RESULTS.md, "A lecture hall through nginx")
    assert all(s.first_load_s is not None and s.latencies_s for s in res.sessions)
    replicas = [label for label in res.per_process if label.startswith("replica")]
    assert len(replicas) == 2 and all(res.per_process[r][0] > 0 for r in replicas)
    assert res.per_process[res.killed[0]][1] == 0  # gone: no resident memory left
