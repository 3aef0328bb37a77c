"""``python -m attn_core verify --config F`` on configs as they come from a file: transformers'
class defaults of three 2026 families (Falcon-H1: a non-finite float in its config; Qwen3.5-MoE:
256 routed experts, more than fit the cap; LFM2: conv layers beside attention), each written by
transformers' own ``to_json_string`` and read back.

Oracles: transformers' own reading of the file (``PretrainedConfig._dict_from_json_file``) for the
decoded config; transformers' own meta build of the built layers (``AutoModel.from_config`` of the
class defaults with the layer count and, for a mixture of experts, the expert count the report
names) for ``params_built``."""

from __future__ import annotations

import json
import math

import pytest
from conftest import hf_numel
from transformers import AutoConfig, PretrainedConfig

from attn_core.cost.config_reader import read_config_json
from attn_core.verify.cli import main

pytestmark = pytest.mark.usefixtures("small_probe")


# LFM2's class defaults are all attention layers; its released models interleave conv layers.
LFM2_KINDS = ["conv", "conv", "full_attention"] * 10 + ["conv", "conv"]
CASES = {"falcon_h1": {}, "qwen3_5_moe": {}, "lfm2": {}, "lfm2 hybrid": {"layer_types": LFM2_KINDS}}


def _class_defaults(tmp_path, model_type: str, changes: dict | None = None):
    path = tmp_path / "config.json"
    path.write_text(AutoConfig.for_model(model_type, **(changes or {})).to_json_string())
    return path


def test_config_file_is_read_as_transformers_reads_it(tmp_path):
    path = _class_defaults(tmp_path, "falcon_h1")
    ours = read_config_json(path.read_text())
    assert ours == PretrainedConfig._dict_from_json_file(path)
    assert math.isinf(ours["time_step_limit"][1])


def _base_params(model_type: str, given: dict, layers: int, experts: int | None) -> int:
    """transformers' base model of the class defaults (and the ``given`` changes) cut by hand,
    built on meta: its parameters."""
    cfg = AutoConfig.for_model(model_type, **given).get_text_config()
    changes = {"num_hidden_layers": layers}
    if "layer_types" in given:
        changes["layer_types"] = given["layer_types"][:layers]
    if experts is not None:
        changes["num_experts"] = experts
    cut = type(cfg)(**(given | changes))
    return hf_numel(cut, base=True)


@pytest.mark.parametrize("case", list(CASES))
def test_class_defaults_from_a_json_file_are_built_by_transformers(case, tmp_path, capsys):
    model_type, given = case.split()[0], CASES[case]
    out = tmp_path / "out.json"
    args = [
        "--config",
        str(_class_defaults(tmp_path, model_type, given)),
        "--layers",
        "1",
        "--seq-len",
        "4",
        "--decode-steps",
        "1",
        "--dtype",
        "bf16",
        "--device",
        "cpu",
        "--json",
        str(out),
    ]
    assert main(args) == 0, capsys.readouterr().err
    r = json.loads(out.read_text())
    assert r["built_by"] == "transformers"
    assert r["prefill"]["measured_ms"] > 0 and r["decode_step"]["bound_ms"] > 0
    assert r["params_built"] == _base_params(model_type, given, r["layers_built"], r.get("experts_built"))
