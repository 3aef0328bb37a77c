"""Every common slip, written out so that a page can show it beside the right answer.

One registry per family (forward pass, backward pass, online recurrence, …), each a dict
``{id: Slip(fn, label, note)}``. A slip is shape-compatible with the correct computation (that is
why it survives code review) and fails a check the correct version passes. Pages dispatch on the
id, never on the label.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Slip:
    """One wrong way to write a computation."""

    fn: Callable[..., Any]  # same arguments as the correct computation of its family
    label: str  # shown to the user
    note: str  # why it is wrong, in a sentence or two
