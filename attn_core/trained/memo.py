"""Results that depend only on a model's weights, computed once per model and kept with it.

The head scores on the probe set and the ablation losses read the model and fixed held-out
batches, nothing a visitor types: one computation per model serves every visitor and every
rerun. The memo is keyed by the model object (weakly: it goes when the model goes) and by the
version counters of its parameters, which every in-place update bumps (an optimizer step, a
``load_state_dict``), so a model trained further is recomputed, never served stale results.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import TypeVar

import torch

T = TypeVar("T")
MAX_PER_MODEL = 64  # results kept per model version (ablation sets a visitor picks, …)

_memo: weakref.WeakKeyDictionary[torch.nn.Module, tuple[tuple[int, ...], dict]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def weights_version(model: torch.nn.Module) -> tuple[int, ...]:
    """The parameters' version counters: equal tuples mean no parameter was written in between."""
    return tuple(p._version for p in model.parameters())


def per_model(model: torch.nn.Module, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()`` once per (model, current weights, key); callers must not mutate the result."""
    version = weights_version(model)
    with _lock:
        slot = _memo.get(model)
        if slot is None or slot[0] != version:
            slot = _memo[model] = (version, {})
        if key in slot[1]:
            return slot[1][key]
    value = compute()
    with _lock:
        results = slot[1]
        if len(results) >= MAX_PER_MODEL:
            results.pop(next(iter(results)))
        results[key] = value
    return value
