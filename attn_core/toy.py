"""The running example of the spec: "the river bank was steep", one head, d_k = d_v = 2.

Only bank's query and the keys/values of the first three tokens are given by the spec; the
queries of the other tokens and the vectors of "was" and "steep" are not, so nothing here
invents them. Values live in a [geography, money] plane.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

SENTENCE = ("the", "river", "bank", "was", "steep")
VISIBLE = SENTENCE[:3]  # what bank may see under the causal mask: the, river, itself
VALUE_AXES = ("geography", "money")


@dataclass(frozen=True)
class Toy:
    """Bank's causal row: q (1, 2), k (3, 2), v (3, 2) in float64."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]


def bank_row() -> Toy:
    """q_bank = (2, -1); keys (0, 0), (1, 0), (1, 1); values (0, 0), (1, 0), (0, 1)."""
    f64 = torch.float64
    return Toy(
        q=torch.tensor([[2.0, -1.0]], dtype=f64),
        k=torch.tensor([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]], dtype=f64),
        v=torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=f64),
        query_tokens=("bank",),
        key_tokens=VISIBLE,
    )


def hand_trace() -> torch.Tensor:
    """The 3-token, 2-dim hand trace of the lesson: Q = K = V = X (identity projections)."""
    return torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
