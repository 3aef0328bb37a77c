"""The CLI contract: `python -m attn_core cost …` / `models`, JSON fields, one-line errors, exit 2.

Oracle: the spec's check numbers (cards 11–14) for the JSON values; the CLI contract for
field names and exit codes. A few runs go through a real subprocess (the contract is about the
process: JSON on stdout, a one-line error and exit 2); the rest call main() in-process, which is
exactly what `python -m attn_core` runs. Two subprocess runs prove the CLI never imports torch.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from attn_core.cost.cli import main
from attn_core.cost.config_reader import list_built_presets, list_presets, load_preset_config

ROOT = Path(__file__).resolve().parents[2]
GiB = 2**30


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attn_core", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_cost_json_llama2_7b_on_a100():
    p = run("cost", "--model", "llama-2-7b", "--seq-len", "4096", "--gpu", "a100-80gb", "--json")
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["kv_cache_bytes_per_token"] == 524_288  # 512 KiB
    assert j["kv_cache_bytes"] == 2 * GiB
    assert j["attention_params_per_layer"] == 67_108_864
    f = j["flops_per_layer"]
    assert [round(f[k] / 1e9, 1) for k in ("projections", "attention", "mlp")] == [549.8, 274.9, 1108.1]
    assert f["total"] == f["projections"] + f["attention"] + f["mlp"]
    assert round(100 * j["attention_flop_share"], 1) == 14.2
    assert j["crossover_seq_len"] == 24_704
    assert j["score_bytes_naive_per_layer"] == 1 * GiB
    assert j["score_bytes_online_per_layer"] == 512 * 1024
    # Fits: the 81,920 MiB an A100 80GB reports; card 13's 80·10^9 B convention gives its 30.
    assert j["max_sequences"] == (81_920 * 2**20 - 13_476_831_232) // (2 * GiB) == 33
    assert j["max_sequences_card13_convention"] == (80 * 10**9 - 13_476_831_232) // (2 * GiB) == 30
    # Card 13: 6.61 + 1.05 ms (each rounded to 2 decimals, so the sum is good to ±0.01 ms). The true
    # bound reads one of the 32,000 rows of the untied embedding table: 6.48 + 1.05 ms.
    assert j["decode_ms_per_token_card13"] == pytest.approx(7.66, abs=0.01)
    weights_read = (6_738_415_616 - 32_000 * 4096 + 4096) * 2
    assert j["decode_ms_per_token_lower_bound"] == pytest.approx(1e3 * (weights_read + 2 * GiB) / 2.039e12)


def test_cost_json_causal_batch_and_int8(capsys):
    assert (
        main(["cost", "--model", "llama-2-7b", "--seq-len", "4096", "--causal", "--batch", "8", "--json"])
        == 0
    )
    j = json.loads(capsys.readouterr().out)
    assert j["crossover_seq_len"] == 49_407
    assert round(100 * j["attention_flop_share"], 2) == 7.66
    assert j["kv_cache_bytes"] == 16 * GiB
    assert "max_sequences" not in j  # no --gpu, no serving numbers
    code = main(["cost", "--model", "llama-2-7b", "--seq-len", "4096", "--dtype", "int8", "--json"])
    assert code == 0


def test_cost_json_llama2_70b_two_gpus(capsys):
    assert main(["cost", "--model", "llama-2-70b", "--seq-len", "4096", "--gpu", "a100-80gb",
                 "--n-gpus", "2", "--json"]) == 0  # fmt: skip
    j = json.loads(capsys.readouterr().out)
    assert j["max_sequences_card13_convention"] == 16 and j["kv_cache_bytes_per_token"] == 320 * 1024
    assert j["max_sequences"] == (2 * 81_920 * 2**20 - 137_953_296_384) // (1.25 * GiB) == 25
    assert j["decode_attention_intensity_flop_per_byte"] == 8


def test_cost_config_file_and_table(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(load_preset_config("gpt2")))
    p = run("cost", "--config", str(path), "--seq-len", "1024")
    assert p.returncode == 0, p.stderr
    assert "36 KiB" in p.stdout and "2,362,368" in p.stdout and "every query–key pair" in p.stdout


def test_models_lists_presets(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for name in list_presets():
        assert name in out
    assert main(["models", "--json"]) == 0
    # the presets the formulas read, then those sized by transformers' build (assets/models/built/)
    assert [
        row["name"] for row in json.loads(capsys.readouterr().out)
    ] == list_presets() + list_built_presets()


def test_models_columns_line_up_whatever_the_name_length(capsys):
    """Every row has the header's width and each header label ends where its column's values end
    (the longest preset names, e.g. qwen3-next-80b-a3b, used to push their row out of line)."""
    assert main(["models"]) == 0
    header, *body = capsys.readouterr().out.splitlines()
    every = list_presets() + list_built_presets()  # then those only transformers' build sizes
    assert len(body) == len(every) and max(len(n) for n in every) >= 18
    assert {len(line) for line in body} == {len(header)}
    names = [line.split()[0] for line in body]
    assert names == every
    kind_at = header.index("kind")
    assert all(line[kind_at - 1] == " " and line[kind_at] != " " for line in body)


def test_int8_cache(capsys):
    assert main(["cost", "--model", "llama-2-7b", "--seq-len", "1", "--kv-dtype", "int8", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kv_cache_bytes_per_token"] == 256 * 1024


def test_bad_model_exits_2_with_one_line(capsys):
    assert main(["cost", "--model", "llama-9", "--seq-len", "10"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "llama-9" in err


def _malformed(tmp_path: Path, text: str) -> str:
    path = tmp_path / "bad.json"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["cost", "--seq-len", "10"], "--model"),
        (["cost", "--model", "gpt2"], "--seq-len"),
        (["cost", "--model", "gpt2", "--seq-len", "0"], "--seq-len"),
        (["cost", "--model", "gpt2", "--seq-len", "ten"], "--seq-len"),
        (["cost", "--model", "gpt2", "--seq-len", "99999999999"], "--seq-len"),
        (["cost", "--model", "gpt2", "--seq-len", "8", "--batch", "0"], "--batch"),
        (["cost", "--model", "gpt2", "--seq-len", "8", "--dtype", "fp6"], "--dtype"),
        (["cost", "--model", "gpt2", "--seq-len", "8", "--gpu", "v100"], "--gpu"),
        (["cost", "--model", "gpt2", "--seq-len", "8", "--n-gpus", "2"], "--gpu"),
        (["cost", "--model", "gpt2", "--config", "x.json", "--seq-len", "8"], "not allowed"),
        (["cost", "--config", "/nonexistent/config.json", "--seq-len", "8"], "no such file"),
        (["nonsense"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_arguments_exit_2(argv, named, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and named in err


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('{"hidden_size": 64', "not valid JSON"),
        ("[]", "JSON object"),
        ('{"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 9}', "num_hidden_layers"),
        ('{"n_layer": 2, "n_embd": 64, "n_head": 4}', "vocab_size"),
        ('{"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 9, "num_key_value_heads": 3}', "multiple"),
        ('{"n_layer": 2, "n_embd": 64, "n_head": 4, "vocab_size": 9, "num_local_experts": 8}', "experts"),
    ],
)
def test_malformed_config_exits_2(tmp_path, text, named, capsys):
    assert main(["cost", "--config", _malformed(tmp_path, text), "--seq-len", "8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and named in err


def test_malformed_config_subprocess(tmp_path):
    p = run("cost", "--config", _malformed(tmp_path, '{"n_embd": 64}'), "--seq-len", "8", "--json")
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1
    assert "n_layer" in p.stderr


@pytest.mark.parametrize(
    "argv",
    [["models"], ["cost", "--model", "llama-2-7b", "--seq-len", "4096", "--gpu", "a100-80gb", "--json"]],
)
def test_the_cost_cli_never_imports_torch(argv):
    """The cost model is numpy only: `python -m attn_core cost …` must not pay for importing torch."""
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['attn_core', *{argv!r}]\n"
        "try:\n    runpy.run_module('attn_core', run_name='__main__')\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "print('TORCH_IMPORTED', 'torch' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "TORCH_IMPORTED False" in done.stderr


# -- Whole-model keys, dtypes, custom GPUs, absurd requests ---------------------------------
def test_deepseek_v3_whole_model_json(capsys):
    """MLA cache by hand: 61 layers × (512 + 64) numbers × 1 B (fp8) × 131,072 tokens; parameters as
    the DeepSeek-V3 report counts them (671B, 37B active, within 2%); the fp8 weights fit on 8 H200s."""
    argv = ["cost", "--model", "deepseek-v3", "--seq-len", "131072", "--gpu", "h200", "--n-gpus", "8",
            "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--gen-len", "10", "--json"]  # fmt: skip
    assert main(argv) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["kv_cache_bytes"] == 61 * (512 + 64) * 131_072
    assert j["params"] == pytest.approx(671e9, rel=0.02) and j["active_params"] == pytest.approx(
        37e9, rel=0.02
    )
    # the headline is the build's; the weights' bytes (fp8: one per number) also hold the router's
    # score-correction biases, which transformers keeps as buffers and the formulas as parameters
    buffers = j["model_check"]["model_derived"]["checkpoint_buffers"]
    assert j["sized_by"] == "build" and buffers == 58 * 256  # one bias per routed expert, 58 MoE layers
    assert j["weight_bytes"] == j["formulas"]["params"] == j["params"] + buffers and j["bits_per_weight"] == 8
    assert j["nextn_layers_left_out"] == 1 and j["quantization_config"].startswith("fp8")
    assert j["max_sequences"] > 0 and j["times_are"] == "lower bounds"
    assert j["prefill_flops"] == sum(
        v for k, v in j["prefill_flops_breakdown"].items() if k != "attention_mla_absorbed"
    )
    # TTFT ≥ both roofline terms; the first decode step reads at least the 37B active weights' bytes.
    # TTFT counts causal pairs (the fewest a decoder computes): above the linear FLOPs alone, below all pairs.
    linear = j["prefill_flops"] - j["prefill_flops_breakdown"]["attention"]
    assert 1e3 * linear / (8 * 989e12) < j["ttft_ms_lower_bound"] < 1e3 * j["prefill_flops"] / (8 * 989e12)
    assert j["decode_ms_lower_bound"] >= 1e3 * (36e9 + j["kv_cache_bytes"]) / (8 * 4.8e12)


def test_efficiency_turns_bounds_into_estimates(capsys):
    base = [
        "cost",
        "--model",
        "llama-2-7b",
        "--seq-len",
        "4096",
        "--gpu",
        "a100-80gb",
        "--gen-len",
        "4",
        "--json",
    ]
    assert main(base) == 0
    bound = json.loads(capsys.readouterr().out)
    assert main([*base, "--efficiency", "0.5"]) == 0
    est = json.loads(capsys.readouterr().out)
    assert (
        est["times_are"].startswith("estimates")
        and est["ttft_ms_estimate"] == 2 * bound["ttft_ms_lower_bound"]
    )
    assert est["decode_ms_lower_bound"] == bound["decode_ms_lower_bound"]  # the bound itself stays
    # End to end, by hand: 4 steps over caches of 4,096 … 4,099 tokens (512 KiB each), weights each step.
    weights_read = (6_738_415_616 - 32_000 * 4096 + 4096) * 2
    decode = sum(weights_read + 524_288 * t for t in range(4096, 4100)) / 2.039e12
    assert bound["end_to_end_ms_lower_bound"] == pytest.approx(bound["ttft_ms_lower_bound"] + 1e3 * decode)


def test_int4_weights_state_their_bits(capsys):
    assert (
        main(["cost", "--model", "llama-2-7b", "--seq-len", "8", "--weight-dtype", "int4-g64", "--json"]) == 0
    )
    j = json.loads(capsys.readouterr().out)
    assert j["bits_per_weight"] == 4 + 16 / 64 == 4.25  # int4 plus one fp16 scale per 64 weights
    assert j["weight_bytes"] == math.ceil(6_738_415_616 * 4.25 / 8)


def test_custom_gpu_flags(capsys):
    argv = ["cost", "--model", "llama-2-7b", "--seq-len", "4096", "--gpu-mem-gib", "80", "--gpu-tflops", "312",
            "--gpu-bandwidth-gbs", "2039", "--json"]  # fmt: skip
    assert main(argv) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["gpu"] == "custom" and j["max_sequences"] == (80 * GiB - 13_476_831_232) // (2 * GiB)


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (["--gpu-mem-gib", "80"], "all three"),
        (
            ["--gpu", "h200", "--gpu-mem-gib", "80", "--gpu-tflops", "1", "--gpu-bandwidth-gbs", "1"],
            "alternatives",
        ),
        (["--gpu-mem-gib", "nan"], "--gpu-mem-gib"),
        (["--gpu", "h200", "--efficiency", "1.5"], "--efficiency"),
        (["--gpu", "h200", "--efficiency", "0"], "--efficiency"),
        (["--weight-dtype", "int3"], "--weight-dtype"),
        (["--state-dtype", "fp64"], "--state-dtype"),
    ],
)
def test_bad_whole_model_arguments_exit_2(extra, named, capsys):
    assert main(["cost", "--model", "gpt2", "--seq-len", "8", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and named in err


@pytest.mark.parametrize(
    ("value", "named"),
    [("Infinity", "num_hidden_layers"), ("NaN", "num_hidden_layers"), ("1e309", "num_hidden_layers"),
     ('"32"', "num_hidden_layers")],
)  # fmt: skip
def test_non_finite_config_values_are_one_line(tmp_path, value, named):
    text = json.dumps(load_preset_config("llama-2-7b")).replace(
        '"num_hidden_layers": 32', f'"num_hidden_layers": {value}'
    )
    p = run("cost", "--config", _malformed(tmp_path, text), "--seq-len", "8")
    assert (
        p.returncode == 2 and p.stderr.count("\n") == 1 and named in p.stderr and "Traceback" not in p.stderr
    )


def test_absurd_requests_answer_and_say_so(capsys):
    assert (
        main(["cost", "--model", "llama-2-70b", "--seq-len", "16777216", "--batch", "65536", "--json"]) == 0
    )
    j = json.loads(capsys.readouterr().out)
    assert j["kv_cache_over_a_petabyte"] and j["beyond_max_context"]
    assert j["kv_cache_bytes"] == 327_680 * 16_777_216 * 65_536  # 320 KiB per token
    assert main(["cost", "--model", "llama-2-70b", "--seq-len", "16777216", "--batch", "65536"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(x.startswith("note: the KV cache") and "past a petabyte" in x for x in lines)
    assert any(x.startswith("note: T is beyond") for x in lines)


def test_nested_config_file(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(load_preset_config("gemma-3-27b")))
    assert main(["cost", "--config", str(path), "--seq-len", "32768", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["layer_types"] == {"sliding": 52, "full": 10}
    assert j["kv_cache_bytes"] == 2 * 16 * 128 * 2 * (10 * 32_768 + 52 * 1023)


def test_gpt_oss_on_one_h200_with_mxfp4_experts(capsys):
    """What fits on one H200 with gpt-oss-120b as shipped: experts in MXFP4 (4 bits + one 8-bit scale per
    32 = 4.25 bits), everything else bf16. Experts: 36 layers × 128 × (3·2,880² + 2·2,880 + 2,880)."""
    argv = ["cost", "--model", "gpt-oss-120b", "--seq-len", "131072", "--gpu", "h200", "--weight-dtype", "bf16",
            "--expert-dtype", "mxfp4", "--json"]  # fmt: skip
    assert main(argv) == 0
    j = json.loads(capsys.readouterr().out)
    experts = 36 * 128 * (3 * 2880**2 + 2 * 2880 + 2880)
    assert j["weight_bytes"] == math.ceil((116_829_156_672 - experts) * 2 + experts * 4.25 / 8)
    per_seq = 2 * 8 * 64 * 2 * (18 * 131_072 + 18 * 128)  # 18 full layers, 18 sliding (window 128)
    assert j["max_sequences"] == (143_771 * 2**20 - j["weight_bytes"]) // per_seq == 17


def test_hybrid_json_contract():
    """Jamba 1.5 Mini at T = 8,192, batch 4, bf16 cache, fp32 recurrent state, on 2 × H200.
    kv_cache_bytes: 4 attention layers × 2 × 8 KV heads × 128 × 2 B per token, whole batch;
    state_bytes: 28 Mamba layers × (8,192 × 4 conv columns × 2 B + 8,192 × 16 states × 4 B), whole
    batch, the same at any T; experts touched: 16·(1 − (1 − 2/16)^4); the fit counts the state."""
    argv = ("cost", "--model", "jamba-1.5-mini", "--seq-len", "8192", "--batch", "4", "--dtype", "bf16",
            "--state-dtype", "fp32", "--gpu", "h200", "--n-gpus", "2", "--json")  # fmt: skip
    p = run(*argv)
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["kv_cache_bytes"] == 4 * 8192 * 4 * 2 * 8 * 128 * 2
    per_seq = 28 * (8192 * 4 * 2 + 8192 * 16 * 4)
    assert j["state_bytes_per_sequence"] == per_seq and j["state_bytes"] == 4 * per_seq
    assert j["state_dtype"] == "fp32" and j["layer_types"] == {"mamba": 28, "full": 4}
    assert j["experts_touched_per_layer_expected"] == pytest.approx(16 * (1 - (1 - 2 / 16) ** 4))
    free = j["gpu_memory_bytes"] - j["weight_bytes"]
    assert j["max_sequences"] == free // (j["kv_cache_bytes"] // 4 + per_seq)
    assert j["decode_ms_per_step_floor"] < j["decode_ms_per_step_uniform_routing"]
    assert j["decode_tokens_per_s_uniform_routing_ceiling"] == pytest.approx(
        4 / (j["decode_ms_per_step_uniform_routing"] / 1e3)
    )
    # --state-dtype changes only the recurrent part; the conv columns stay at the cache dtype.
    q = json.loads(run(*[a if a != "fp32" else "bf16" for a in argv]).stdout)
    assert q["state_bytes_per_sequence"] == 28 * (8192 * 4 * 2 + 8192 * 16 * 2)


def test_a_transformer_has_no_state_and_no_experts(capsys):
    assert main(["cost", "--model", "llama-3-8b", "--seq-len", "128", "--batch", "8", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["state_bytes"] == 0 and j["experts_touched_per_layer_expected"] is None


def test_hybrid_table_says_state_and_routing(capsys):
    argv = ["cost", "--model", "qwen3-next-80b-a3b", "--seq-len", "4096", "--batch", "32", "--gpu", "h200"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "Fixed state, 36 Gated DeltaNet layers" in out and "36 gdn + 12 full" in out
    assert "under uniform routing 32 sequences touch" in out


def test_compute_dtype_prices_ttft_at_that_peak_and_a_missing_peak_is_one_line(capsys):
    """fp8 on an H100 SXM: 1,979 TFLOP/s dense (datasheet 3,958 with sparsity); an A100 has no fp8."""
    args = ["cost", "--model", "llama-2-7b", "--seq-len", "2048", "--gpu", "h100-sxm", "--json"]
    assert main(args) == 0
    bf16 = json.loads(capsys.readouterr().out)
    assert main([*args, "--compute-dtype", "fp8"]) == 0
    fp8 = json.loads(capsys.readouterr().out)
    assert (bf16["compute_dtype"], fp8["compute_dtype"]) == ("fp16", "fp8")
    assert fp8["compute_flops_per_s_per_gpu"] == 1979e12
    assert fp8["ttft_ms_lower_bound"] == pytest.approx(bf16["ttft_ms_lower_bound"] * 989 / 1979, rel=1e-12)
    bad = ["cost", "--model", "llama-2-7b", "--seq-len", "64", "--gpu", "a100-80gb", "--compute-dtype", "fp8"]
    assert main(bad) == 2
    assert "has no fp8 peak" in capsys.readouterr().err
