"""Train the tiny transformer: a fixed seed, a progress callback, stop and resume.

Step s trains on a batch drawn from a generator seeded by (seed, s) alone, and the optimizer's
state lives in the run, so stopping after any step and resuming gives bit for bit the run that
was never stopped (tests/trained/test_training.py).

Threshold for the induction task's phase change: see ``phase_threshold``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from attn_core.trained.model import ModelConfig, TinyTransformer, masked_loss
from attn_core.trained.tasks import TASKS, TaskId, make_batch, no_lookup_loss

MAX_STEPS = 5000  # a run's step cap: ~60 s of one core for the default model
PHASE_WINDOW = 50  # steps averaged when deciding that the loss has crossed the threshold
# The held-out batch's generator seed: training batches use seed · 1,000,003 + step with
# step < MAX_STEPS, which never reaches 2^40 for the seeds a page accepts.
EVAL_SEED = 2**40 + 7


@dataclass(frozen=True)
class TrainConfig:
    task: TaskId = TaskId.INDUCTION
    steps: int = 1500
    batch_size: int = 32
    # AdamW at 1e-2: on the induction task (seed 0, batch 32) the phase change came at step ~430;
    # at 3e-3 the loss was still 1.7 nats after 2,000 steps (benchmarks/RESULTS.md, "Trained heads").
    lr: float = 1e-2
    seed: int = 0  # the model's initialization and every batch

    def __post_init__(self) -> None:
        if not 1 <= self.steps <= MAX_STEPS:
            raise ValueError(f"steps = {self.steps} is outside the allowed range 1…{MAX_STEPS}")
        if not 0 < self.lr <= 0.1:
            raise ValueError(f"learning rate {self.lr} is outside (0, 0.1]")

    def batch(self, step: int, batch_size: int | None = None):
        """The batch of training step ``step``: a pure function of (seed, step)."""
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        return make_batch(self.task, batch_size or self.batch_size, g)


@dataclass(frozen=True)
class Progress:
    """What the callback hears every ``report_every`` steps and at the end."""

    step: int
    steps: int
    loss: float  # mean training loss over the last report window (nats)
    elapsed_s: float
    phase_change_step: int | None


@dataclass
class TrainState:
    """A run in progress: pass it back to ``train`` to resume where it stopped."""

    model: TinyTransformer
    optimizer: torch.optim.Optimizer
    config: TrainConfig
    step: int = 0  # steps done
    losses: list[float] = field(default_factory=list)  # one per step, nats
    elapsed_s: float = 0.0  # training time so far, over every resume

    @property
    def done(self) -> bool:
        return self.step >= self.config.steps

    @property
    def phase_change_step(self) -> int | None:
        return phase_change_step(self.losses, phase_threshold(self.config.task))


def phase_threshold(task: TaskId) -> float | None:
    """The loss the induction task must fall below to count as past its phase change.

    Half of ``no_lookup_loss``: 0.81 nats for n = 16. The unigram baseline is ln 26 = 3.26 nats
    (the counted targets are uniform over the letters: the untrained model's loss). A model that
    has learned everything except looking up where the current letter occurred before (which
    letters of the first copy are still to come) reaches at best 1.62 nats, 1.64 below the
    unigram baseline; so a drop of only "some margin" below 3.26 could be that shortcut. Half of
    1.62 cannot be: it is 2.45 nats below the unigram baseline and means the model's geometric-
    mean probability on the right letter is e^−0.81 = 0.45, against e^−1.62 = 0.20 for the best
    no-lookup predictor. Other tasks have no threshold (None)."""
    return no_lookup_loss(TASKS[TaskId.INDUCTION].n) / 2 if task == TaskId.INDUCTION else None


def phase_change_step(losses: list[float], threshold: float | None, window: int = PHASE_WINDOW) -> int | None:
    """The first step s (1-based count of steps done) at which the mean loss of steps
    s − window + 1 … s is at or below ``threshold``; None if it never is."""
    if threshold is None or len(losses) < window:
        return None
    t = torch.tensor(losses, dtype=torch.float64)
    means = t.unfold(0, window, 1).mean(1)  # means[i]: steps i+1 … i+window
    hits = (means <= threshold).nonzero()
    return int(hits[0]) + window if len(hits) else None


def new_run(model_config: ModelConfig, config: TrainConfig) -> TrainState:
    """A freshly initialized model (seeded by config.seed) and its AdamW optimizer."""
    model = TinyTransformer(model_config, seed=config.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=(0.9, 0.98), weight_decay=0.0)
    return TrainState(model=model, optimizer=optimizer, config=config)


def train_step(state: TrainState) -> float:
    """One optimizer step on batch ``state.step``; returns its loss (nats)."""
    model, batch = state.model, state.config.batch(state.step)
    model.train()
    logits, _ = model(batch.idx)  # autograd runs through attn_core.attention
    loss = masked_loss(logits, batch.targets, batch.loss_mask)
    state.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    state.optimizer.step()
    state.step += 1
    state.losses.append(float(loss.detach()))
    return state.losses[-1]


def train(
    state: TrainState,
    *,
    max_steps: int | None = None,
    max_seconds: float | None = None,
    on_progress: Callable[[Progress], bool | None] | None = None,
    report_every: int = 50,
) -> TrainState:
    """Train until config.steps, or ``max_steps`` more steps, or ``max_seconds`` of wall time, or
    until ``on_progress`` returns False. The callback runs every ``report_every`` steps and once
    at the end. Returns the same state, advanced; call again to resume."""
    stop_at = state.config.steps if max_steps is None else min(state.config.steps, state.step + max_steps)
    start = time.perf_counter()
    base = state.elapsed_s
    while state.step < stop_at:
        train_step(state)
        state.elapsed_s = base + time.perf_counter() - start
        out_of_time = max_seconds is not None and time.perf_counter() - start >= max_seconds
        last = state.step >= stop_at or out_of_time
        report = on_progress is not None and (state.step % report_every == 0 or last)
        if report and on_progress(_progress(state, report_every)) is False:
            break
        if out_of_time:
            break
    return state


def _progress(state: TrainState, window: int) -> Progress:
    recent = state.losses[-window:]
    return Progress(
        step=state.step,
        steps=state.config.steps,
        loss=sum(recent) / len(recent),
        elapsed_s=state.elapsed_s,
        phase_change_step=state.phase_change_step,
    )


@torch.no_grad()
def eval_loss(
    model: TinyTransformer,
    task: TaskId,
    head_mask: torch.Tensor | None = None,
    batch_size: int = 128,
    seed: int = EVAL_SEED,
) -> float:
    """Mean loss (nats) on a fixed held-out batch of ``task`` (its own seed, not a training one)."""
    batch = make_batch(task, batch_size, torch.Generator().manual_seed(seed))
    model.eval()
    logits, _ = model(batch.idx, head_mask=head_mask)
    return float(masked_loss(logits, batch.targets, batch.loss_mask))
