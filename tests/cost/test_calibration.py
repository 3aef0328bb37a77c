"""Calibrated time: a kernel bench run read into attained rates, and the Cost page's time at them.

Oracles: a hand computation of Llama 2 7B from its dimensions (tests/calibration_reference.py,
which imports nothing of attn_core); the roofline bound, which at the same rates can never exceed
the calibrated figure (Σ max ≥ max Σ) and must read the same bytes; the rules of the lookup on a
fixture run built to trap each wrong choice; malformed files refused with their name."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from calibration_reference import ATTENTION, BANDWIDTH, CURVE, SQUARE, cpu_run, gpu_run, llama2_7b, rate

from attn_core.cost.calibrated import calibrated_timing, calibration_hardware, expert_flops
from attn_core.cost.calibration import (
    MAX_CALIBRATION_BYTES,
    Calibration,
    CalibrationError,
    Rate,
    load_calibration,
    preset_for_device,
    read_calibration,
)
from attn_core.cost.cli import main
from attn_core.cost.config_reader import list_presets, load_preset
from attn_core.cost.gpus import custom_gpu, load_gpu
from attn_core.cost.inputs import Hardware, Precision, Workload
from attn_core.cost.whole_model import timing

ROOT = Path(__file__).resolve().parents[2]
# Every figure below is a product and sum of a dozen float64 terms: 1e-12 relative is ~10⁴ ulps.
REL = 1e-12


def h200_run(tmp_path, run=None) -> Calibration:
    path = tmp_path / "gpu-results-h200-fixture.json"
    path.write_text(json.dumps(run or gpu_run()))
    return load_calibration(path)


def test_reads_the_attained_rates_and_their_sources(tmp_path):
    c = h200_run(tmp_path)
    assert (c.device, c.kind, c.run, c.date, c.preset) == (
        "NVIDIA H200",
        "cuda",
        "gpu-results-h200-fixture.json",
        "2026-12-05 06:00 UTC",
        "h200",
    )
    # attained wins over the datasheet where the run measured it; the datasheet stays, flagged
    assert c.matmul["fp16"] == Rate(SQUARE, "measured in the fixture", True)
    assert c.matmul["bf16"].value == 989e12 and not c.matmul["bf16"].measured
    assert "datasheet" in c.matmul["bf16"].source
    assert c.bandwidth == Rate(BANDWIDTH, "measured in the fixture", True)
    assert c.matmul_rows["fp16"] == tuple(sorted(CURVE.items()))
    # one rate per case: the fastest contestant that passed; the untimed and failed ones are gone
    cases = {(a.dtype, a.head_dim, a.seq_len, a.causal): a for a in c.attention}
    assert len(cases) == len(c.attention) == 5
    assert cases[("fp16", 128, 2048, True)].flop_per_s == ATTENTION
    assert cases[("fp16", 128, 2048, True)].impl == "sdpa-flash"


def test_attention_lookup_picks_the_nearest_case(tmp_path):
    c = h200_run(tmp_path)
    assert c.attention_rate("fp16", 128, 2048).flop_per_s == ATTENTION  # exact case, causal
    assert c.attention_rate("fp16", 128, 2048, causal=False).flop_per_s == 600e12
    assert c.attention_rate("fp16", 128, 600).flop_per_s == 350e12  # log2(600/512) < log2(2048/600)
    assert c.attention_rate("fp16", 64, 2048).flop_per_s == 700e12
    assert c.attention_rate("fp16", 96, 2048).flop_per_s == ATTENTION  # a tie in d goes to the larger
    assert c.attention_rate("bf16", 64, 100).flop_per_s == 800e12  # the only bf16 case
    assert c.attention_rate("fp32", 128, 2048) is None


@pytest.mark.parametrize("rows", [0.5, 1, 3, 16, 40, 64, 2048, 8192, 10**6])
def test_matmul_rate_by_rows(tmp_path, rows):
    assert h200_run(tmp_path).matmul_at("fp16", rows) == pytest.approx(rate(rows), rel=REL)


def test_without_a_rows_curve_every_product_gets_the_square_rate(tmp_path):
    run = gpu_run()
    del run["meta"]["attained"]["matmul_rows"]
    c = h200_run(tmp_path, run)
    assert c.matmul_at("fp16", 1) == c.matmul_at("fp16", 10**5) == SQUARE
    assert c.matmul_at("bf16", 7) == 989e12 and c.matmul_at("int8", 7) is None


@pytest.mark.parametrize(("P", "N"), [(2048, 0), (2048, 3), (4096, 17), (97, 5)])
def test_llama2_7b_against_a_hand_computation(tmp_path, P, N):
    c = h200_run(tmp_path)
    hw = Hardware(load_gpu("h200"))
    t = calibrated_timing(load_preset("llama-2-7b"), Workload(P, 1, None, N), Precision("fp16"), hw, c)
    R_attn = c.attention_rate("fp16", 128, P).flop_per_s  # the lookup is checked above
    hand = llama2_7b(P, N, R_attn=R_attn)
    assert t.ttft_s == pytest.approx(hand["ttft"], rel=REL)
    assert t.decode_step_s == pytest.approx(hand["decode"], rel=REL)
    assert t.total_s == pytest.approx(hand["total"], rel=REL)
    assert t.tokens_per_s == (N / t.total_s if N else 0.0)


def test_two_gpus_double_every_rate(tmp_path):
    c = h200_run(tmp_path)
    shape, work, prec = load_preset("llama-2-7b"), Workload(2048, 1, None, 3), Precision("fp16")
    one = calibrated_timing(shape, work, prec, Hardware(load_gpu("h200"), 1), c)
    two = calibrated_timing(shape, work, prec, Hardware(load_gpu("h200"), 2), c)
    assert two.total_s == pytest.approx(one.total_s / 2, rel=REL)


def test_routed_experts_run_at_their_rows(tmp_path):
    """Mixtral at B·P = 2,048 tokens: 2 of 8 experts per token touch all 8 (expected
    8·(1 − (3/4)^2048) = 8), so each expert's products have 2·2048 / 8 = 512 rows; the rest 2,048."""
    c = h200_run(tmp_path)
    s = load_preset("mixtral-8x7b")
    t = calibrated_timing(s, Workload(2048), Precision("fp16"), Hardware(load_gpu("h200")), c)
    F_e = 2 * 2 * 3 * 4096 * 14336 * 32 * 2048  # k · 2 FLOPs · 3 matrices · d · d_ff · layers · tokens
    assert expert_flops(s, 2048) == F_e
    F_w = 32 * 2048 * (2 * (4096 * 4096 * 2 + 2 * 4096 * 1024) + 2 * 4096 * 8) + F_e + 2 * 4096 * 32000 * 2048
    assert t.prefill.products.compute_s == pytest.approx((F_w - F_e) / rate(2048) + F_e / rate(512), rel=REL)


