"""The deployment planner (meets its SLOs; never fewer GPUs as the rate grows), the attention
variants' caches by hand, and the ``serve`` command's contract."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attn_core.cost.config_reader import load_preset
from attn_core.cost.gpus import load_gpu
from attn_core.cost.inputs import Precision
from attn_core.cost.serving import kv_cache_bytes_per_token
from attn_core.serving.cli import main as serve_main
from attn_core.serving.compare import side_by_side
from attn_core.serving.load import Load
from attn_core.serving.plan import SLO, Target, plan
from attn_core.serving.variants import VARIANTS, attention_variant

ROOT = Path(__file__).resolve().parents[2]


def _target(rate: float) -> Target:
    load = Load(1000, 100, "rate", rate=rate, requests=300, seed=1)
    return Target(load_preset("llama-3-8b"), load_gpu("h100-sxm"), Precision("bf16"), load, SLO(0.4, 0.03))


def test_plan_meets_its_slos_and_never_shrinks_as_the_rate_grows():
    gpus = []
    for rate in (2.0, 30.0, 90.0):
        p = plan(_target(rate))
        assert p.gpus == p.tp * p.replicas
        assert p.result.ttft.p99 <= 0.4 and p.result.tpot.p99 <= 0.03  # the SLOs it was given
        smaller = [t for t, r, met in p.tried if t * r < p.gpus and met]
        assert not smaller  # no smaller deployment it simulated met them
        gpus.append(p.gpus)
    assert gpus == sorted(gpus) and gpus[-1] > gpus[0]


def test_variants_cache_per_token_by_hand():
    s = load_preset("llama-3-8b")  # L 32, h 32, d_h 128; bf16: 2 B a number
    by_hand = {
        "MHA": 2 * 32 * 32 * 128 * 2,  # K and V of every head
        "GQA": 2 * 32 * 8 * 128 * 2,  # 8 KV heads
        "MLA": 32 * (512 + 64) * 2,  # a 512 latent and a 64-wide rotary key
        "linear hybrid": 2 * 8 * 8 * 128 * 2,  # 8 of 32 layers keep a GQA cache
    }
    for v in VARIANTS:
        assert kv_cache_bytes_per_token(attention_variant(s, v), 2) == by_hand[v]


def _serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attn_core", "serve", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin"},
    )


def test_serve_cli_contract():
    base = ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--in-len", "500", "--out-len", "50", "--json"]
    out = _serve(*base, "--rate", "5", "--requests", "200", "--slo-ttft-ms", "400", "--slo-tpot-ms", "40")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    for key in ("output_tokens_per_s", "ttft_ms", "tpot_ms", "ttft_ms_p99", "tpot_ms_p99"):
        f = doc[key]
        assert set(f) >= {"estimate", "low", "high", "bound"}
        if key == "output_tokens_per_s":
            assert f["low"] <= f["estimate"] <= f["bound"]
        else:
            assert f["bound"] <= f["low"] <= f["estimate"] <= f["high"]
    assert {"gpus", "tp", "replicas"} <= set(doc["deployment"])


BAD = [
    ["--rate", "0"],
    ["--max-load", "--rate", "3"],
    ["--concurrency", "x"],
    ["--rate", "1", "--slo-ttft-ms", "9"],
    ["--max-load", "--in-len", "600000"],
    ["--max-load", "--gpu", "nope"],
]


@pytest.mark.parametrize("bad", BAD)
def test_serve_cli_bad_input_is_one_line_exit_2(bad, capsys):
    args = ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--in-len", "10", "--out-len", "5", *bad]
    assert serve_main(args) == 2
    out = capsys.readouterr()
    assert len(out.err.strip().splitlines()) == 1 and not out.out


def test_side_by_side_cache_sets_the_batch_and_the_gpus():
    load = Load(4000, 200, "rate", rate=6.0, requests=150, seed=2)
    t = Target(load_preset("llama-3-8b"), load_gpu("h100-sxm"), Precision("bf16"), load, SLO(3.0, 0.05))
    rows = {r.variant: r for r in side_by_side(t)}
    mha, gqa, mla = rows["MHA"], rows["GQA"], rows["MLA"]
    # 4× less cache per token (8 of 32 KV heads) holds ~4× the sequences beside ~the same weights
    assert mha.max_concurrency < gqa.max_concurrency < mla.max_concurrency
    assert mha.plan.gpus >= gqa.plan.gpus >= mla.plan.gpus


def test_serve_eager_adds_the_launch_cost_per_layer_to_each_decode_step(capsys):
    """One request alone: its TPOT eager − graph-captured = L · τ_launch of the shipped fit."""
    from attn_core.serving.fitted import load_fitted

    base = ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--in-len", "64", "--out-len", "20"]
    tpot = {}
    for extra in ((), ("--eager",)):
        assert serve_main([*base, "--concurrency", "1", "--requests", "1", "--json", *extra]) == 0
        tpot[bool(extra)] = json.loads(capsys.readouterr().out)["tpot_ms"]["estimate"]
    launch_ms = load_preset("llama-3-8b").n_layers * load_fitted().coefficients.launch_overhead_s * 1e3
    assert tpot[True] - tpot[False] == pytest.approx(launch_ms, rel=1e-6)
