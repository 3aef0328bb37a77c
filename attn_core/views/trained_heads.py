"""The Trained heads page in a few calls: the heads of the shipped checkpoint (or of the visitor's
own run) on a typed sequence, their score table with ablation, the QK / OV circuits, and a
bounded training run.

Training is capped in steps and seconds; who may train now (one run per session, at most
``MAX_CONCURRENT_RUNS`` on the whole server, a fair handover) is `attn_core.trained.slots`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

import torch
import torch.nn.functional as F

from attn_core.heads import mean_entropy, previous_token_score, sink_share
from attn_core.trained import checkpoint
from attn_core.trained.analysis import (
    MapCheck,
    ablation,
    circuits,
    copying_share,
    head_scores,
    map_check,
    run_trace,
)
from attn_core.trained.memo import per_model
from attn_core.trained.model import ModelConfig, TinyTransformer
from attn_core.trained.slots import MAX_CONCURRENT_RUNS, MAX_RUN_S, TrainingSlots
from attn_core.trained.tasks import (
    TASKS,
    VOCAB,
    TaskId,
    encode,
    no_lookup_loss,
    seq_len,
)  # TASKS, TaskId: the page's too
from attn_core.trained.training import (
    Progress,
    TrainConfig,
    TrainState,
    eval_loss,
    new_run,
    phase_threshold,
    train,
)

__all__ = [  # what the page reads (the page import rule: tests/pages/test_page_shape.py)
    "DEFAULT_SIZE",
    "DEFAULT_TEXT",
    "MAPS_EVERY",
    "MAX_CONCURRENT_RUNS",
    "MAX_RUN_S",
    "MAX_RUN_STEPS",
    "SIZES",
    "SIZE_IDS",
    "TASKS",
    "Section",
    "TaskId",
    "TrainedView",
    "best_induction_head",
    "live_maps",
    "loss_curve",
    "parse_head",
    "run_training",
    "shipped",
    "start_run",
    "thresholds",
    "view",
]

MAX_RUN_STEPS = 3000
REPORT_EVERY = 50  # steps between loss-curve updates
MAPS_EVERY = 250  # steps between head-grid updates during a run


class Section(StrEnum):
    """The page's sections; the value is the label shown, a link keeps the member's name, lower-cased."""

    READ = "Read the heads"
    ABLATION = "Ablation & circuits"
    LONG = "Along the sequence"
    TRAIN = "Train"


DEFAULT_TEXT = "^kbgmwqcxdjptkbgmwqcxdjpt"  # 12 distinct letters, repeated: the induction setting
SIZES: dict[str, dict] = {
    "1 layer × 2 heads, d_model 32": {"n_layer": 1, "n_head": 2, "n_embd": 32},
    "2 layers × 4 heads, d_model 64 (default)": {"n_layer": 2, "n_head": 4, "n_embd": 64},
    "2 layers × 4 heads, d_model 64, with MLPs": {"n_layer": 2, "n_head": 4, "n_embd": 64, "mlp": True},
    "3 layers × 4 heads, d_model 64": {"n_layer": 3, "n_head": 4, "n_embd": 64},
}
DEFAULT_SIZE = "2 layers × 4 heads, d_model 64 (default)"
SIZE_IDS = dict(zip(SIZES, ("1x2", "2x4", "2x4_mlp", "3x4"), strict=True))  # what a link carries
CIRCUIT_TOL = 1e-12  # float64 both ways: summation order only, on entries of order ≤ 10

SLOTS = TrainingSlots(MAX_CONCURRENT_RUNS, MAX_RUN_S)  # the server process's one set of training slots


@cache
def shipped() -> checkpoint.Checkpoint:
    """The checkpoint in assets/ (read once per server; its model is only ever evaluated)."""
    return checkpoint.load()


# ------------------------------------------------------------------------------ read the heads


@dataclass(frozen=True)
class HeadsView:
    tokens: list[str]
    maps: torch.Tensor  # (n_layer, n_head, T, T) attention weights on the typed sequence
    check: MapCheck  # every map recomputed by attn_core.attention from the model's own q, k
    rows: list[dict]  # one per head: scores on the probe, on the typed text, ablation Δloss
    task: TaskId
    base_loss: float  # nats, held-out batch of the model's task
    period: int  # the probe's repeat period


def parse_text(text: str, block_size: int) -> torch.Tensor:
    """(1, T) ids of the typed sequence; ValueError naming the problem."""
    text = "".join(text.split())  # spaces and newlines are for the eye only
    if len(text) < 2:
        raise ValueError("type at least two tokens (letters a–z, ^ for BOS, | for SEP)")
    if len(text) > block_size:
        raise ValueError(f"{len(text)} tokens: this model has learned positions for at most {block_size}")
    return torch.tensor([encode(text)])


def heads_view(model: TinyTransformer, task: TaskId, text: str) -> HeadsView:
    idx = parse_text(text, model.config.block_size)
    trace = run_trace(model, idx)
    maps = torch.stack([layer.weights[0] for layer in trace.layers]).to(torch.float64)
    probe = head_scores(model)  # on 64 held-out repeated sequences (period 16, or what fits)
    base, change = ablation(model, task)
    rows = []
    for layer in range(model.config.n_layer):
        for head in range(model.config.n_head):
            P = maps[layer, head]
            rows.append(
                {
                    "head": f"L{layer}H{head}",
                    "induction (probe)": float(probe.induction[layer, head]),
                    "previous-token (probe)": float(probe.previous_token[layer, head]),
                    "sink share (probe)": float(probe.sink[layer, head]),
                    "entropy (probe), nats": float(probe.entropy[layer, head]),
                    "previous-token (your text)": float(previous_token_score(P)),
                    "sink share (your text)": float(sink_share(P)),
                    "entropy (your text), nats": float(mean_entropy(P)),
                    "ablation Δloss, nats": float(change[layer, head]),
                }
            )
    return HeadsView(
        [VOCAB[i] for i in idx[0].tolist()], maps, map_check(trace), rows, task, base, probe.period
    )


def live_maps(model: TinyTransformer, text: str) -> tuple[list[str], torch.Tensor]:
    """The tokens and (n_layer, n_head, T, T) maps of ``text``: the grid redrawn during a run."""
    idx = parse_text(text, model.config.block_size)
    trace = run_trace(model, idx)
    return [VOCAB[i] for i in idx[0].tolist()], torch.stack([layer.weights[0] for layer in trace.layers])


def best_induction_head(model: TinyTransformer) -> str:
    """ "L1H0"-style name of the head with the highest induction score on the probe."""
    layer, head = divmod(int(head_scores(model).induction.argmax()), model.config.n_head)
    return f"L{layer}H{head}"


@dataclass(frozen=True)
class AblationView:
    heads: list[str]
    base_loss: float
    ablated_loss: float  # nats, every chosen head zeroed at once


def ablate(model: TinyTransformer, task: TaskId, heads: list[str]) -> AblationView:
    """Zero the chosen heads ("L1H0", …) together and measure the held-out loss of ``task``."""
    mask = torch.ones(model.config.n_layer, model.config.n_head)
    for name in heads:
        layer, head = (int(x) for x in name[1:].split("H"))
        mask[layer, head] = 0.0
    return AblationView(heads, held_out_loss(model, task), held_out_loss(model, task, mask))


def held_out_loss(model: TinyTransformer, task: TaskId, head_mask: torch.Tensor | None = None) -> float:
    """``eval_loss``, once per model version, task and set of zeroed heads."""
    key = ("loss", TaskId(task), None if head_mask is None else tuple(head_mask.flatten().tolist()))
    return per_model(model, key, lambda: eval_loss(model, task, head_mask=head_mask))


@dataclass(frozen=True)
class CircuitView:
    qk: torch.Tensor  # (V, V) query token × key token
    ov: torch.Tensor  # (V, V) attended token × output logit
    labels: list[str]
    copying: float  # share of tokens whose OV row raises their own logit most
    max_abs_diff: float  # vs the same circuits through the layer's own projections
    tol: float


@torch.no_grad()
def circuit_view(model: TinyTransformer, layer: int, head: int) -> CircuitView:
    """The two circuits, and the same matrices by a second route: the embeddings pushed through
    the layer's own Linear modules (in float64), the head's slot of the output projection kept."""
    c = circuits(model, layer, head)
    cfg, attn = model.config, model.h[layer].attn
    E = model.wte.weight.double()  # (V, C)
    q, k, v = F.linear(E, attn.c_attn.weight.double()).split(cfg.n_embd, dim=1)
    one = slice(head * cfg.head_size, (head + 1) * cfg.head_size)
    qk = q[:, one] @ k[:, one].T / math.sqrt(cfg.head_size)
    y = torch.zeros_like(v)
    y[:, one] = v[:, one]  # the head reads token b with weight 1; every other head silent
    ov = F.linear(F.linear(y, attn.c_proj.weight.double()), model.lm_head.weight.double())
    diff = max(float((qk - c.qk).abs().max()), float((ov - c.ov).abs().max()))
    return CircuitView(c.qk, c.ov, list(VOCAB), copying_share(c.ov), diff, CIRCUIT_TOL)


# ------------------------------------------------------------------------------------- train


def thresholds(task: TaskId) -> dict[str, float]:
    """The horizontal lines of the loss chart (nats)."""
    lines = {"unigram baseline": TASKS[task].uniform_loss}
    if task is TaskId.INDUCTION:
        lines["best without lookup"] = no_lookup_loss(TASKS[task].n)
        lines["phase-change threshold"] = phase_threshold(task)
    return lines


def start_run(task: TaskId, size: str, seed: int, steps: int) -> TrainState:
    """A fresh model and optimizer; ValueError naming a bad choice."""
    if size not in SIZES:
        raise ValueError(f"model size: pick one of {', '.join(SIZES)}")
    if not 1 <= steps <= MAX_RUN_STEPS:
        raise ValueError(f"steps: 1…{MAX_RUN_STEPS:,} per run")
    config = ModelConfig(block_size=seq_len(TaskId(task)), **SIZES[size])
    return new_run(config, TrainConfig(task=TaskId(task), steps=steps, seed=seed))


@dataclass(frozen=True)
class RunOutcome:
    state: TrainState
    busy: bool = False  # every training slot on the server was taken: nothing was trained
    seconds: float = 0.0  # wall time of this press
    busy_reason: str = ""  # what the page tells the visitor when busy


def run_training(
    state: TrainState,
    session: str,
    on_progress: Callable[[Progress], None],
    max_seconds: float = MAX_RUN_S,
) -> RunOutcome:
    """Train ``state`` (resuming it) for at most ``max_seconds`` (≤ MAX_RUN_S), reporting every
    REPORT_EVERY steps. Returns busy=True without training when `SLOTS` refuses this session
    (`attn_core.trained.slots`). The slot is given back however the run ends (a Streamlit rerun
    raises inside the callback)."""
    reason = SLOTS.take(session)
    if reason:
        return RunOutcome(state, busy=True, busy_reason=reason)
    start = state.elapsed_s
    try:
        train(
            state, max_seconds=min(max_seconds, MAX_RUN_S), on_progress=on_progress, report_every=REPORT_EVERY
        )
    finally:
        SLOTS.give_back(session)
    return RunOutcome(state, seconds=state.elapsed_s - start)


def loss_curve(losses: list[float], window: int = REPORT_EVERY) -> tuple[list[int], list[float]]:
    """(steps, mean loss of the ``window`` steps ending there): the curve the page draws."""
    if not losses:
        return [], []
    t = torch.tensor(losses, dtype=torch.float64)
    csum = torch.cat([torch.zeros(1, dtype=torch.float64), t.cumsum(0)])
    ends = torch.arange(1, len(losses) + 1)
    starts = (ends - window).clamp(min=0)
    return ends.tolist(), ((csum[ends] - csum[starts]) / (ends - starts)).tolist()


def parse_head(name: str) -> tuple[int, int]:
    """(layer, head) of a head named like ``L1H3``."""
    layer, head = name[1:].split("H")
    return int(layer), int(head)


@dataclass(frozen=True)
class TrainedView:
    """The page's one view call: the chosen model, its task and the typed sequence; each
    section's part is computed on demand from them and the section's own controls."""

    model: TinyTransformer
    task: TaskId
    text: str
    source: str  # the model's name on the page (the shipped checkpoint or the visitor's run)

    @property
    def head_names(self) -> list[str]:
        c = self.model.config
        return [f"L{i}H{j}" for i in range(c.n_layer) for j in range(c.n_head)]

    @property
    def best_head(self) -> str:
        """The head a picker opens on: the model's strongest induction head."""
        return best_induction_head(self.model)

    def heads(self) -> HeadsView:
        return heads_view(self.model, self.task, self.text)

    def ablation(self, chosen: list[str]) -> AblationView:
        return ablate(self.model, self.task, chosen)

    def circuits(self, name: str) -> CircuitView:
        return circuit_view(self.model, *parse_head(name))


def view(model: TinyTransformer, task: TaskId, text: str, source: str) -> TrainedView:
    """What the page's sections read for ``model`` on ``text``."""
    return TrainedView(model, TaskId(task), text, source)
