"""Operator times measured on real GPUs by Vidur's authors (microsoft/vidur, MIT licence), copied as
small CSV subsets into ``assets/published/vidur/`` (repository, paths, commit: its README.md).

- `operator_times(gpu, model)`: one layer's attention-free operators (fused QKV, output projection,
  gate + up, down, norms, rope, activation, add) by number of tokens in the batch and tensor-parallel
  degree, the **median** in milliseconds, on one GPU of the TP group.
- `all_reduce_times(node)`: an all-reduce's median time in milliseconds by message size (bytes) and
  number of GPUs, within one DGX node.

These are figures published by others (the shape a step-time model fits: ~70 % of the bf16 peak on
large GEMMs, a floor of tens of µs per operator at a few tokens), never the lab's measurements.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

VIDUR_DIR = Path(__file__).resolve().parents[2] / "assets" / "published" / "vidur"
VIDUR_SOURCE = "microsoft/vidur @ 7d47513363ec447a741ac5e47241580b47724fbf (MIT), data/profiling/"
OPERATORS = (
    "emb",
    "input_layernorm",
    "attn_pre_proj",
    "attn_rope",
    "attn_post_proj",
    "post_attention_layernorm",
    "mlp_up_proj",
    "mlp_act",
    "mlp_down_proj",
    "add",
)
MODELS = {
    "llama-2-7b": "Llama-2-7b-hf",
    "llama-2-70b": "Llama-2-70b-hf",
    "meta-llama-3-8b": "Meta-Llama-3-8B",
}
GPUS = ("a100", "h100")
NODES = {"a100": "a100_dgx", "h100": "h100_dgx"}


@dataclass(frozen=True)
class OperatorTime:
    """One layer's operators for ``num_tokens`` tokens at tensor-parallel degree ``tp``: the median
    milliseconds of each (`OPERATORS`), on one GPU of the group."""

    gpu: str  # "a100" or "h100"
    model: str  # a key of MODELS
    num_tokens: int
    tp: int
    median_ms: dict[str, float]
    source: str

    @property
    def layer_ms(self) -> float:
        """The layer's attention-free operators in sequence (without the embedding lookup)."""
        return sum(v for k, v in self.median_ms.items() if k != "emb")


@dataclass(frozen=True)
class AllReduceTime:
    """One all-reduce of ``size_bytes`` over ``num_workers`` GPUs of one node: median milliseconds."""

    node: str  # "a100_dgx" or "h100_dgx"
    size_bytes: int
    num_workers: int
    median_ms: float
    source: str


def _rows(name: str) -> list[dict[str, str]]:
    path = VIDUR_DIR / name
    if not path.is_file():
        raise ValueError(f"no Vidur file {name!r} in {VIDUR_DIR} (see its README.md)")
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


@functools.cache
def operator_times(gpu: str, model: str) -> tuple[OperatorTime, ...]:
    """Every (num_tokens, tp) row of one GPU's profile of one model, sorted by tp then tokens;
    ValueError naming the choices for an unknown pair (there is no H100 Llama 3 8B profile)."""
    if gpu not in GPUS or model not in MODELS:
        raise ValueError(
            f"Vidur operator times: gpu one of {', '.join(GPUS)}, model one of {', '.join(MODELS)}"
        )
    name = f"{gpu}_{model}_mlp.csv"
    source = f"{VIDUR_SOURCE}compute/{gpu}/meta-llama/{MODELS[model]}/mlp.csv"
    out = [
        OperatorTime(
            gpu,
            model,
            int(r["num_tokens"]),
            int(r["tp"]),
            {op: float(r[f"{op}_median_ms"]) for op in OPERATORS},
            source,
        )
        for r in _rows(name)
    ]
    return tuple(sorted(out, key=lambda o: (o.tp, o.num_tokens)))


def operator_time(gpu: str, model: str, num_tokens: int, tp: int = 1) -> OperatorTime:
    """The row measured at exactly ``num_tokens`` and ``tp``; ValueError when none was."""
    for o in operator_times(gpu, model):
        if o.num_tokens == num_tokens and o.tp == tp:
            return o
    raise ValueError(f"Vidur did not profile {model} on {gpu} at {num_tokens:,} tokens, TP {tp}")


@functools.cache
def all_reduce_times(node: str) -> tuple[AllReduceTime, ...]:
    """Every (size, workers) all-reduce of one node ("a100_dgx", "h100_dgx"), sorted by workers, size."""
    if node not in NODES.values():
        raise ValueError(f"Vidur all-reduce times: node one of {', '.join(NODES.values())}")
    source = f"{VIDUR_SOURCE}network/{node}/all_reduce.csv"
    out = [
        AllReduceTime(node, int(r["size_bytes"]), int(r["num_workers"]), float(r["median_ms"]), source)
        for r in _rows(f"{node}_all_reduce.csv")
    ]
    return tuple(sorted(out, key=lambda a: (a.num_workers, a.size_bytes)))
