"""The lengths a varying-length serving row's own figures give (`attn_core.cost.published_lengths`),
each against the source's numbers typed here by hand: LMDeploy's request-throughput table
(docs/en/benchmark/a100_fp16.md) and Lambda's vllm-benchmark log (results_v0/prompt_320/…)."""

from __future__ import annotations

import json

import pytest

from attn_core.cost import published as pub
from attn_core.cost.published_lengths import LengthsError, parse_lengths

RUNS = {r.id: r for r in pub.load_runs()}
ROWS = {r["id"]: r for r in json.loads(pub.RUNS_FILE.read_text())["runs"]}


def test_token_rates_give_the_mean_lengths_of_lmdeploys_sharegpt_run():
    """llama2-70b, batch 64, tp 4, 3,000 prompts: PRS 4.285 req/s, 1,000.376 out tok/s, 2,062.7 total
    tok/s (the table's own figures), so 233.5 output and 247.9 prompt tokens per request."""
    lengths = RUNS["lmdeploy-70b-a100-tp4-sharegpt-c64"].replay.lengths
    assert lengths.mean_output == pytest.approx(1000.376 / 4.285, rel=1e-12)
    assert lengths.mean_input == pytest.approx((2062.7 - 1000.376) / 4.285, rel=1e-12)
    assert (lengths.input_len, lengths.output_len, lengths.spread) == (248, 233, 0.0)


def test_listed_lengths_are_the_logs_own_less_the_refused_requests():
    """Lambda's 1×A100 Mistral log: 320 prompts, 73,671 prompt and 71,545 output tokens in all; 34
    requests were refused (0 output tokens): 286 replayed, carrying every output token."""
    lengths = RUNS["lambda-vllm054-mistral7b-1xa100-sharegpt320"].replay.lengths
    assert len(lengths.input_lens) == len(lengths.output_lens) == 320 - 34
    assert sum(lengths.output_lens) == 71_545
    assert sum(lengths.input_lens) < 73_671 and min(lengths.output_lens) >= 1
    assert lengths.mean_output == pytest.approx(71_545 / 286, rel=1e-12)
    assert lengths.output_lens[:5] == (129, 883, 273, 182, 928)  # the log's first five non-zero


def test_a_stated_mean_prompt_stands_in_for_the_token_rates():
    doc = {"requests_per_s": 2.0, "output_tokens_per_s": 300.0, "mean_input_len": 512, "spread": 0.5}
    lengths = parse_lengths(doc, "r")
    assert (lengths.mean_input, lengths.mean_output, lengths.spread) == (512.0, 150.0, 0.5)
    with_input = parse_lengths(
        {"requests_per_s": 2.0, "output_tokens_per_s": 300.0, "input_tokens_per_s": 90.0}, "r"
    )
    assert with_input.mean_input == 45.0


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"requests_per_s": 2.0, "output_tokens_per_s": 300.0}, "needs input_lens"),
        ({"requests_per_s": 2.0, "output_tokens_per_s": 300.0, "total_tokens_per_s": 300.0}, "not above"),
        ({"input_lens": [1, 2], "output_lens": [3]}, "different numbers"),
        ({"input_lens": [1, 0], "output_lens": [3, 4]}, "whole numbers ≥ 1"),
        ({"input_lens": [1], "output_lens": [3], "spread": 0.2}, "no spread"),
        ({"requests_per_s": -1, "output_tokens_per_s": 3.0, "mean_input_len": 5}, "positive number"),
        ({"requests_per_s": 1, "output_tokens_per_s": 3.0, "mean_input_len": 5, "spread": 1.0}, r"\[0, 1\)"),
    ],
)
def test_a_malformed_lengths_object_is_refused_by_name(doc, message):
    with pytest.raises(LengthsError, match=message):
        parse_lengths(doc, "the-row")
    row = json.loads(json.dumps(ROWS["lmdeploy-7b-a100-tp1-sharegpt-c64"]))
    row["replay"]["lengths"] = doc
    with pytest.raises(pub.PublishedError, match="lmdeploy-7b-a100-tp1-sharegpt-c64"):
        pub.parse_run(row)
