"""One decode step and one time to first token wherever they are shown: the Cost page's view, the
CLI's JSON and the report (`cost_report`) agree to the digit, for a dense model (Llama 3 8B), a
mixture of experts with MLA (DeepSeek-V3) and a hybrid with Gated DeltaNet layers (Qwen3-Next),
each against a hand computation from the model's dimensions (tests/time_reference.py).

Oracle: the config's dimensions and the GPU's datasheet peaks (H100 SXM: 989 TFLOP/s dense bf16,
3,350 GB/s), nothing of attn_core. The hand sums are exact integers, so only the two divisions and
the max round: rel 1e-12 leaves room for the cost model summing the same integers as floats."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from time_reference import bounds

from attn_core.cost.cli import main
from attn_core.cost.units import format_seconds
from attn_core.views import costs as page

H100_PEAK, H100_BW = 989e12, 3_350e9
MODELS = ["llama-3-8b", "deepseek-v3", "qwen3-next-80b-a3b"]


def cli_json(name: str, P: int, B: int) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(
            [
                "cost",
                "--model",
                name,
                "--seq-len",
                str(P),
                "--batch",
                str(B),
                "--dtype",
                "bf16",
                "--gpu",
                "h100-sxm",
                "--gen-len",
                "3",
                "--json",
            ]
        )
    assert rc == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize(("P", "B"), [(4096, 1), (1000, 3)])
def test_page_cli_and_report_show_one_decode_step_and_ttft(name, P, B):
    hand = bounds(name, P, B, 2, H100_PEAK, H100_BW)
    v = page.view(
        page.load_preset(name),
        page.Workload(P, B, P, 3),
        page.Precision("bf16"),
        page.Hardware(page.load_gpu("h100-sxm")),
        name,
    )
    r, j = v.report, cli_json(name, P, B)
    # the report, against the hand computation
    assert r.timing.prefill.total == hand["prefill_flops"]
    assert r.decode.floor.count.bytes == hand["decode_bytes"]
    assert r.timing.ttft_s == pytest.approx(hand["ttft"], rel=1e-12)
    assert r.decode.seconds_per_step == pytest.approx(hand["decode"], rel=1e-12)
    # one step: the decode bound at T = P, the first step of the whole-model times, the GQA table's row
    assert r.timing.decode_step_s == r.decode.seconds_per_step
    # the CLI's JSON: the same numbers, every key that carries them
    assert j["ttft_ms_lower_bound"] == 1e3 * r.timing.ttft_s
    for key in ("decode_ms_lower_bound", "decode_ms_per_token_lower_bound", "decode_ms_per_step_floor"):
        assert j[key] == 1e3 * r.decode.seconds_per_step, key
    # the page: every place it shows them, as the hand computation formats
    step, ttft = format_seconds(hand["decode"]), format_seconds(hand["ttft"])
    headline = dict((label, value) for label, value, _ in v.headline)
    assert headline["decode step (≥)"] == step
    times = dict(zip(v.whole.times["quantity"], v.whole.times["lower bound"], strict=True))
    assert times[next(q for q in times if q.startswith("time to first token"))] == ttft
    assert times[next(q for q in times if q.startswith("decode step at P"))] == step
    serving = {label: value for label, value, _ in v.serving.metrics}
    assert serving["decode step, lower bound"] == step
    if v.kv.variants is not None:  # MLA has no MHA/GQA/MQA table
        rows = dict(zip(v.kv.variants["kind"], v.kv.variants["decode step (≥, ms)"], strict=True))
        assert rows[next(k for k in rows if "this model" in k)] == f"{1e3 * hand['decode']:.2f}"
