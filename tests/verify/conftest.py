"""Fixtures shared by the verify tests."""

from __future__ import annotations

import pytest

from attn_core.verify import peak
from attn_core.verify.examples import SMALL_PROBE


@pytest.fixture
def small_probe(monkeypatch):
    """Probe buffers small enough for tiny layers (the probe's logic is the same, its arrays small)
    and for the run's own terms to dominate the peak (a child gets the parent's sizes, so the plan
    sizes what runs)."""
    for name, size in SMALL_PROBE.items():
        monkeypatch.setitem(getattr(peak, name), "cpu", size)
