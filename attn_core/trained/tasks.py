"""Seeded generators of training sequences: induction, copying, associative recall, sorting.

One shared vocabulary so every task fits the same model: token 0 is BOS (shown "^"), 1 is SEP
("|"), 2…27 are the letters a…z. A task draws whole sequences ``seq`` (B, T + 1); the model reads
``idx = seq[:, :-1]`` and predicts ``targets = seq[:, 1:]`` where ``loss_mask`` is True (only the
tokens a task makes predictable count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

import torch

BOS, SEP = 0, 1
LETTERS = "abcdefghijklmnopqrstuvwxyz"
VOCAB: tuple[str, ...] = ("^", "|", *LETTERS)  # id → text
FIRST_LETTER = 2
N_LETTERS = len(LETTERS)
MAX_BATCH = 256  # sequences per batch: one training step stays well under 50 ms on one core


class TaskId(StrEnum):
    INDUCTION = "induction"
    COPY = "copy"
    RECALL = "recall"
    SORT = "sort"


@dataclass(frozen=True)
class Batch:
    idx: torch.Tensor  # (B, T) input ids
    targets: torch.Tensor  # (B, T) the next token at every position
    loss_mask: torch.Tensor  # (B, T) bool: True where the loss counts


@dataclass(frozen=True)
class TaskSpec:
    id: TaskId
    label: str
    how: str  # one line: what a sequence looks like
    n: int  # the task's size (tokens repeated, copied, pairs or sorted)
    uniform_loss: float  # nats: guessing uniformly among the letters a target is drawn from


TASKS: dict[TaskId, TaskSpec] = {
    TaskId.INDUCTION: TaskSpec(
        TaskId.INDUCTION,
        "induction: a random sequence, repeated",
        "^ … x₁…x_m x₁…x_m …: m = 8…16 distinct letters at a random offset in random filler; the second copy is predictable by looking back",
        16,
        math.log(N_LETTERS),
    ),
    TaskId.COPY: TaskSpec(
        TaskId.COPY,
        "copying after a separator",
        "^ x₁…x₁₂ | x₁…x₁₂; letters drawn with replacement",
        12,
        math.log(N_LETTERS),
    ),
    TaskId.RECALL: TaskSpec(
        TaskId.RECALL,
        "associative recall",
        "^ k₁v₁ … k₈v₈ | k v: keys from a…m, values from n…z; predict the value of the last key",
        8,
        math.log(N_LETTERS // 2),
    ),
    TaskId.SORT: TaskSpec(
        TaskId.SORT,
        "sorting",
        "^ x₁…x₁₀ | sorted(x); letters drawn with replacement",
        10,
        math.log(N_LETTERS),
    ),
}


def letters(B: int, n: int, g: torch.Generator, distinct: bool = False) -> torch.Tensor:
    """(B, n) letter ids; ``distinct``: no letter twice in a row of the batch (n ≤ 26)."""
    if distinct:
        return torch.rand(B, N_LETTERS, generator=g).argsort(dim=1)[:, :n] + FIRST_LETTER
    return torch.randint(FIRST_LETTER, FIRST_LETTER + N_LETTERS, (B, n), generator=g)


def _column(B: int, token: int) -> torch.Tensor:
    return torch.full((B, 1), token, dtype=torch.long)


def _from(seq: torch.Tensor, first: int) -> tuple[torch.Tensor, torch.Tensor]:
    """seq (B, T + 1) and a loss mask counting every target from seq index ``first`` on."""
    mask = torch.zeros(seq.shape[1] - 1, dtype=torch.bool)
    mask[first - 1 :] = True  # target at position t is seq[t + 1]
    return seq, mask.expand(seq.shape[0], -1)


def repeated(
    B: int, n: int, g: torch.Generator, period: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """^ filler x₁…x_m x₁…x_m filler, T = 2n: m distinct letters, m drawn per row from n/2…n
    (or fixed to ``period``, with no filler before), the copies at a random offset, the filler
    random letters. Loss on the second copy from x₂ on (x₁ follows x_m, which predicts nothing).
    Varying m and the offset leaves no positional shortcut ("read position t − m + 1" is a
    different offset in every row): the model must find where the current letter was."""
    if period is None:
        m = torch.randint(n // 2, n + 1, (B, 1), generator=g)
        start = (torch.rand(B, 1, generator=g) * (2 * n - 2 * m + 1)).floor().long()  # 0…2n−2m
    else:
        m, start = torch.full((B, 1), period), torch.zeros(B, 1, dtype=torch.long)
    x = letters(B, n, g, distinct=True)  # (B, n); row b uses its first m[b]
    filler = letters(B, 2 * n, g)
    p = torch.arange(2 * n).expand(B, -1) - start  # position in the body, relative to x₁
    first, second = (p >= 0) & (p < m), (p >= m) & (p < 2 * m)
    body = torch.where(first, x.gather(1, p.clamp(0, n - 1)), filler)
    body = torch.where(second, x.gather(1, (p - m).clamp(0, n - 1)), body)
    seq = torch.cat([_column(B, BOS), body], dim=1)  # (B, 2n + 1)
    loss_mask = (p >= m + 1) & (p <= 2 * m - 1)  # target t is body position t: x₂…x_m again
    return seq, loss_mask


def _sequences(task: TaskId, B: int, n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T + 1) sequences and the (B, T) loss mask over their targets."""
    if task is TaskId.INDUCTION:
        return repeated(B, n, g)
    if task is TaskId.COPY:
        x = letters(B, n, g)
        return _from(torch.cat([_column(B, BOS), x, _column(B, SEP), x], dim=1), n + 2)
    if task is TaskId.SORT:
        x = letters(B, n, g)
        return _from(torch.cat([_column(B, BOS), x, _column(B, SEP), x.sort(dim=1).values], dim=1), n + 2)
    half = N_LETTERS // 2
    keys = torch.rand(B, half, generator=g).argsort(dim=1)[:, :n] + FIRST_LETTER  # distinct keys
    values = torch.randint(FIRST_LETTER + half, FIRST_LETTER + N_LETTERS, (B, n), generator=g)
    pairs = torch.stack([keys, values], dim=2).reshape(B, 2 * n)  # k₁ v₁ k₂ v₂ …
    pick = torch.randint(0, n, (B, 1), generator=g)
    query = torch.cat([keys.gather(1, pick), values.gather(1, pick)], dim=1)  # (B, 2)
    seq = torch.cat([_column(B, BOS), pairs, _column(B, SEP), query], dim=1)
    return _from(seq, seq.shape[1] - 1)


