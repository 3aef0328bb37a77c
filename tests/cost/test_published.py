"""GPU runs published by others (assets/published/runs.json) priced by the cost model
(attn_core/cost/published.py), the `published` command, and the two pages that show them.

Oracles: the rows' own conditions and the GPUs' datasheet peaks, with each bound recomputed here
by hand from Llama 2 7B's config.json (32 layers, d 4,096, d_ff 11,008, vocabulary 32,000), not
through the cost model; and the figures as their publishers printed them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from apptest_helpers import frame

from attn_core.cost import published as pub
from attn_core.cost import published_rows as pub_rows
from attn_core.cost.published_cli import main as published_main

ROWS = json.loads(pub.RUNS_FILE.read_text())["runs"]
BY_ID = {p.run.id: p for p in pub.priced_runs()}

# Llama 2 7B, by hand: per layer 4·d² attention weights, 3·d·d_ff MLP weights, 2 norms of d.
D, D_FF, LAYERS, VOCAB = 4096, 11008, 32, 32000
LAYER_MATMUL = 4 * D * D + 3 * D * D_FF  # 202,375,168 weights a token multiplies through per layer
MATMUL = LAYERS * LAYER_MATMUL + VOCAB * D  # + the output head: 2 FLOPs each per token
NON_EMBEDDING = LAYERS * (LAYER_MATMUL + 2 * D) + D + VOCAB * D  # + final norm and head
KV_PER_TOKEN = 2 * LAYERS * D * 2  # K and V, 32 heads × 128, 2 bytes: 512 KiB
PAIR_FLOPS = 4 * D  # QKᵀ and PV: 2 FLOPs × d_h × h each, per query–key pair per layer
A100_BW, A100_BF16 = 2.039e12, 312e12  # A100 80GB SXM datasheet: 2,039 GB/s, 312 TFLOP/s dense

SCHEMA = {
    "id",
    "source",
    "where",
    "framework",
    "version",
    "model",
    "preset",
    "gpu",
    "gpu_preset",
    "n_gpus",
    "parallelism",
    "precision",
    "batch",
    "input_len",
    "output_len",
    "regime",
    "method",
    "published",
    "scenario",
    "metric",
    "concurrency",
    "held_out",
}


def test_the_file_has_the_rows_and_the_fields_it_promises():
    assert len(ROWS) >= 60
    sources = {r["source"] for r in ROWS}
    assert {
        "gpt-fast",
        "TensorRT-LLM",
        "MLPerf Inference",
        "SGLang",
        "vLLM",
        "FlashAttention",
        "FlashMLA",
    } <= sources
    ids = [r["id"] for r in ROWS]
    assert len(set(ids)) == len(ids)
    for r in ROWS:
        assert r.keys() >= SCHEMA, r["id"]
        assert set(r["precision"]) == {"weights", "kv", "compute"}, r["id"]
        assert {"value", "unit", "text"} <= r["published"].keys(), r["id"]
        assert r["where"] and r["framework"] and r["version"], r["id"]
        assert r["scenario"] in pub_rows.SCENARIOS and r["metric"] in pub_rows.METRICS, r["id"]
        if r["method"] in ("decode-step", "ttft", "static-batch"):  # a fixed batch and lengths
            assert all(isinstance(r[k], int) and r[k] >= 1 for k in ("batch", "input_len", "output_len"))
            assert r["concurrency"] == r["batch"], r["id"]  # what a simulator replays
        if r["scenario"] == "serving-server":  # Poisson arrivals: the rate is what a simulator replays
            assert r["replay"]["request_rate_per_s"] > 0, r["id"]
    # The regimes the Cost page bands and the kernels the Kernels page lists are all there.
    regimes = {p.band for p in BY_ID.values()}
    assert regimes == {"decode-b1", "prefill-b1", "batched-decode", "serving", "moe", "kernel"}
    kernels = {r.get("kernel") for r in ROWS if r["regime"] == "kernel"}
    assert {"FA2", "FA3", "FA4", "cuDNN", "FlashMLA"} <= kernels


# Sources kept apart to judge predictions: no row of theirs may be fitted on (held_out: true).
HELD_OUT_SOURCES = ("perf-overview.md", "NIM", "inference_results_v5.0", "mlperf_inference_results_v5.0")


def test_rows_from_held_out_sources_are_marked_and_left_out_of_fits_and_bands():
    for r in ROWS:
        from_held_out = (
            any(s in r["where"] for s in HELD_OUT_SOURCES)
            or ("benchmark_vllm_060" in r["where"] and "70B" in r["model"])
            or ("closed/AMD" in r["where"] and "v4.1" in r["where"])
        )
        assert r["held_out"] is from_held_out, r["id"]
    row = json.loads(json.dumps(ROWS[0])) | {"id": "held", "held_out": True}
    held = pub.price(pub.parse_run(row))
    assert pub.fit_runs((held, BY_ID["gptfast-7b-bf16"])) == (BY_ID["gptfast-7b-bf16"],)
    assert pub.band("decode-b1", (held,)) is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("where"), "missing where"),
        (lambda r: r["published"].update(unit="tokens"), "reads tok/s/user"),
        (lambda r: r["published"].update(value=-1), "positive number"),
        (lambda r: r.update(batch=0), "batch must be a whole number"),
        (lambda r: r["precision"].update(compute="int4"), "compute must be one of"),
        (lambda r: r.update(regime="moe"), "unknown method"),
        (lambda r: r.update(preset=None), "names a preset"),
        (lambda r: r.update(cuda_graphs="yes"), "cuda_graphs must be true, false or absent"),
    ],
)
def test_a_malformed_row_is_refused_by_name(change, message):
    row = json.loads(json.dumps(ROWS[0]))
    change(row)
    with pytest.raises(pub.PublishedError, match=message) as err:
        pub.parse_run(row)
    assert "gptfast-7b-bf16" in str(err.value)


def test_a_broken_or_repeating_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "runs.json"
    bad.write_text("{not json")
    with pytest.raises(pub.PublishedError, match=r"runs\.json"):
        pub.load_runs(bad)
    bad.write_text(json.dumps({"runs": [ROWS[0], ROWS[0]]}))
    with pytest.raises(pub.PublishedError, match="ids repeat"):
        pub.load_runs(bad)


def test_gpt_fast_batch_1_decode_bound_by_hand():
    """Llama 2 7B bf16 on one A100, prompt 5, 200 tokens: each step reads the weights (one row of the
    input table) and a cache of 5 … 204 tokens. 13,214,695,424 B is card 13's weights read."""
    weights = (NON_EMBEDDING + D) * 2
    assert weights == 13_214_695_424
    cache_tokens = sum(5 + i for i in range(200))  # 20,900
    step_s = (200 * weights + cache_tokens * KV_PER_TOKEN) / 200 / A100_BW
    p = BY_ID["gptfast-7b-bf16"]
    assert p.bound == pytest.approx(1 / step_s, rel=1e-12)  # ≈ 153.7 tok/s
    assert p.attained == pytest.approx(104.9 * step_s, rel=1e-12) == pytest.approx(0.6827, abs=1e-4)