@pytest.mark.parametrize("name", list_presets())
def test_every_preset_reads_the_bounds_bytes_and_never_beats_the_bound(tmp_path, name):
    """At rates equal to the bound's peaks (no curve, the attention kernel at the matmul peak) the
    calibrated time is Σ over parts of max(compute, memory) ≥ max(Σ compute, Σ memory) = the bound,
    from the same bytes."""
    run = gpu_run()
    meta = run["meta"]
    del meta["attained"]
    meta["peaks"], meta["bandwidth"] = {"fp16": 989e12}, 4.8e12
    run["records"] = [rec | {"tflops": 989.0} for rec in run["records"] if rec["ok"]]
    c = h200_run(tmp_path, run)
    s, hw = load_preset(name), Hardware(load_gpu("h200"))
    work, prec = Workload(4096, 2, None, 5), Precision("fp16")
    t, b = calibrated_timing(s, work, prec, hw, c), timing(s, work, prec, hw)
    assert t.prefill.memory_s * 4.8e12 == pytest.approx(b.prefill_bytes, rel=REL)
    assert t.decode_step.memory_s * 4.8e12 == pytest.approx(
        b.decode_weight_bytes + b.first_step_kv_bytes, rel=REL
    )
    assert t.prefill.compute_s * 989e12 == pytest.approx(b.prefill.total, rel=REL)
    assert t.ttft_s >= b.ttft_s * (1 - REL) and t.decode_step_s >= b.decode_step_s * (1 - REL)
    assert t.total_s >= b.total_s * (1 - REL)


