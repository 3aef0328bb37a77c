"""AppTest (no browser) of the Kernels page: the device is described, nothing runs until the
button, a tiny sweep fills the charts and the error table, bad choices say why, and recorded GPU
results are shown only when assets/bench has them. Oracles: torch's own facts (CUDA or not), the
FLOP convention recomputed here, and the request's contestants."""

import json

import torch
from apptest_helpers import chart, frame, plotly_array

from attn_core.kernels.records import Case, tflops

PAGE = "pages/kernels.py"


def tiny(at, impls=("naive", "sdpa", "sdpa-efficient", "online", "triton")):
    at.multiselect(key="kb_L").set_value([64])
    at.multiselect(key="kb_impls").set_value(list(impls))
    at.slider(key="kb_H").set_value(2)
    at.selectbox(key="kb_Hkv").set_value(1)
    at.toggle(key="kb_causal").set_value(True)
    return at.run()


def test_describes_the_device_and_waits_for_the_button(app):
    at = app(PAGE)
    assert not at.exception and at.error.len == 0
    if not torch.cuda.is_available():
        assert any("no GPU" in i.value for i in at.info)
        assert any("measured here: fp32 matmul" in m.value for m in at.markdown)
    assert any("No GPU results are recorded" in i.value for i in at.info)  # assets/bench has none yet
    assert not any("verdict" in d.value.columns for d in at.dataframe)  # nothing ran yet


def test_tiny_sweep_fills_charts_and_error_table(app):
    at = tiny(app(PAGE))
    at.button(key="kb_run").click().run()
    assert not at.exception and at.error.len == 0
    errors = frame(at, "verdict").set_index("contestant")
    assert errors.loc["SDPA (auto)", "verdict"] == "✓ pass"
    assert errors.loc["online (ours, torch)", "verdict"] == "✓ pass"
    assert errors.loc["naive (L×S matrix)", "kernel that ran"] == "naive"
    if not torch.cuda.is_available():
        assert errors.loc["SDPA (auto)", "kernel that ran"] == "flash (CPU)"
        assert errors.loc["SDPA mem-efficient", "note"].startswith("unsupported: No viable backend")
        assert errors.loc["Triton (ours)", "note"] == "interpreted: time not meaningful"
        assert errors.loc["Triton (ours)", "verdict"] == "✓ pass"
    # the throughput chart agrees with the time chart under 4·B·H·L·S·D / 2 (causal)
    ms = chart(at, "Time per call")["data"]
    tf = chart(at, "Throughput")["data"]
    case = Case(64, heads=2, kv_heads=1, causal=True)
    for m, t in zip(ms, tf, strict=True):
        assert m["name"] == t["name"]
        assert plotly_array(t["y"])[0] == tflops(case, float(plotly_array(m["y"])[0]))
    chart(at, "Roofline")
    # a rerun without the button keeps the results and does not rerun the sweep
    at.slider(key="kb_budget").set_value(5).run()
    assert frame(at, "verdict").shape[0] == 5


def test_bad_choice_says_why_and_the_page_keeps_working(app):
    at = app(PAGE)
    at.multiselect(key="kb_impls").set_value([]).run()
    assert not at.exception
    assert any("contestants: pick one or more" in e.value for e in at.error)
    at.button(key="kb_run").click().run()  # nothing runs
    assert not at.exception and not any("verdict" in d.value.columns for d in at.dataframe)


def _record(impl, L, tflops, **kw):
    row = {
        "impl": impl,
        "backend": None,
        "device": "cuda",
        "dtype": "bf16",
        "seq_len": L,
        "head_dim": 128,
        "causal": False,
        "ms": 1.0,
        "tflops": tflops,
        "ok": True,
        "heads": 16,
        "kv_heads": 16,
    }
    return {**row, **kw}


def test_recorded_gpu_results_are_shown_with_their_labels(app, tmp_path, monkeypatch):
    """Only files a GPU run wrote are shown; their meta labels device, date and versions; the
    target ratio is Triton over the best correct SDPA backend at L = 8,192 (here 300 / 500)."""
    from attn_core.views import kernels

    assert kernels.recorded_gpu_runs(tmp_path) == []
    rows = [
        _record("sdpa-flash", 8192, 400.0),
        _record("sdpa-cudnn", 8192, 500.0),
        _record("sdpa-math", 8192, 900.0, ok=False),  # wrong answers do not set the bar
        _record("triton", 8192, 300.0),
        _record("triton", 4096, 280.0),
        _record("triton", 8192, 999.0, kv_heads=4),  # GQA: not the headline family
    ]
    meta = {
        "device": "NVIDIA H200",
        "date": "2026-12-04 05:00 UTC",
        "versions": {"torch": "2.11", "triton": "3.6"},
    }
    (tmp_path / "gpu-results-h200.json").write_text(json.dumps({"meta": meta, "records": rows}))
    (run,) = kernels.recorded_gpu_runs(tmp_path)
    assert run.triton_vs_best_sdpa() == 300.0 / 500.0
    assert [(r["contestant"], r["L"]) for r in run.headline_rows()][-2:] == [
        ("Triton (ours)", 8192),
        ("Triton (ours)", 4096),
    ]
    monkeypatch.setattr(kernels, "RESULTS_DIR", tmp_path)
    at = app(PAGE)
    assert not at.exception
    assert any(
        "NVIDIA H200" in m.value and "2026-12-04" in m.value and "triton 3.6" in m.value for m in at.markdown
    )
    assert any("**0.60×** the best SDPA" in m.value for m in at.markdown)
    chart(at, "Recorded GPU throughput")