def test_tensorrt_llm_batch_1_prefill_bound_by_hand():
    """LLaMA 7B fp16 on one A100, a 2,048-token prompt, 133 ms published: compute-bound, with
    2·(matmul weights) FLOPs per token plus 4·d per causal pair T(T+1)/2 in each layer."""
    T = 2048
    flops = 2 * MATMUL * T + LAYERS * PAIR_FLOPS * T * (T + 1) // 2
    compute_ms = flops / A100_BF16 * 1e3
    memory_ms = ((NON_EMBEDDING + D * D) * 2 + T * KV_PER_TOKEN) / A100_BW * 1e3  # < 10 ms
    assert memory_ms < compute_ms
    p = BY_ID["trtllm-7b-a100-ttft2048"]
    assert p.bound == pytest.approx(compute_ms, rel=1e-12)  # ≈ 90.26 ms
    assert p.attained == pytest.approx(compute_ms / 133, rel=1e-12) == pytest.approx(0.6787, abs=1e-4)


def test_tensorrt_llm_static_batch_bound_by_hand():
    """LLaMA 7B fp16 on one A100, 384 prompts of 128 then 128 output tokens, 5,586 out tok/s
    published: prefill of 384 × 128 tokens at peak (it yields each sequence's first token), then
    N − 1 = 127 steps, step i reading the weights (384 input rows) and 384 caches of 128 + i tokens
    at full bandwidth. (Counting N steps would make the ceiling lower than a run could reach.)"""
    B, P, N = 384, 128, 128
    ttft_s = B * (2 * MATMUL * P + LAYERS * PAIR_FLOPS * P * (P + 1) // 2) / A100_BF16
    step_weights = (NON_EMBEDDING + B * D) * 2
    decode_s = ((N - 1) * step_weights + B * sum(P + i for i in range(N - 1)) * KV_PER_TOKEN) / A100_BW
    rate = B * N / (ttft_s + decode_s)
    p = BY_ID["trtllm-7b-a100-bs384"]
    assert p.bound == pytest.approx(rate, rel=1e-12)  # ≈ 9,280 out tok/s
    assert p.attained == pytest.approx(5586 / rate, rel=1e-12)


def test_kernel_rows_against_the_datasheet_peaks():
    assert BY_ID["fa3-h100-fwd-bf16-best"].attained == pytest.approx(740 / 989)  # the blog's "75%"
    assert BY_ID["fa4-b200-fwd-bf16-best"].attained == pytest.approx(1613 / 2250)  # the paper's "71%"
    assert BY_ID["fa3-h100-fwd-fp8-best"].attained == pytest.approx(1200 / 1979)  # fp8 dense peak
    assert BY_ID["flashmla-h800-decode-bw"].attained == pytest.approx(3000 / 3350)


def test_no_shipped_row_attains_more_than_its_bound():
    for p in pub.priced_runs():
        assert p.defect is None and 0 < p.attained <= 1, p.run.id


def test_a_row_faster_than_its_bound_is_a_defect_never_over_100_percent():
    row = json.loads(json.dumps(next(r for r in ROWS if r["id"] == "gptfast-7b-bf16")))
    row["published"]["value"] = 500.0  # over the 153.7 tok/s a 2,039 GB/s A100 allows
    p = pub.price(pub.parse_run(row))
    assert p.ratio > 1 and p.attained is None and "defect of the calculator or of the row" in p.defect
    assert pub.band("decode-b1", (p,)) is None  # left out of the range


def test_the_command_prints_every_row_and_json(capsys):
    assert published_main(["--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in doc["rows"]] == [r["id"] for r in ROWS]
    assert all(0 < r["attained"] <= 1 and r["defect"] is None for r in doc["rows"])
    assert doc["rows"][0]["bound"] == pytest.approx(BY_ID["gptfast-7b-bf16"].bound)
    assert "published by others" in doc["note"] and set(doc["bands"]) >= {"decode-b1", "prefill-b1", "moe"}
    assert published_main(["--regime", "kernel"]) == 0
    text = capsys.readouterr().out
    assert "fa4-b200-fwd-bf16-best" in text and "gptfast" not in text and "attained 71.7%" in text
    assert published_main(["--regime", "nope"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_python_m_attn_core_published_runs_without_torch():
    """The real command line: the provenance line first, the rows as text; `-X importtime` lists
    every module imported, and torch is not among them."""
    root = Path(__file__).resolve().parents[2]
    cmd = [sys.executable, "-X", "importtime", "-m", "attn_core", "published"]
    p = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("GPU runs published by others (not measured by this lab)")
    assert "gptfast-7b-bf16  [batch-1 decode]" in p.stdout and "attained 68.3%" in p.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in p.stderr.splitlines() if "|" in line}
    assert "attn_core.cost.published" in imported and "torch" not in imported


def _whole(at):
    at.radio(key="co_section").set_value("Whole model").run()
    assert not at.exception
    return at


def test_the_cost_page_shows_the_published_range_beside_its_bounds(app):
    at = _whole(app("pages/costs.py"))
    decode = pub.band("decode-b1")
    lines = [m.value for m in at.markdown if "Published batch-1 decode runs attained" in m.value]
    assert (
        len(lines) == 1 and f"{100 * decode.low:.3g}%" in lines[0] and f"{100 * decode.high:.3g}%" in lines[0]
    )
    assert any("Published batch-1 prefill runs attained" in m.value for m in at.markdown)
    assert any("published by others, not measured by this lab" in m.value for m in at.markdown)
    same = next(m.value for m in at.markdown if m.value.startswith("Published on this model and these GPUs"))
    assert "`gptfast-7b-bf16` (gpt-fast, bf16 weights) 68.3%" in same  # Llama 2 7B on one A100 80GB
    assert "int8 weights) 50.8%" in same and "tp2" not in same  # two GPUs are another setup
    rows = frame(at, "attained")
    assert set(rows["regime"]) == {"batch-1 decode", "batch-1 prefill"}
    assert "gpt-fast" in set(rows["source"]) and rows["published"].iloc[0] == '104.9 tokens/s, "1397.31 GB/s"'


def test_the_cost_page_picks_the_moe_and_batched_regimes(app):
    at = app("pages/costs.py")
    at.selectbox(key="co_model").set_value("mixtral-8x7b").run()
    _whole(at)
    assert any("Published mixture of experts runs attained" in m.value for m in at.markdown)
    at.selectbox(key="co_model").set_value("llama-2-7b").run()
    at.number_input(key="co_B").set_value(8).run()
    assert any("Published batched decode runs attained" in m.value for m in at.markdown)
    assert any("this what-if has batch 8" in m.value for m in at.markdown)


def test_a_broken_runs_file_is_one_message_and_the_page_still_works(app, tmp_path, monkeypatch):
    broken = tmp_path / "runs.json"
    broken.write_text('{"runs": []}')
    monkeypatch.setattr(pub, "RUNS_FILE", broken)
    pub.priced_runs.cache_clear()
    try:
        at = _whole(app("pages/costs.py"))
        assert any("no 'runs' list" in e.value for e in at.error)
        assert frame(at, "quantity") is not None  # the time bounds are still there
    finally:
        pub.priced_runs.cache_clear()


def test_the_kernels_page_lists_the_published_kernel_rows(app):
    at = app("pages/kernels.py")
    assert not at.exception
    assert any(h.value.startswith("Published kernel results (published by others") for h in at.subheader)
    rows = frame(at, "kernel")
    assert {"FA2", "FA3", "FA4", "cuDNN", "FlashMLA"} <= set(rows["kernel"])
    fa4 = rows[rows["kernel"] == "FA4"].iloc[0]
    assert fa4["attained"] == "71.7%" and fa4["peak"] == "2,250 TFLOP/s"


def test_a_fixed_length_throughput_row_counts_every_prompt_by_hand():
    """Llama 2 7B bf16 on one A100: requests of P = 2,048 prompt and N = 128 output tokens, C = 64
    in flight. Per request: the prompt's 2·(matmul weights)·P + 4·d per causal pair (yielding the
    first token), then N − 1 steps each 2·(matmul weights) + 4·d·(c + 1) per layer at
    c = P … P + N − 2 cached; bytes: the cache written (P tokens) and read (c at each step) plus a
    C-th of each step's weights."""
    P, N, C = 2048, 128, 64
    flops = 2 * MATMUL * P + LAYERS * PAIR_FLOPS * P * (P + 1) // 2
    flops += sum(2 * MATMUL + LAYERS * PAIR_FLOPS * (c + 1) for c in range(P, P + N - 1))
    step_weights = (NON_EMBEDDING + C * D) * 2  # the weights and C rows of the input table
    bytes_ = P * KV_PER_TOKEN + sum(c * KV_PER_TOKEN for c in range(P, P + N - 1))
    bytes_ += (N - 1) * step_weights / C
    rate = N / max(flops / A100_BF16, bytes_ / A100_BW)
    row = json.loads(json.dumps(next(r for r in ROWS if r["id"] == "trtllm-7b-a100-bs384")))
    row |= {
        "id": "fixed",
        "method": "fixed-length-throughput",
        "scenario": "serving-offline",
        "batch": None,
        "input_len": P,
        "output_len": N,
        "concurrency": C,
        "published": {"value": 100.0, "unit": "out tok/s", "text": "100 tok/s"},
    }
    p = pub.price(pub.parse_run(row))
    assert p.bound == pytest.approx(rate, rel=1e-9)  # ≈ 1,332 out tok/s: the prompts dominate
    output_only = A100_BF16 / (2 * MATMUL)  # counting only the output tokens' products, one token each
    assert output_only / p.bound > 10  # a long prompt, short output: output-only overstated it 17.7×
    row.pop("concurrency")
    with pytest.raises(pub.PublishedError, match="concurrency must be a whole number"):
        pub.parse_run(row)


def test_an_fp8_row_on_mi300x_is_priced_at_amds_fp8_peak():
    """AMD's MI300X data sheet: 2,614.9 TFLOP/s dense fp8 (5,229.8 with sparsity); before the GPU
    table carried it every fp8 row on an MI300X was refused."""
    row = json.loads(json.dumps(next(r for r in ROWS if r["id"] == "trtllm-7b-h100-ttft2048")))
    row |= {"id": "mi300x", "gpu": "MI300X", "gpu_preset": "mi300x"}
    p = pub.price(pub.parse_run(row))
    h100 = BY_ID["trtllm-7b-h100-ttft2048"]  # compute-bound at 1,979 TFLOP/s
    assert p.bound == pytest.approx(h100.bound * 1979 / 2614.9, rel=1e-12)


def test_the_json_carries_what_a_simulator_replays(capsys):
    """MLPerf v4.1's H200 Llama 2 70B Server run: 101.25 scheduled samples/s (Poisson), TTFT ≤ 2 s
    and TPOT ≤ 200 ms (its mlperf_log_summary.txt), 8 instances × gpu_batch_size 896."""
    assert published_main(["--json", "--regime", "serving"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    r = rows["mlperf41-70b-8xh200-server-tpot"]
    assert (r["scenario"], r["metric"], r["concurrency"], r["held_out"]) == (
        "serving-server",
        "TPOT ms",
        8 * 896,
        False,
    )
    replay = {"num_requests": None, "request_rate_per_s": 101.25, "slo_ttft_ms": 2000.0, "slo_tpot_ms": 200.0}
    assert r["replay"] == replay | {"dataset": "MLPerf OpenOrca"}
    assert r["published"]["value"] == 123.263268  # "Mean Time to Output Token (ns) : 123263268"
