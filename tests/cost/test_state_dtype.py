"""A hybrid's recurrent state at the dtype its config states (``mamba_ssm_cache_dtype``,
``mamba_ssm_dtype``), not the cache's: a rule on config keys, never on a model's name.
Oracle: a hand count of the Mamba-2 state from the config (heads × head width × state size)."""

from __future__ import annotations

import json
from pathlib import Path

from attn_core.cost.cli import _run as analytic_run
from attn_core.cost.cli import build_parser
from attn_core.cost.mixers import read_state_dtype

CONFIGS = Path(__file__).parents[1] / "data" / "configs"
NANO = CONFIGS / "nemotron-3-nano-30b-a3b.json"


def _json(*flags: str) -> dict:
    args = build_parser().parse_args(["cost", "--config", str(NANO), "--seq-len", "1024", "--json", *flags])
    return json.loads(analytic_run(args))


def test_rule_reads_the_stated_keys():
    assert read_state_dtype({"mamba_ssm_cache_dtype": "float32"}) == "fp32"
    assert read_state_dtype({"mamba_ssm_dtype": "float32"}) == "fp32"
    assert read_state_dtype({"mamba_ssm_cache_dtype": "bfloat16"}) == "bf16"
    assert read_state_dtype({}) is None


def test_nemotron_3_nano_state_in_fp32_as_its_config_says():
    c = json.loads(NANO.read_text())
    n_mamba = c["layers_block_type"].count("mamba")
    recurrent = c["mamba_num_heads"] * c["mamba_head_dim"] * c["ssm_state_size"]  # per layer, values
    stated = _json()
    at_bf16 = _json("--state-dtype", "bf16")
    assert stated["state_dtype"] == "fp32"
    delta = stated["state_bytes_per_sequence"] - at_bf16["state_bytes_per_sequence"]
    assert delta == n_mamba * recurrent * (4 - 2)
