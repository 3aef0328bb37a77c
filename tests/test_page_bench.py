"""AppTest (no browser) of the Kernels page: the device is described, nothing runs until the
button, a tiny sweep fills the charts and the error table, bad choices say why, and recorded GPU
results are shown only when assets/bench has them. Oracles: torch's own facts (CUDA or not), the
FLOP convention recomputed here, and the request's contestants."""

import torch
from apptest_helpers import chart, frame, plotly_array

from attn_core.bench.records import Case, tflops

PAGE = "pages/bench.py"


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


def test_recorded_gpu_results_are_read_with_their_labels(tmp_path):
    """Only files a GPU run wrote are shown; their meta labels device, date and versions."""
    from attn_core.explore.bench import recorded_gpu_runs

    assert recorded_gpu_runs(tmp_path) == []
    (tmp_path / "gpu-results-h200.json").write_text(
        '{"meta": {"device": "NVIDIA H200", "date": "2026-12-04", "versions": {"torch": "2.11"}},'
        ' "records": [{"impl": "sdpa", "ms": 1.0}]}'
    )
    (run,) = recorded_gpu_runs(tmp_path)
    assert run.meta["device"] == "NVIDIA H200" and run.rows == [{"impl": "sdpa", "ms": 1.0}]
