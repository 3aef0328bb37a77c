"""What a model_type implies about its layers, as transformers builds it: one `TypeFacts` per type,
recorded in ``assets/derived/model_types.json`` by ``scripts/derive_model_types.py`` (each type
built at its class defaults on the meta device, its module tree read by `attn_core.anatomy.facts`).
The formulas read these records instead of tables of model types written by hand; where the build
runs anyway (a user's config on the page or the CLI, the check), its own facts override the record.

A type missing from the record (transformers could not build it at its class defaults, or is newer
than the record) is one the formulas do not know: they refuse it by name."""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

RECORD_FILE = Path(__file__).resolve().parents[2] / "assets" / "derived" / "model_types.json"

AttentionBias = Literal["all", "qkv", "none"]


@dataclass(frozen=True)
class TypeFacts:
    """One model_type's layers as built at its class defaults."""

    mlp: str | None  # the dense MLP's (or else an expert's) kind: "gated", "plain", None (neither shape)
    attention_bias: AttentionBias  # "all": every projection; "qkv": Q, K and V only (Qwen2); "none"
    mlp_bias: bool  # biases on the feed-forward matrices
    qk_norm: bool  # a d_h-wide norm on every query and key head
    output_gate: bool  # the query map twice h·d_h wide: its second half gates the output
    norms_per_layer: int  # norm modules directly in one decoder layer (Gemma 2/3: 4)
    moe: bool  # some layer holds a mixture of experts
    learned_positions: bool  # an absolute position table beside the token embeddings
    state_mixers: tuple[str, ...] = ()  # classes of its linear-attention / state-space mixers
    tie_word_embeddings: bool | None = None  # the class's default for a config that leaves it out
    formulas_cover: bool = True  # the formulas agree with the build at the class defaults

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"state_mixers": list(self.state_mixers)}

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> TypeFacts:
        return cls(**(record | {"state_mixers": tuple(record.get("state_mixers", ()))}))


@functools.cache
def _record() -> dict[str, Any]:
    if not RECORD_FILE.is_file():
        return {"types": {}}
    return json.loads(RECORD_FILE.read_text())


def recorded_facts(model_type: str) -> TypeFacts | None:
    """The recorded facts of ``model_type``; None when it is not recorded."""
    rec = _record()["types"].get(model_type)
    return None if rec is None else TypeFacts.from_json(rec)


def recorded_types() -> list[str]:
    """Every model_type with recorded facts, sorted."""
    return sorted(_record()["types"])
