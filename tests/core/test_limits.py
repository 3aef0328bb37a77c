"""attn_core.limits.ServerSlot: a long computation's slot is refused at once while it is held (never a
queue), and freed when the run ends, also when it fails."""

import threading

import pytest

from attn_core.limits import Busy, ServerSlot
from attn_core.views import serving, serving_curve


def test_a_second_run_is_refused_at_once_and_the_slot_is_freed_after():
    slot = ServerSlot("test run")
    inside, release = threading.Event(), threading.Event()

    @slot.guard
    def hold() -> str:
        inside.set()
        release.wait(timeout=30)
        return "done"

    result = []
    worker = threading.Thread(target=lambda: result.append(hold()))
    worker.start()
    assert inside.wait(timeout=30)
    with pytest.raises(Busy, match="another test run is running"):
        hold()
    release.set()
    worker.join(timeout=30)
    assert result == ["done"]
    with slot.take():  # free again
        pass


def test_a_failed_run_frees_its_slot():
    slot = ServerSlot("test run")

    @slot.guard
    def fail() -> None:
        raise RuntimeError("boom")

    for _ in range(2):
        with pytest.raises(RuntimeError):
            fail()


def test_the_serving_page_simulations_share_one_slot():
    """While one simulation runs, the Serving page's next view is refused, not queued."""
    with serving.SIMULATION.take(), pytest.raises(Busy):
        serving.serving_view(None)
    with serving.SIMULATION.take(), pytest.raises(Busy):
        serving_curve.variants_view(None)
