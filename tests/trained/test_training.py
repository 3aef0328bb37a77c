"""Training (attn_core.trained.training): seeded, resumable bit for bit, stoppable, and it learns."""

import math

import pytest
import torch

from attn_core.trained.model import ModelConfig
from attn_core.trained.tasks import TaskId, seq_len
from attn_core.trained.training import (
    MAX_STEPS,
    TrainConfig,
    eval_loss,
    new_run,
    phase_change_step,
    train,
)

SMALL = ModelConfig(n_layer=1, n_head=2, n_embd=16, block_size=seq_len(TaskId.COPY))


def run(steps: int, **kw):
    return new_run(SMALL, TrainConfig(task=TaskId.COPY, steps=steps, **kw))


def test_same_seed_same_run_and_another_seed_differs():
    a, b, c = train(run(6)), train(run(6)), train(run(6, seed=1))
    assert a.losses == b.losses and a.losses != c.losses
    for (name, p), q in zip(a.model.state_dict().items(), b.model.state_dict().values(), strict=True):
        assert torch.equal(p, q), name


def test_stop_and_resume_equals_the_uninterrupted_run():
    straight = train(run(10))
    stopped = train(run(10), max_steps=4)
    assert stopped.step == 4 and not stopped.done
    resumed = train(stopped)
    assert resumed.done and resumed.losses == straight.losses
    for name, p in straight.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[name], p), name


def test_progress_callback_reports_and_can_stop():
    heard = []
    state = train(run(20), on_progress=lambda p: heard.append(p) or p.step < 10, report_every=5)
    assert [p.step for p in heard] == [5, 10] and state.step == 10
    assert heard[-1].loss == pytest.approx(sum(state.losses[5:10]) / 5)
    assert heard[-1].steps == 20 and heard[-1].elapsed_s > 0


def test_time_cap_stops_a_run():
    state = train(run(MAX_STEPS), max_seconds=0.0)  # out of time after the first step
    assert state.step == 1


def test_phase_change_step_on_a_constructed_curve():
    losses = [3.0] * 100 + [0.5] * 100
    # the 10-step window first averages ≤ 1.0 when it holds 8 steps of 0.5: (2·3 + 8·0.5)/10 = 1.0
    assert phase_change_step(losses, 1.0, window=10) == 108
    assert phase_change_step(losses, 0.1, window=10) is None
    assert phase_change_step(losses[:5], 1.0, window=10) is None
    assert phase_change_step(losses, None) is None


def test_a_short_retrain_moves_the_loss_well_below_the_unigram_baseline():
    # The default model on the copy task, 150 steps (about 1 CPU-second on a quiet core). Untrained,
    # every logit is ≈ 0 (weights N(0, 0.02²)): loss ≈ ln 28 over the whole vocabulary. The targets
    # are uniform letters, so a model that learned only "predict a letter" sits at ln 26 = 3.26.
    # 2.0 nats is 1.26 below that: the model must already read the first copy.
    config = ModelConfig(block_size=seq_len(TaskId.COPY))
    state = new_run(config, TrainConfig(task=TaskId.COPY, steps=150))
    before = eval_loss(state.model, TaskId.COPY)
    assert before == pytest.approx(math.log(28), abs=0.1)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the page trains
    try:
        train(state)
    finally:
        torch.set_num_threads(threads)
    assert eval_loss(state.model, TaskId.COPY) < 2.0


@pytest.mark.parametrize(("kw", "message"), [({"steps": 0}, "steps = 0"), ({"lr": 1.0}, "learning rate")])
def test_bad_train_config_is_explained(kw, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**kw)
