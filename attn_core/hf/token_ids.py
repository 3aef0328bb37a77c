"""A Hugging Face page's input as token ids: typed ids read and checked against the vocabulary,
the model's positions and the page's token cap."""

from __future__ import annotations

import torch

MAX_TOKENS = 256  # the short page's cap (the long-sequence views pass theirs)


def parse_ids(text: str, vocab_size: int, max_len: int = MAX_TOKENS, cap: int = MAX_TOKENS) -> torch.Tensor:
    """Comma- or space-separated token ids → (1, T); ValueError naming the problem."""
    return check_ids(read_ids(text), vocab_size, max_len, cap)


def read_ids(text: str) -> list[int]:
    """Comma- or space-separated whole numbers → a list (unchecked); ValueError otherwise."""
    try:
        return [int(p) for p in text.replace(",", " ").split()]
    except ValueError as exc:
        raise ValueError("token ids must be whole numbers separated by commas or spaces") from exc


def check_ids(
    ids: list[int], vocab_size: int, max_len: int = MAX_TOKENS, cap: int = MAX_TOKENS
) -> torch.Tensor:
    """(1, T) ids, 1 ≤ T ≤ min(max_len, cap), every id in the vocabulary; else ValueError. ``cap``:
    the page's token cap (MAX_TOKENS here; the long-sequence views pass theirs)."""
    limit = min(max_len, cap)
    if not 1 <= len(ids) <= limit:
        why = "this page's cap" if limit == cap else "the model's positions"
        raise ValueError(f"{len(ids)} tokens: give 1…{limit} ({why})")
    if bad := [i for i in ids if not 0 <= i < vocab_size]:
        raise ValueError(f"token ids {bad[:5]} are outside the vocabulary 0…{vocab_size - 1}")
    return torch.tensor([ids])


def model_positions(config) -> int | None:
    """The positions the model's config allows (learned or rotary); None when it names none."""
    for name in ("max_position_embeddings", "n_positions", "n_ctx"):
        if isinstance(getattr(config, name, None), int):
            return getattr(config, name)
    return None


def max_positions(config, cap: int = MAX_TOKENS) -> int:
    """The longest input the model's config allows (learned or rotary positions), capped."""
    positions = model_positions(config)
    return cap if positions is None else min(positions, cap)
