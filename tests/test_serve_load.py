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
from pathlib import Path

import pytest
from conftest import load_benchmark

ROOT = Path(__file__).resolve().parents[1]


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
