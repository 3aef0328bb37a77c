"""The check's pipe (`attn_core.verify.wire`): JSON, never a pickle. Oracles: dataclass equality
of what went in and what came out (every preset's shape, a real check's result from transformers'
build and from the lab's layers); the JSON text itself (plain data, parsed by ``json``); a tag
naming a class outside the allowed ones is refused before anything is built."""

from __future__ import annotations

import dataclasses
import json

import pytest

from attn_core.cost.config_reader import from_hf_config, list_presets, load_preset
from attn_core.verify import peak, wire
from attn_core.verify.child import Job
from attn_core.verify.examples import HYBRID, LLAMA, SMALL_PROBE
from attn_core.verify.plan import VerifyRequest, plan_build
from attn_core.verify.run import verify


@pytest.mark.parametrize("name", list_presets())
def test_every_preset_shape_survives_the_pipe(name):
    shape = load_preset(name)
    payload = wire.dumps(shape)
    assert wire.loads(payload) == shape
    json.loads(payload)  # plain JSON


def test_a_job_survives_the_pipe_with_its_transformers_config():
    shape = from_hf_config(HYBRID, name="tiny-next")
    request = VerifyRequest(seq_len=16, decode_steps=2, device="cpu")
    plan = plan_build(shape, request, HYBRID)
    assert plan.built_by == "transformers"
    job = Job(shape, request, 1 << 30, 60, {"PEAK_N": {"cpu": 128}}, HYBRID, plan.hf_config)
    back = Job.from_json(job.to_json())
    assert dataclasses.replace(back, hf_config=None) == dataclasses.replace(job, hf_config=None)
    assert type(back.hf_config) is type(plan.hf_config)
    assert back.hf_config.to_dict() == plan.hf_config.to_dict()


@pytest.mark.parametrize("config", [LLAMA, None], ids=["transformers", "lab"])
def test_a_real_result_survives_the_pipe(monkeypatch, config):
    for name, size in SMALL_PROBE.items():
        monkeypatch.setitem(getattr(peak, name), "cpu", size)
    shape = from_hf_config(LLAMA, name="tiny")
    result = verify(shape, VerifyRequest(seq_len=8, decode_steps=2, device="cpu"), config=config)
    back = wire.loads(wire.dumps(result))
    assert back.plan.built_by == ("transformers" if config else "lab")
    assert back.to_json() == result.to_json()
    assert dataclasses.replace(back, plan=None) == dataclasses.replace(result, plan=None)
    assert dataclasses.replace(back.plan, hf_config=None) == dataclasses.replace(result.plan, hf_config=None)
    assert back.probe.gemm_flop_per_s == result.probe.gemm_flop_per_s  # keys are (m, k, n) tuples


@pytest.mark.parametrize(
    "payload",
    [{"$type": "Popen", "args": ["true"]}, {"$type": "os.system"}, [{"x": {"$type": "Job"}}]],
)
def test_a_class_outside_the_allowed_ones_is_refused(payload):
    with pytest.raises(ValueError, match="not allowed"):
        wire.loads(json.dumps(payload).encode())


def test_what_may_not_travel_is_refused_when_sent():
    with pytest.raises(TypeError, match="not allowed"):
        wire.dumps({"f": open})
