"""AppTest of the Serving page: defaults, each load mode, an SLO no deployment meets, a load over
the page's cap, the link from the Cost page.

Oracles written here: Llama-2-7B's published parameter count (6,738,415,616, its Hugging Face
model card) and its cache (2 · 32 layers · 4,096 · 2 B = 512 KiB a token), the A100-80GB's
81,920 MiB and 2,039 GB/s (datasheet, assets/gpus.json's sources), vLLM's defaults (90% of
memory, 16-token blocks) and the published runs read straight from assets/published/runs.json.
"""

import json
import math
from pathlib import Path

from apptest_helpers import chart, metric, ok, plotly_array

from attn_core.views import serving

PAGE = "pages/serving.py"
ROOT = Path(__file__).resolve().parents[2]
PARAMS_7B = 6_738_415_616
KV_PER_TOKEN_7B = 2 * 32 * 4096 * 2  # K and V, 32 layers, d = 4,096, bf16
A100_BYTES, A100_BW = 81_920 * 2**20, 2.039e12


def open_page(app, **query):
    return app(PAGE, **query)


def test_default_plans_one_gpu_and_draws_the_curve(app):
    at = open_page(app)
    ok(at)
    assert at.title[-1].value == "Serving"
    assert metric(at, "GPUs") == "1 = 1 × 1"
    # Sequences of 1,024 + 256 tokens one A100-80GB holds: (90% of memory − bf16 weights − 1 GiB
    # reserve) in 16-token blocks of 512 KiB a token, 80 blocks a sequence.
    blocks = (0.9 * A100_BYTES - 2 * PARAMS_7B - 2**30) // (16 * KV_PER_TOKEN_7B)
    assert metric(at, "sequences per replica") == f"{int(blocks // 80):,}"
    assert any("80%:" in m.value and "bound" in m.value for m in at.markdown)  # interval beside every time
    spec = chart(at, "TPOT vs output throughput per GPU")
    assert spec["layout"]["xaxis"]["type"] == "log" and spec["layout"]["xaxis"]["dtick"] == 1
    # gpt-fast's batch-1 Llama-2-7B bf16 run on an A100-80GB, as published: x = tok/s, TPOT = 1/rate.
    runs = json.loads((ROOT / "assets/published/runs.json").read_text())["runs"]
    row = next(r for r in runs if r["id"] == "gptfast-7b-bf16")
    pub = next(t for t in spec["data"] if "others' measurements" in t.get("name", ""))
    labels = pub["text"]
    i = next(k for k, t in enumerate(labels) if "gptfast-7b-bf16" in t)
    value = row["published"]["value"]
    assert math.isclose(plotly_array(pub["x"])[i], value) and math.isclose(
        plotly_array(pub["y"])[i], 1e3 / value
    )
    assert any(d.value["source"].eq("gpt-fast").any() for d in at.dataframe if "source" in d.value.columns)


def test_each_load_mode_renders(app):
    at = open_page(app, sv_section="plan")
    for mode in (serving.LoadMode.CONCURRENCY, serving.LoadMode.MAX):
        at.radio(key="sv_mode").set_value(mode).run()
        assert not at.exception, mode
        # a verdict either way (an SLO missed within the cap is an answer, not a failure)
        assert any("SLOs cannot be met" in e.value for e in at.error) or at.success, mode
        assert metric(at, "GPUs"), mode
        pct = next(d.value for d in at.dataframe if "statistic" in d.value.columns)
        p99 = pct[(pct["time"] == "TPOT") & (pct["statistic"] == "p99")].iloc[0]
        assert p99["bound (ms)"] <= p99["low (ms)"] <= p99["estimate (ms)"] <= p99["high (ms)"]


def test_an_slo_no_deployment_meets_says_so(app):
    # TPOT p99 0.5 ms: even 8 A100s only read a 7B model's bf16 weights once in this long.
    assert 2 * PARAMS_7B / (8 * A100_BW) > 0.5e-3
    at = open_page(app, sv_section="plan", sv_req=100, sv_tpot=0.5)
    assert not at.exception
    assert any("cannot be met within the cap of 8 GPUs" in e.value for e in at.error)
    assert metric(at, "GPUs") == "8 = 1 × 8"  # the cap, shown for what it does


def test_a_load_over_the_cap_is_refused_next_to_the_widget_and_the_rest_works(app):
    at = open_page(app, sv_out=4096, sv_req=1000)  # 1,000 requests × 4,096 tokens > 250,000
    assert not at.exception
    assert any(f"{1000 * 4096:,}" in e.value for e in at.error)
    assert any(i.value.startswith("Fix") for i in at.info)
    at.number_input(key="sv_req").set_value(30).run()  # 122,880 tokens, ~5,300 steps: within the caps
    ok(at)
    assert metric(at, "GPUs")


def test_the_cost_page_link_carries_model_and_gpu(app):
    at = app("pages/costs.py")
    at.selectbox(key="co_model").set_value("llama-3-8b").run()
    at.selectbox(key="co_gpu").set_value("h100-sxm").run()
    next(b for b in at.button if b.label == "Simulate serving it").click().run()
    assert not at.exception
    assert (
        at.session_state["_keep_co_model"] == "llama-3-8b" and at.session_state["_keep_sv_gpu"] == "h100-sxm"
    )
    at.switch_page(PAGE).run()  # AppTest does not follow st.switch_page: open it as the browser would
    ok(at)
    assert at.title[-1].value == "Serving"
    assert at.selectbox(key="co_model").value == "llama-3-8b"
    assert at.selectbox(key="sv_gpu").value == "h100-sxm"


def test_timeline_and_attention_variants(app):
    at = open_page(app, sv_section="timeline")
    ok(at)
    spec = chart(at, "Batch and KV cache occupancy over time")
    kv = plotly_array(spec["data"][1]["y"])
    assert 0 < kv.max() <= 100  # a share of the replica's blocks, in %
    at.radio(key="sv_section").set_value("MHA / GQA / MLA / hybrid").run()
    ok(at)
    rows = next(d.value for d in at.dataframe if "attention" in d.value.columns).set_index("attention")
    # Llama-2-7B: 32 layers, 32 heads of 128; GQA keeps 8 KV heads. K and V, bf16, in KiB.
    assert rows.loc["MHA", "KV cache per token (KiB)"] == KV_PER_TOKEN_7B / 2**10
    assert rows.loc["GQA", "KV cache per token (KiB)"] == 2 * 32 * 8 * 128 * 2 / 2**10


def test_a_pasted_config_goes_over_as_the_cost_pages_config_choice():
    """The link speaks the Cost page's own radio options (lab_ui/cost_inputs.py) under its widget
    keys, and leaves out a GPU the simulator does not know (the Cost page's "this server (measured)")."""
    from lab_ui.cost_inputs import SOURCES
    from lab_ui.open_page import serving_values

    assert serving_values("llama-2-7b", None, "h200") == {
        "co_src": SOURCES[0],
        "co_model": "llama-2-7b",
        "sv_gpu": "h200",
    }
    assert serving_values(None, '{"model_type": "llama"}', "server") == {
        "co_src": SOURCES[1],
        "co_paste": '{"model_type": "llama"}',
    }