def make_batch(task: TaskId, batch_size: int, g: torch.Generator, n: int | None = None) -> Batch:
    """A batch of ``task`` drawn from generator ``g`` (same generator state → same batch)."""
    spec = TASKS[TaskId(task)]
    n = spec.n if n is None else n
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch size {batch_size} is outside the allowed range 1…{MAX_BATCH}")
    if not 2 <= n <= (N_LETTERS // 2 if spec.id is TaskId.RECALL else N_LETTERS):
        raise ValueError(f"task size n = {n} does not fit the {N_LETTERS}-letter vocabulary")
    seq, loss_mask = _sequences(spec.id, batch_size, n, g)
    return Batch(seq[:, :-1], seq[:, 1:], loss_mask)


def seq_len(task: TaskId, n: int | None = None) -> int:
    """T: the number of input positions of one sequence of ``task``."""
    n = TASKS[TaskId(task)].n if n is None else n
    return {TaskId.INDUCTION: 2 * n, TaskId.RECALL: 2 * n + 3}.get(TaskId(task), 2 * n + 1)


def no_lookup_loss(n: int) -> float:
    """The best mean loss on the induction task's predictable tokens for a predictor that does
    not find where the current letter occurred before: E[ln (m−1)!] / E[m − 1], m uniform on
    n/2…n (1.62 nats for n = 16).

    The m letters are distinct, so at the j-th predictable position (j = 1…m−1) the target is one
    of the m − j letters of the first copy that have not yet reappeared; without locating the
    current letter's earlier occurrence the target is uniform among them: loss ln(m − j), and
    Σ_j ln(m − j) = ln (m−1)!. The loss averages over tokens, hence the ratio of expectations."""
    ms = range(n // 2, n + 1)
    return sum(math.lgamma(m) for m in ms) / sum(m - 1 for m in ms)


def encode(text: str) -> list[int]:
    """Letters a…z, "^" and "|" to ids; anything else raises ValueError naming it."""
    ids = {ch: i for i, ch in enumerate(VOCAB)}
    bad = sorted({ch for ch in text if ch not in ids})
    if bad:
        raise ValueError(f"only the letters a–z, '^' (BOS) and '|' (SEP) are tokens; got {bad[:5]}")
    return [ids[ch] for ch in text]


def decode(ids: list[int] | torch.Tensor) -> list[str]:
    return [VOCAB[int(i)] for i in ids]
