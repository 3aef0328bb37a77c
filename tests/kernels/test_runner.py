"""The bench's arithmetic (FLOPs by FlashAttention's convention, % of peak, the error rule), its
records and JSON schema, the budgeted sweep, the CLI contract and the datasheet peaks."""

import json

import pytest
import torch
from conftest import load_benchmark

from attn_core.kernels import cli, triton_kernel
from attn_core.kernels.device import DeviceFacts, device_facts, gpu_peaks
from attn_core.kernels.records import RECORD_KEYS, Case, attention_flops, io_bytes, tflops
from attn_core.kernels.runner import SweepConfig, predict_seconds, run_sweep, tolerance


def test_flops_follow_flash_attention_convention():
    case = Case(seq_len=1024, head_dim=64, batch=2, heads=8)
    assert attention_flops(case) == 4 * 2 * 8 * 1024 * 1024 * 64 == 4_294_967_296
    causal = Case(seq_len=1024, head_dim=64, batch=2, heads=8, causal=True)
    assert attention_flops(causal) == 2_147_483_648  # halved, as the papers count it
    assert tflops(case, ms=1.0) == pytest.approx(4.294967296)  # 4.29e9 FLOP in 1e-3 s
    # L ≠ S: 4·B·H·L·S·D with S = kv_len
    assert attention_flops(Case(seq_len=100, kv_len=300, head_dim=8, heads=1)) == 4 * 100 * 300 * 8


def test_io_bytes_and_percent_of_peak():
    case = Case(seq_len=1000, head_dim=64, heads=8, kv_heads=2, dtype="bf16")
    qo = 2 * 8 * 1000 * 64  # read Q, write O
    kv = 2 * 2 * 1000 * 64  # read K, V (GQA: 2 KV heads)
    assert io_bytes(case, False) == 2 * (qo + kv)
    assert io_bytes(case, True) == 2 * (qo + kv + 4 * 8 * 1000 * 1000)
    facts = DeviceFacts("cuda", "x", False, {"bf16": 989e12}, bandwidth=4.8e12)
    assert facts.percent_of_peak("bf16", 494.5e12) == pytest.approx(50.0)
    assert facts.percent_of_peak("fp32", 1e12) is None  # no peak on file: no guess
    assert facts.ridge("bf16") == pytest.approx(989e12 / 4.8e12)  # ≈ 206 FLOP/byte


def test_tolerance_is_twice_plain_plus_two_roundings():
    v = torch.tensor([[-3.0, 2.0]])
    assert tolerance(Case(8, dtype="fp16"), 1e-3, v) == pytest.approx(2e-3 + 2 * 2**-11 * 3.0)


def test_datasheet_peaks_by_device_name_with_sources():
    peaks, bandwidth, source = gpu_peaks("NVIDIA H200")
    assert peaks == {"bf16": 989e12, "fp16": 989e12, "fp32": 67e12} and bandwidth == 4.8e12
    assert "datasheet" in source
    peaks, bandwidth, _ = gpu_peaks("NVIDIA A100-SXM4-80GB")
    assert peaks["bf16"] == 312e12 and bandwidth == 2_039e9
    assert gpu_peaks("Some Future GPU")[:2] == ({}, None)


def test_cpu_facts_are_measured_and_labelled():
    facts = device_facts("cpu", ("fp32",))
    assert facts.kind == "cpu" and facts.measured and "measured" in facts.source
    assert 1e8 < facts.peak_flops["fp32"] < 1e14  # a CPU: between 0.1 GFLOP/s and 100 TFLOP/s
    assert 1e8 < facts.bandwidth < 1e13
    assert "torch" in facts.versions


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="this machine has CUDA: tested by the GPU sweep instead"
)
def test_cuda_facts_refused_without_a_gpu():
    with pytest.raises(ValueError, match="no CUDA"):
        device_facts("cuda")


def test_records_follow_the_json_schema():
    config = SweepConfig(
        seq_lens=(40,), heads=2, kv_heads=1, causal=True, impls=("naive", "sdpa-cudnn", "online"), rounds=1
    )
    records = [json.loads(json.dumps(r.to_json())) for r in run_sweep(config).records]
    assert [r["impl"] for r in records] == ["naive", "sdpa-cudnn", "online"]
    for r in records:
        assert tuple(r)[: len(RECORD_KEYS)] == RECORD_KEYS
        assert r["device"] == "cpu" and r["dtype"] == "fp32" and r["seq_len"] == 40 and r["causal"] is True
    ok = records[2]
    assert isinstance(ok["ms"], float) and ok["ok"] is True and ok["max_abs_err"] <= ok["tol"]
    assert ok["tflops"] == pytest.approx(
        attention_flops(Case(40, heads=2, kv_heads=1, causal=True)) / ok["ms"] / 1e9
    )
    assert records[1]["ms"] is None and records[1]["note"].startswith("unsupported:")