def test_a_missing_dtype_is_refused_by_name(tmp_path):
    c = h200_run(tmp_path)
    hw, s = Hardware(load_gpu("h200")), load_preset("llama-2-7b")
    with pytest.raises(
        CalibrationError, match=r"fixture.json has no int8 matmul rate \(it has bf16, fp16, fp32\)"
    ):
        calibrated_timing(s, Workload(64), Precision("int8"), hw, c)
    # fp32: the datasheet's matmul rate is there, but the run timed no fp32 attention kernel
    with pytest.raises(
        CalibrationError, match=r"fixture.json timed no fp32 attention kernel \(it timed bf16, fp16\)"
    ):
        calibrated_timing(s, Workload(64), Precision("fp32"), hw, c)


def test_hardware_a_run_calibrates(tmp_path):
    gpu = h200_run(tmp_path)
    assert calibration_hardware(gpu, None).gpu == load_gpu("h200")
    assert calibration_hardware(gpu, load_gpu("h200"), 2).n_gpus == 2
    with pytest.raises(CalibrationError, match="recorded on NVIDIA H200, not on NVIDIA A100 80GB"):
        calibration_hardware(gpu, load_gpu("a100-80gb"))
    with pytest.raises(CalibrationError, match="not on custom GPU"):
        calibration_hardware(gpu, custom_gpu(80, 100, 1000))
    unknown = h200_run(tmp_path, gpu_run(device="Some Future GPU"))
    assert unknown.preset is None
    with pytest.raises(CalibrationError, match="matches no GPU preset"):
        calibration_hardware(unknown, None)
    cpu = read_calibration(cpu_run(), "sweep")
    server = calibration_hardware(cpu, None).gpu
    # the bound's peaks: the fastest rate the run saw, the measured stream; the RAM it reported
    assert (server.name, server.bf16_flops_per_s, server.bandwidth_bytes_per_s) == ("server", 80e9, 25e9)
    assert server.memory_bytes == 16 * 2**30 and "measured" in server.label


def test_device_names_match_the_bench_tables():
    assert preset_for_device("NVIDIA H200") == "h200"
    assert preset_for_device("NVIDIA A100-SXM4-80GB") == "a100-80gb"
    assert preset_for_device("NVIDIA H100 80GB HBM3") == "h100-sxm"
    assert preset_for_device("AMD EPYC 9554") is None


def _set(path: str, value):
    def edit(run: dict) -> dict:
        *keys, last = path.split(".")
        node = run
        for k in keys:
            node = node[int(k)] if isinstance(node, list) else node[k]
        node[int(last) if isinstance(node, list) else last] = value
        return run

    return edit


BAD = [
    ("not json at all", None, "not JSON"),
    (None, lambda r: r["records"], "a bare list of records carries no device rates"),
    (None, lambda r: {"records": r["records"]}, "not a bench run"),
    (None, _set("records", {"a": 1}), "records must be a list"),
    (None, _set("meta.kind", "tpu"), "meta.kind must be cpu or cuda"),
    (None, _set("records.0.tflops", -3), "record 0: tflops must be a positive number"),
    (None, _set("records.0.head_dim", True), "record 0: head_dim must be a whole number"),
    (None, _set("records.0.dtype", "fp64"), "record 0: unknown dtype"),
    (None, _set("records.0", "oops"), "record 0 is not an object"),
    (
        None,
        _set("meta.attained.bandwidth_bytes_per_s", float("nan")),
        "bandwidth_bytes_per_s must be a positive",
    ),
    (None, _set("meta.attained.matmul_rows.fp16", {"one": 1e12}), "row count must be a whole number"),
    (None, _set("meta.attained.matmul_flop_per_s.fp16", "fast"), "fp16 must be a positive number"),
    (None, _set("meta.measured", "yes"), "meta.measured must be true or false"),
    (None, _set("meta.device", 7), "meta.device must be text"),
    (None, lambda r: r | {"records": [x | {"ok": False} for x in r["records"]]}, "no timed attention record"),
]


