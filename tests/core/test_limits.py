"""attn_core.limits.ServerSlot, the server's one slot mechanism: a long computation's slot is refused
at once while it is held (never a queue), and freed when the run ends, also when it fails; the same
for a child process holding a slot for as long as it runs (attn_core.bounded_child's users)."""

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


def test_a_third_taker_is_refused_at_once_while_two_hold():
    slot = ServerSlot("test run", capacity=2)
    with slot.take(), slot.take(), pytest.raises(Busy, match="another test run is running"), slot.take():
        pass
    with slot.take(), slot.take():  # both freed when their blocks ended
        pass


def test_a_slot_is_freed_when_its_block_raises():
    slot = ServerSlot("test run", capacity=2)
    for _ in range(3):
        with pytest.raises(RuntimeError), slot.take():
            raise RuntimeError("boom")
    assert slot.running() == []


class _Holder:
    """A stand-in for a bounded child: ends when told to, then calls its slot's release."""

    def __init__(self, release) -> None:
        self.done = False
        self._release = release

    def end(self) -> None:
        self.done = True
        self._release(self)


class _Refused(RuntimeError):
    pass


def test_children_hold_their_slots_until_they_end():
    """Two children hold both slots: a third start is refused with the caller's own busy error and
    makes nothing; when one child ends (it releases itself) the next start is let in."""
    slot = ServerSlot("child", capacity=2, busy=lambda: _Refused("busy"))
    made: list[_Holder] = []

    def make(release) -> _Holder:
        made.append(_Holder(release))
        return made[-1]

    first, second = slot.start(make), slot.start(make)
    assert slot.running() == [first, second]
    with pytest.raises(_Refused):
        slot.start(make)
    assert len(made) == 2  # the refused start made no child
    first.end()
    third = slot.start(make)
    assert slot.running() == [second, third]


def test_a_child_that_ended_without_releasing_frees_its_slot():
    """A child whose release was never called (it died) is dropped once it reports done."""
    slot = ServerSlot("child", capacity=1, busy=lambda: _Refused("busy"))
    gone = slot.start(lambda release: _Holder(release))
    gone.done = True
    assert slot.start(lambda release: _Holder(release)) is not gone


def test_the_serving_page_simulations_share_one_slot():
    """While one simulation runs, the Serving page's next view is refused, not queued."""
    with serving.SIMULATION.take(), pytest.raises(Busy):
        serving.serving_view(None)
    with serving.SIMULATION.take(), pytest.raises(Busy):
        serving_curve.variants_view(None)
