"""The cost model's inputs as three small frozen objects, each validated once where it is built.

- `Hardware`: which GPU and how many (tensor-parallel, perfect sharding assumed).
- `Precision`: the dtypes of activations, weights, routed experts, the KV cache and a hybrid's
  recurrent state; whatever is left out follows the rule each field states.
- `Workload`: T, batch, prompt and generated lengths, the causal toggle and the efficiency η.

`attn_core.cost.report.cost_report(model, workload, precision, hardware)` is the one what-if call
that takes them, and `attn_core.cost.whole_model.timing` the time bounds; nothing re-validates them.
"""

from __future__ import annotations

from dataclasses import dataclass

from attn_core.cost.dtypes import bytes_per_value, check_compute_dtype, weight_bytes_per_param
from attn_core.cost.gpus import GPU
from attn_core.cost.limits import MAX_BATCH, MAX_GEN_LEN, MAX_GPUS, MAX_SEQ_LEN


def _whole(value: object, name: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be a whole number from {lo:,} to {hi:,}, got {value!r}")
    return value


def check_efficiency(efficiency: float) -> float:
    """η in (0, 1]; ValueError naming --efficiency otherwise."""
    ok = isinstance(efficiency, int | float) and not isinstance(efficiency, bool)
    if not ok or not 0 < efficiency <= 1:
        raise ValueError(f"--efficiency must be a fraction of peak in (0, 1], got {efficiency!r}")
    return float(efficiency)


@dataclass(frozen=True)
class Hardware:
    """n_gpus × gpu; memory, bandwidth and FLOP/s add (perfect tensor parallelism)."""

    gpu: GPU
    n_gpus: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.gpu, GPU):
            raise ValueError(f"gpu must be a GPU preset, got {type(self.gpu).__name__}")
        _whole(self.n_gpus, "--n-gpus", 1, MAX_GPUS)


@dataclass(frozen=True)
class Precision:
    """Dtype names. ``weights`` defaults to ``activations``; ``experts`` to ``weights``; ``kv`` to
    ``activations``; ``state`` (a hybrid's recurrent state; its conv columns stay at ``kv``) to ``kv``.
    Weights and experts may be quantized formats (int4 with group scales, MXFP4). ``compute``: the
    Tensor Core format of the matrix products, whose dense peak prices compute time
    (`roofline.compute_peak`); None: the activations' format where the GPU has a peak for it, else bf16."""

    activations: str = "fp16"
    weights: str | None = None
    kv: str | None = None
    experts: str | None = None
    state: str | None = None
    compute: str | None = None

    def __post_init__(self) -> None:
        bytes_per_value(self.activations)  # ValueError naming the choices
        fill = object.__setattr__  # frozen: the defaults are resolved here, once
        fill(self, "weights", self.activations if self.weights is None else self.weights)
        fill(self, "experts", self.weights if self.experts is None else self.experts)
        fill(self, "kv", self.activations if self.kv is None else self.kv)
        fill(self, "state", self.kv if self.state is None else self.state)
        weight_bytes_per_param(self.weights), weight_bytes_per_param(self.experts)
        bytes_per_value(self.kv), bytes_per_value(self.state)
        check_compute_dtype(self.compute)

    @property
    def b(self) -> int:
        """Bytes per activation or score."""
        return bytes_per_value(self.activations)

    @property
    def b_weight(self) -> float:
        return weight_bytes_per_param(self.weights)

    @property
    def b_expert(self) -> float:
        return weight_bytes_per_param(self.experts)

    @property
    def b_kv(self) -> int:
        return bytes_per_value(self.kv)

    @property
    def b_state(self) -> int:
        return bytes_per_value(self.state)


@dataclass(frozen=True)
class Workload:
    """B sequences of T tokens; with a GPU, a prompt of P (default T) and N generated tokens."""

    seq_len: int  # T
    batch: int = 1  # B
    prompt_len: int | None = None  # P; None: T
    gen_len: int = 0  # N
    causal: bool = False  # count only the allowed query–key pairs
    efficiency: float = 1.0  # η: the bounds ÷ η become estimates

    def __post_init__(self) -> None:
        _whole(self.seq_len, "T", 1, MAX_SEQ_LEN)
        _whole(self.batch, "batch", 1, MAX_BATCH)
        if self.prompt_len is not None:
            _whole(self.prompt_len, "--prompt-len", 1, MAX_SEQ_LEN)
        _whole(self.gen_len, "--gen-len", 0, MAX_GEN_LEN)
        if not isinstance(self.causal, bool):
            raise ValueError(f"causal must be true or false, got {self.causal!r}")
        object.__setattr__(self, "efficiency", check_efficiency(self.efficiency))

    @property
    def prompt(self) -> int:
        """P: the prompt length, T unless given."""
        return self.seq_len if self.prompt_len is None else self.prompt_len


DEFAULT_PRECISION = Precision()  # fp16 everywhere