def test_a_second_visitor_sees_busy_and_the_last_results(app, monkeypatch):
    from attn_core.views import kernels

    monkeypatch.setattr(kernels, "UNWIND_WAIT_S", 0.1)  # how long a run waits for a stopped sweep to unwind
    at = tiny(app(PAGE))
    with kernels._LOCK:  # another session's sweep holds the bench
        at.button(key="kb_run").click().run()
    assert not at.exception
    assert any("Another visitor's sweep is running" in w.value for w in at.warning)


def test_the_sweep_calibrates_the_cost_calculator(app, tmp_path, capsys):
    """After a sweep the page offers its rates to the Cost calculator (the hardware choice, the
    sweep's dtype, the whole-model section) and as JSON that `cost --calibration` reads; the
    calibrated attention rate there is the fastest correct contestant's on this page."""
    from attn_core.cost.cli import main
    from attn_core.cost.units import format_rate
    from attn_core.views import calibrations

    calibrations.clear_server_run()
    try:
        at = tiny(app(PAGE), impls=("naive", "sdpa", "online"))
        at.button(key="kb_run").click().run()
        assert not at.exception
        # every contestant passes at this size (checked above): the fastest one's TFLOP/s, as charted
        fastest = max(float(plotly_array(t["y"])[0]) for t in chart(at, "Throughput")["data"])
        if torch.cuda.is_available():  # a GPU server calibrates its preset, not "this server"
            return
        at.button(key="kb_costs").click().run()
        keep = {k: at.session_state[f"_keep_{k}"] for k in ("co_gpu", "co_dtype", "co_section")}
        assert keep == {"co_gpu": calibrations.SERVER, "co_dtype": "fp32", "co_section": "whole"}
        at.switch_page("pages/costs.py").run()
        assert not at.exception and at.error.len == 0
        assert any(
            c.startswith("calibrated (measured rates, this server") for c in frame(at, "lower bound").columns
        )
        caption = next(c.value for c in at.caption if c.value.startswith("**Calibrated**"))
        assert f"R_attn = {format_rate(fastest * 1e12, 'FLOP/s', 1)} (" in caption
        run = tmp_path / "kernel-run.json"
        run.write_text(json.dumps(calibrations.server_run()))
        assert (
            main(["cost", "--model", "gpt2", "--seq-len", "64", "--dtype", "fp32", "--calibration", str(run)])
            == 0
        )
        assert "Calibrated (measured rates, " in capsys.readouterr().out
    finally:
        calibrations.clear_server_run()


def test_a_corrupt_recorded_file_is_skipped_by_name_and_the_page_stays(app, tmp_path, monkeypatch):
    """One unreadable file in assets/bench/ (cut short, not an object, a record that is not an
    object) is named in a warning with what is wrong; the good run beside it is still shown and
    nothing blames the visitor's settings."""
    from attn_core.views import kernels

    good = {
        "meta": {"device": "NVIDIA H100", "date": "2026-12-01"},
        "records": [_record("triton", 8192, 300.0)],
    }
    (tmp_path / "gpu-results-a-good.json").write_text(json.dumps(good))
    (tmp_path / "gpu-results-b-cut.json").write_text(json.dumps(good)[:40])
    (tmp_path / "gpu-results-c-list.json").write_text("[1, 2]")
    (tmp_path / "gpu-results-d-record.json").write_text(json.dumps({"meta": {}, "records": [3]}))
    problems: list[str] = []
    runs = kernels.recorded_gpu_runs(tmp_path, problems)
    assert [r.file for r in runs] == ["gpu-results-a-good.json"]
    assert [p.split(" was skipped")[0] for p in problems] == [
        "assets/bench/gpu-results-d-record.json",
        "assets/bench/gpu-results-c-list.json",
        "assets/bench/gpu-results-b-cut.json",
    ]
    assert "record 0 is not an object" in problems[0] and "Unterminated string" in problems[2]
    monkeypatch.setattr(kernels, "RESULTS_DIR", tmp_path)
    at = app(PAGE)
    assert not at.exception and not at.error
    warned = [w.value for w in at.warning]
    assert sum("gpu-results-" in w and "was skipped" in w for w in warned) == 3
    assert any("NVIDIA H100" in m.value for m in at.markdown)


def test_a_partial_sweep_stays_with_its_visitor(app):
    """A naive-only sweep (its attention rate made the next visitor's time to first token 20,600 s)
    does not become this server's calibration: the Cost page keeps its previous state, the
    visitor is told why and can download the run. A sweep that times SDPA to its end does."""
    from attn_core.views import calibrations

    calibrations.clear_server_run()
    try:
        at = tiny(app(PAGE), impls=("naive",))
        at.button(key="kb_run").click().run()
        assert not at.exception and at.dataframe  # the visitor sees the sweep
        assert calibrations.server_run() is None and not calibrations.available().has_server_cpu
        assert any(
            "This sweep stays yours" in c.value and "no correct SDPA timing" in c.value for c in at.caption
        )
        assert at.get("download_button")  # the run, to use with cost --calibration
        at = tiny(app(PAGE), impls=("naive", "sdpa"))
        at.button(key="kb_run").click().run()
        assert not at.exception
        run = calibrations.server_run()
        assert run is not None and {r["impl"] for r in run["records"]} >= {"naive", "sdpa"}
        assert not any("This sweep stays yours" in c.value for c in at.caption)
    finally:
        calibrations.clear_server_run()