@pytest.mark.parametrize(("text", "edit", "message"), BAD)
def test_malformed_runs_are_refused_by_name(tmp_path, text, edit, message):
    path = tmp_path / "gpu-results-broken.json"
    path.write_text(text if text is not None else json.dumps(edit(gpu_run()), allow_nan=True))
    with pytest.raises(CalibrationError) as caught:
        load_calibration(path)
    assert str(caught.value).startswith("gpu-results-broken.json: ") and message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_oversized_and_missing_files(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_CALIBRATION_BYTES + 1))
    with pytest.raises(CalibrationError, match=r"big\.json: larger than 16 MiB"):
        load_calibration(big)
    with pytest.raises(CalibrationError, match=r"nope\.json: no such file"):
        load_calibration(tmp_path / "nope.json")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CalibrationError, match=r"deep\.json"):
        load_calibration(deep)


def test_a_cpu_run_without_memory_cannot_stand_in_for_hardware():
    run = cpu_run()
    del run["meta"]["memory_bytes"]
    with pytest.raises(CalibrationError, match="no memory size"):
        read_calibration(run, "sweep").as_gpu()
    assert math.isfinite(read_calibration(run, "sweep").bandwidth.value)


# -- The CLI: `python -m attn_core cost … --calibration RUN.json` -------------------------------
def cli_json(argv, capsys) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_adds_calibrated_figures_and_keeps_every_key(tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(gpu_run()))
    base = ["cost", "--model", "llama-2-7b", "--seq-len", "2048", "--gen-len", "3", "--json"]
    plain = cli_json([*base, "--gpu", "h200"], capsys)
    for gpu in ([], ["--gpu", "h200"]):  # without --gpu: the run's own device, its preset
        j = cli_json([*base, *gpu, "--calibration", str(path)], capsys)
        assert {k: v for k, v in j.items() if k != "calibrated"} == plain
        c, hand = j["calibrated"], llama2_7b(2048, 3)
        assert c["ttft_ms"] == pytest.approx(1e3 * hand["ttft"], rel=REL)
        assert c["decode_ms"] == pytest.approx(1e3 * hand["decode"], rel=REL)
        assert c["end_to_end_ms"] == pytest.approx(1e3 * hand["total"], rel=REL)
        assert (c["run"], c["device"], c["date"]) == (str(path), "NVIDIA H200", "2026-12-05 06:00 UTC")
        assert (c["matmul_flop_per_s"], c["bandwidth_bytes_per_s"], c["attention_flop_per_s"]) == (
            SQUARE,
            BANDWIDTH,
            ATTENTION,
        )
        assert c["matmul_measured"] and c["bandwidth_measured"]
    assert main([*base[:-1], "--calibration", str(path)]) == 0
    text = capsys.readouterr().out
    assert "Calibrated (measured rates" in text and "NVIDIA H200" in text


def test_cli_on_a_cpu_run_times_that_machine(tmp_path, capsys):
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(cpu_run()))
    j = cli_json(
        [
            "cost",
            "--model",
            "gpt2",
            "--seq-len",
            "512",
            "--dtype",
            "fp32",
            "--calibration",
            str(path),
            "--json",
        ],
        capsys,
    )
    assert j["gpu"] == "server" and j["gpu_memory_bytes"] == 16 * 2**30
    assert j["calibrated"]["attention_case"] == "sdpa at L = 512, d = 64, fp32, causal"
    assert j["calibrated"]["matmul_flop_per_s_by_rows"] == {"1": 10e9, "1024": 80e9}