def test_sweep_stops_cleanly_at_the_budget():
    """A fake clock that advances 5 s per look: L = 32 starts at 5 s, L = 64 at 10 s, and L = 128
    would start at 15 s, past the 12 s budget: the sweep stops there, records kept."""
    ticks = iter(range(0, 1000, 5))
    config = SweepConfig(seq_lens=(32, 64, 128), heads=1, kv_heads=1, impls=("sdpa",), budget_s=12, rounds=1)
    seen = []
    result = run_sweep(config, on_record=seen.append, clock=lambda: next(ticks))
    assert [r.seq_len for r in result.records] == [32, 64] and seen == result.records
    assert result.stopped.startswith("budget of 12 s reached before L = 128")


def test_prediction_scales_each_part_with_the_work():
    last = (Case(64, heads=1, kv_heads=1), {"reference": 1.0, "sdpa": 2.0, "triton": 3.0})
    # 4× the work: every part 4× — interpreted Triton too while under its cap (1·128²·64 = 2^20)
    assert predict_seconds(last, Case(128, heads=1, kv_heads=1)) == pytest.approx(24.0)
    # 8 heads at L = 2048, d = 64: 2^31 > 2^25, so interpreted Triton is skipped and costs nothing
    if triton_kernel.INTERPRETED:
        assert predict_seconds(last, Case(2048, heads=1, kv_heads=1)) == pytest.approx(3.0 * 1024)
    assert predict_seconds(None, Case(64)) == 0.0


def test_sweep_stops_on_request():
    config = SweepConfig(seq_lens=(16, 32), heads=1, kv_heads=1, impls=("sdpa",), rounds=1)
    calls = iter([False, True])
    result = run_sweep(config, should_stop=lambda: next(calls))
    assert [r.seq_len for r in result.records] == [16] and result.stopped == "stopped on request"


@pytest.mark.parametrize(
    "argv",
    [
        ["--seq-lens", "0"],
        ["--impl", "nope"],
        ["--dtype", "fp8"],
        ["--heads", "8", "--kv-heads", "3"],
        ["--budget-s", "-1"],
        ["--device", "tpu"],
    ],
)
def test_cli_bad_arguments_one_line_exit_2(argv, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_cli_writes_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    argv = [
        "--seq-lens",
        "24,40",
        "--heads",
        "2",
        "--kv-heads",
        "1",
        "--causal",
        "--impl",
        "sdpa,online",
        "--rounds",
        "1",
    ]
    assert cli.main([*argv, "--json", str(out)]) == 0
    records = json.loads(out.read_text())
    assert [(r["impl"], r["seq_len"]) for r in records] == [
        ("sdpa", 24),
        ("online", 24),
        ("sdpa", 40),
        ("online", 40),
    ]
    assert all(r["ok"] for r in records)
    assert "flash (CPU)" in capsys.readouterr().out


def test_gpu_sweep_starts_with_the_headline_case():
    """The Kernels page's headline case (L = 8,192, d = 128, bf16, MHA) runs first, so a short budget still
    measures it; then the grid: 2 d × 2 dtypes × 2 causal × MHA/GQA × 6 lengths."""
    configs = load_benchmark("kernel_bench").gpu_configs(300)
    first = configs[0]
    assert (first.seq_lens, first.head_dim, first.dtype, first.causal, first.heads, first.kv_heads) == (
        (8192,),
        128,
        "bf16",
        False,
        16,
        16,
    )
    assert len(configs) == 2 * 2 * 2 * 2 * 6
    assert {c.batch * c.seq_lens[0] for c in configs} == {16384}  # 16k tokens per batch
    assert all(c.device == "cuda" and "triton" in c.impls for c in configs)


def test_kernel_bench_seeded_sample():
    """The long run's code path at tiny sizes: every CPU contestant appears, checked."""
    text = load_benchmark("kernel_bench").cpu_section(seq_lens=(32,), rounds=1, heads=2)
    for impl in ("naive", "sdpa", "sdpa-math", "online", "triton"):
        assert f"| {impl} |" in text
    assert "unsupported: No viable backend" in text  # sdpa-efficient on CPU
    assert "✗" not in text and "CPU goal" in text
