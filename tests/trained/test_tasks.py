"""The seeded task generators (attn_core.trained.tasks): every counted target is checked by
searching the sequence for the answer, independently of how the generator built it."""

import math

import pytest
import torch

from attn_core.trained.tasks import (
    BOS,
    SEP,
    TASKS,
    TaskId,
    decode,
    encode,
    make_batch,
    no_lookup_loss,
    repeated,
    seq_len,
)


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("task", list(TaskId))
def test_same_seed_same_batch_and_shapes(task):
    a, b, c = make_batch(task, 16, gen(1)), make_batch(task, 16, gen(1)), make_batch(task, 16, gen(2))
    assert torch.equal(a.idx, b.idx) and torch.equal(a.loss_mask, b.loss_mask)
    assert not torch.equal(a.idx, c.idx)
    assert a.idx.shape == a.targets.shape == a.loss_mask.shape == (16, seq_len(task))
    assert torch.equal(a.targets[:, :-1], a.idx[:, 1:])  # targets are the inputs shifted by one
    assert (a.idx[:, 0] == BOS).all() and a.loss_mask.any(1).all()


def test_induction_targets_follow_the_earlier_occurrence():
    b = make_batch(TaskId.INDUCTION, 64, gen(3))
    lengths = set()
    for row, targets, mask in zip(b.idx.tolist(), b.targets.tolist(), b.loss_mask.tolist(), strict=True):
        counted = [t for t in range(len(row)) if mask[t]]
        lengths.add(len(counted) + 1)  # m − 1 counted targets per row
        for t in counted:
            earlier = [j for j in range(t) if row[j] == row[t]]
            # the counted token occurred before, and the target is what followed it there
            assert earlier and targets[t] == row[earlier[-1] + 1]
    assert min(lengths) == 8 and max(lengths) == 16  # m spans n/2…n


def test_probe_has_a_fixed_period_and_no_offset():
    seq, mask = repeated(4, 16, gen(0), period=16)
    assert torch.equal(seq[:, 1:17], seq[:, 17:33])
    assert all(len(set(r)) == 16 for r in seq[:, 1:17].tolist())  # distinct letters
    assert mask[0].nonzero().flatten().tolist() == list(range(17, 32))


def test_copy_sort_and_recall_targets():
    n = TASKS[TaskId.COPY].n
    b = make_batch(TaskId.COPY, 8, gen(4))
    counted = b.targets[b.loss_mask].view(8, -1)
    assert torch.equal(counted, b.idx[:, 1 : n + 1]) and (b.idx[:, n + 1] == SEP).all()

    n = TASKS[TaskId.SORT].n
    b = make_batch(TaskId.SORT, 8, gen(5))
    counted = b.targets[b.loss_mask].view(8, -1)
    for out, src in zip(counted.tolist(), b.idx[:, 1 : n + 1].tolist(), strict=True):
        assert out == sorted(src)

    b = make_batch(TaskId.RECALL, 32, gen(6))
    for row, targets, mask in zip(b.idx.tolist(), b.targets.tolist(), b.loss_mask.tolist(), strict=True):
        assert sum(mask) == 1 and mask[-1] and row[-2] == SEP
        key = row[-1]
        position = row.index(key)  # keys are distinct: its only pair
        assert position % 2 == 1 and targets[-1] == row[position + 1]


def test_no_lookup_loss_by_enumeration():
    # n = 4: m ∈ {2, 3, 4}; the counted targets have ln 1; ln 2, ln 1; ln 3, ln 2, ln 1 candidates.
    by_hand = (0 + (math.log(2) + 0) + (math.log(3) + math.log(2) + 0)) / (1 + 2 + 3)
    assert no_lookup_loss(4) == pytest.approx(by_hand, rel=1e-14)
    assert no_lookup_loss(16) == pytest.approx(1.618, abs=5e-4)
    assert no_lookup_loss(16) < math.log(26)  # and well under the uniform guess


def test_encode_decode_round_trip_and_errors():
    text = "^abc|xyz"
    assert "".join(decode(encode(text))) == text
    with pytest.raises(ValueError, match="only the letters"):
        encode("abC1")


@pytest.mark.parametrize(("task", "n"), [(TaskId.INDUCTION, 27), (TaskId.RECALL, 14), (TaskId.COPY, 1)])
def test_sizes_outside_the_vocabulary_are_refused(task, n):
    with pytest.raises(ValueError, match="does not fit"):
        make_batch(task, 4, gen(), n=n)


def test_batch_size_cap():
    with pytest.raises(ValueError, match="batch size"):
        make_batch(TaskId.COPY, 10_000, gen())
