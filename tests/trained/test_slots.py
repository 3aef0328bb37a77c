"""attn_core.trained.slots: who may train now. Oracle: the rules as stated in the module
docstring, played out by hand on a clock the test moves (no training, no sleeping)."""

import threading

from attn_core.trained.slots import BUSY, HANDOVER_S, MAX_RUN_S, TrainingSlots


def slots(capacity: int = 1):
    now = [1000.0]
    return TrainingSlots(capacity, clock=lambda: now[0]), now


def test_a_slot_is_taken_without_waiting_and_given_back():
    s, _ = slots()
    assert s.take("a") == ""
    assert s.take("b") == BUSY  # refused at once, not queued behind a's run
    assert s.training() == {"a"}
    s.give_back("a")
    assert s.training() == set()


def test_one_run_per_session_even_with_a_free_slot():
    s, _ = slots(capacity=2)
    assert s.take("a") == ""
    assert "already training" in s.take("a")
    assert s.take("b") == ""  # the second slot
    assert s.take("c") == BUSY


def test_a_refused_visitor_gets_the_freed_slot_first():
    s, now = slots()
    assert s.take("a") == ""
    now[0] += 10
    assert s.take("b") == BUSY  # b asked during a's run
    s.give_back("a")
    refusal = s.take("a")  # a presses again at once: the slot is kept for b
    assert "kept for a visitor who was waiting" in refusal and f"{HANDOVER_S:.0f} s" in refusal
    assert s.take("b") == ""
    s.give_back("b")
    assert s.take("a") == ""  # a asked during b's run: now a's turn (and nobody else waits)


def test_a_waiter_who_does_not_come_back_loses_the_slot_after_the_handover():
    s, now = slots()
    assert s.take("a") == ""
    assert s.take("b") == BUSY
    s.give_back("a")
    assert s.take("a") != ""
    now[0] += HANDOVER_S + 1
    assert s.take("a") == ""


def test_a_stale_refusal_holds_no_place():
    s, now = slots()
    assert s.take("a") == ""
    assert s.take("b") == BUSY
    now[0] += MAX_RUN_S + HANDOVER_S + 1  # b's refusal is now older than a run and a handover
    assert s.take("c") == BUSY  # c asks: b's stale place is dropped, c's is kept
    s.give_back("a")
    assert "kept for a visitor who was waiting" in s.take("b")
    assert s.take("c") == ""


def test_only_capacity_sessions_win_a_race():
    s = TrainingSlots(capacity=2)
    results, start = {}, threading.Barrier(8)

    def press(name: str) -> None:
        start.wait()
        results[name] = s.take(name)

    threads = [threading.Thread(target=press, args=(f"tab-{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r == "" for r in results.values()) == [False] * 6 + [True] * 2
    assert s.training() == {n for n, r in results.items() if r == ""}