@pytest.mark.parametrize(
    ("content", "extra", "named"),
    [
        ("{", [], "not JSON"),
        (json.dumps(gpu_run()), ["--gpu", "a100-80gb"], "recorded on NVIDIA H200, not on NVIDIA A100 80GB"),
        (json.dumps(gpu_run()), ["--dtype", "int8"], "has no int8 matmul rate"),
        (
            json.dumps(gpu_run()),
            ["--gpu-mem-gib", "80", "--gpu-tflops", "100", "--gpu-bandwidth-gbs", "900"],
            "not on custom GPU",
        ),
        (json.dumps([]), [], "a bare list of records"),
    ],
)
def test_cli_refuses_a_bad_run_in_one_line(tmp_path, capsys, content, extra, named):
    path = tmp_path / "odd name.json"
    path.write_text(content)
    argv = ["cost", "--model", "llama-2-7b", "--seq-len", "64", "--calibration", str(path), *extra, "--json"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert f"--calibration {path}" in err and named in err


def test_cli_with_a_missing_run(tmp_path, capsys):
    assert (
        main(["cost", "--model", "gpt2", "--seq-len", "8", "--calibration", str(tmp_path / "no.json")]) == 2
    )
    assert "no.json: no such file" in capsys.readouterr().err


def test_cli_with_a_calibration_never_imports_torch(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(gpu_run()))
    argv = ["cost", "--model", "llama-2-7b", "--seq-len", "64", "--calibration", str(path), "--json"]
    code = (
        "import runpy, sys\n"
        f"sys.argv = ['attn_core', *{argv!r}]\n"
        "try:\n    runpy.run_module('attn_core', run_name='__main__')\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "print('TORCH_IMPORTED', 'torch' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "TORCH_IMPORTED False" in done.stderr and '"calibrated"' in done.stdout


def test_the_rows_curve_is_skipped_where_it_would_take_seconds():
    """A dtype without a fast path (here a made-up 1 MFLOP/s) gets no curve, and nothing is allocated."""
    from attn_core.kernels.device import measure_matmul_rows

    assert measure_matmul_rows("fp16", "cpu", square=1e6) == {}


def _no_constants(name: str):
    raise ValueError(f"{name} is not JSON")


@pytest.mark.parametrize(
    ("where", "value", "named"),
    [
        (("meta", "attained", "matmul_flop_per_s", "fp32"), 5e-324, "meta.attained.matmul_flop_per_s.fp32"),
        (("meta", "attained", "bandwidth_bytes_per_s"), 1e-300, "meta.attained.bandwidth_bytes_per_s"),
        (("meta", "attained", "matmul_rows", "fp32", "1"), 1e300, "matmul_rows.fp32.1"),
        (("records", 0, "tflops"), 5e-324, "record 0: tflops"),
    ],
)
def test_a_rate_no_device_has_is_refused_and_json_stays_json(tmp_path, capsys, where, value, named):
    """A subnormal (or absurd) rate made every time "inf s" and cost --json print Infinity: it is
    refused by name, and the accepted run's --json parses as strict JSON (no NaN, no Infinity)."""
    run = cpu_run()
    node = run
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(run))
    with pytest.raises(CalibrationError, match=rf"{named} = .* is outside any device's range"):
        load_calibration(path)
    argv = [
        "cost",
        "--model",
        "gpt2",
        "--seq-len",
        "512",
        "--dtype",
        "fp32",
        "--calibration",
        str(path),
        "--json",
    ]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "outside any device's range" in err
    path.write_text(json.dumps(cpu_run()))
    assert main(argv) == 0
    j = json.loads(capsys.readouterr().out, parse_constant=_no_constants)
    assert all(math.isfinite(v) for v in j["calibrated"].values() if isinstance(v, float))
