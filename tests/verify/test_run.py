"""attn_core.verify.run: one check at a time on this machine.

Oracle: the run's lock held here, as a running check holds it; a second check that will not wait
is refused at once, one that would wait is not started (checked by a thread that gives up)."""

from __future__ import annotations

import threading

import pytest
import torch

from attn_core.cost.config_reader import from_hf_config
from attn_core.verify import run
from attn_core.verify.plan import VerifyError, VerifyRequest

SHAPE = from_hf_config(
    {
        "model_type": "llama",
        "num_hidden_layers": 1,
        "hidden_size": 32,
        "num_attention_heads": 2,
        "intermediate_size": 48,
        "vocab_size": 10,
    },
    name="tiny",
)


def test_a_second_check_is_refused_while_one_runs():
    with run._RUN_LOCK, pytest.raises(run.VerifyBusy, match="another check"):
        run.verify(SHAPE, VerifyRequest(seq_len=8, batch=1, decode_steps=1, device="cpu"), wait=False)
    assert not run._RUN_LOCK.locked()  # the refusal took nothing


def test_a_waiting_check_starts_only_when_the_machine_is_free():
    started = threading.Event()
    threads_before = torch.get_num_threads()
    refused: list[Exception] = []

    def second() -> None:
        started.set()
        try:
            run.verify(SHAPE, VerifyRequest(seq_len=1 << 40, device="cpu"))  # too big: refused once it runs
        except VerifyError as exc:
            refused.append(exc)

    with run._RUN_LOCK:
        t = threading.Thread(target=second, daemon=True)
        t.start()
        started.wait(5)
        t.join(0.5)
        assert t.is_alive()  # still waiting for the lock
    t.join(30)
    assert not t.is_alive() and not run._RUN_LOCK.locked()
    # it ran (and planned: B·T is over what one check holds) once the lock was free
    assert len(refused) == 1 and "one check holds" in str(refused[0])
    assert torch.get_num_threads() == threads_before
    assert "threads" in run.device_name("cpu")
