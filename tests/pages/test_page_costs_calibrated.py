"""AppTest of the Cost page's calibrated column: shown beside the bounds where a kernel bench run
exists for the chosen hardware (a recorded GPU run, or this server's Kernels sweep as "this server
(measured)"), a one-line hint where none does, and a corrupt run named while the rest works.
Oracle: the hand computation of tests/calibration_reference.py (no attn_core inside)."""

from __future__ import annotations

import json

import pytest
from apptest_helpers import frame
from calibration_reference import cpu_run, gpu_run, llama2_7b

from attn_core.cost.units import format_seconds
from attn_core.views import calibrations

PAGE = "pages/costs.py"
WHOLE = {"co_section": "whole", "co_P": 2048, "co_N": 3}
COLUMN = "calibrated (measured rates, gpu-results-h200-fixture.json, 2026-12-05 06:00 UTC)"


@pytest.fixture(autouse=True)
def no_runs(tmp_path, monkeypatch):
    """No server sweep and an empty recorded-runs folder unless a test adds one."""
    monkeypatch.setattr(calibrations, "RECORDED_DIR", tmp_path)
    calibrations.clear_server_run()
    yield tmp_path
    calibrations.clear_server_run()


def times(at):
    return frame(at, "lower bound").set_index("quantity")


def test_without_a_run_the_page_says_how_to_get_one(app):
    at = app(PAGE, **WHOLE)
    assert not at.exception and at.error.len == 0
    assert not any(c.startswith("calibrated") for c in times(at).columns)
    (hint,) = [i.value for i in at.info if "No kernel bench run" in i.value]
    assert "NVIDIA A100 80GB SXM" in hint and "**Kernels**" in hint
    assert "commit" not in hint and "assets/bench" not in hint  # a developer's step belongs in the docs
    assert calibrations.SERVER not in at.selectbox(key="co_gpu").options


def test_a_recorded_gpu_run_adds_the_calibrated_column(app, no_runs):
    (no_runs / "gpu-results-h200-fixture.json").write_text(json.dumps(gpu_run()))
    at = app(PAGE, co_gpu="h200", **WHOLE)
    assert not at.exception and at.error.len == 0
    t, hand = times(at), llama2_7b(2048, 3)
    assert t.loc["time to first token (compute-bound)", COLUMN] == format_seconds(hand["ttft"])
    assert t.loc["decode step at P", COLUMN] == format_seconds(hand["decode"])
    assert t.loc["P + 3 generated tokens", COLUMN] == format_seconds(hand["total"])
    caption = next(c.value for c in at.caption if c.value.startswith("**Calibrated**"))
    assert "NVIDIA H200" in caption and "max(Σ F_w / R_mm(rows), W / BW)" in caption
    assert "R_attn = 300 TFLOP/s (sdpa-flash at L = 2,048, d = 128, fp16, causal)" in caption
    assert not any("No kernel bench run" in i.value for i in at.info)
    # another GPU has no run: the hint, and the bounds alone
    at.selectbox(key="co_gpu").set_value("a100-80gb").run()
    assert COLUMN not in times(at).columns and any("No kernel bench run" in i.value for i in at.info)


def test_this_server_after_a_kernels_sweep(app):
    calibrations.publish_server_run(**cpu_run())
    at = app(PAGE, co_dtype="fp32", co_model="gpt2", co_T=512, co_P=512, co_N=2, co_section="whole")
    assert calibrations.SERVER in at.selectbox(key="co_gpu").options
    at.selectbox(key="co_gpu").set_value(calibrations.SERVER).run()
    assert not at.exception and at.error.len == 0
    assert at.query_params["co_gpu"] == "server"  # a link carries the id, not the label
    title = next(m.value for m in at.markdown if m.value.startswith("**Time on"))
    assert "this server (measured" in title and "its measured peaks" in title
    column = "calibrated (measured rates, this server's Kernels sweep, 2026-12-05 06:30 UTC)"
    assert column in times(at).columns
    # the run measured fp32 only: in fp16 the column gives way to one line saying why
    at.selectbox(key="co_dtype").set_value("fp16").run()
    assert not at.exception and column not in times(at).columns
    assert any("has no fp16 matmul rate" in i.value for i in at.info)


def test_a_corrupt_run_is_named_and_the_rest_works(app, no_runs):
    (no_runs / "gpu-results-broken.json").write_text('{"meta": {"device": "NVIDIA H200"}')
    (no_runs / "gpu-results-h200-fixture.json").write_text(json.dumps(gpu_run()))
    at = app(PAGE, co_gpu="h200", **WHOLE)
    assert not at.exception and at.error.len == 0
    (warning,) = [w.value for w in at.warning if "gpu-results-broken.json" in w.value]
    assert "not JSON" in warning and "ignored" in warning
    assert COLUMN in times(at).columns  # the good run still calibrates


def test_a_link_to_the_server_without_a_sweep_falls_back(app):
    at = app(PAGE, co_gpu="server", **WHOLE)
    assert not at.exception and at.selectbox(key="co_gpu").value == "a100-80gb"
    assert any("`server` is not allowed here" in c.value for c in at.caption)
