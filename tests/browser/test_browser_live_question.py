"""A live question in real browsers: a presenter playing a lesson starts a room and asks the room
the step's question, two students answer on their own screens (the first, exploring on its own,
right; the second, following, with the query-heads slip). While the question is open the
presenter's screen (the projector) shows exactly the room's question and no answer, and each
following screen shows it once, with nothing of the presenter's page beside it; the presenter
sees the answers grouped by slip, reveals the answer, every student is shown it, and Back to the
page brings the page back.

Oracle: card 13's KV cache per token, 2 · L · H_kv · d_h · b bytes, computed here from the numbers
the students' screens print; the slip is the same product with the query heads."""

from __future__ import annotations

import re

import pytest
from conftest import ARTIFACTS, wait_idle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1, "fp8": 1}
PROMPT = re.compile(
    r"A model has (\d+) layers, (\d+) query heads and (\d+) KV heads? of width (\d+), and keeps its cache in (\w+)"
)
QUESTION, TALLY = ".st-key-classroom_question", ".st-key-classroom_tally"
ROOM_QUESTION = ".st-key-classroom_room_question"  # the presenter's: the room's question


def _numbers(pg) -> tuple[int, int, int, int, int]:
    box = pg.locator(QUESTION)
    expect(box).to_be_visible(timeout=30_000)
    layers, heads, kv, d_h, dtype = PROMPT.search(box.inner_text()).groups()
    return int(layers), int(heads), int(kv), int(d_h), BYTES[dtype]


def _send(pg, text: str) -> None:
    box = pg.locator(QUESTION)
    box.get_by_label("Your answer").fill(text)
    box.get_by_role("button", name="Send my answer").click()
    expect(box.get_by_text("Sent:")).to_be_visible(timeout=20_000)


def test_a_room_answers_the_lessons_question_and_the_presenter_sees_the_slips(server_url, browser):
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1100}) for _ in range(3)]
    try:
        presenter, *students = (ctx.new_page() for ctx in contexts)
        presenter.goto(f"{server_url}/?lesson=memory-128k")
        wait_idle(presenter, 60_000)
        expect(presenter.locator(".st-key-lesson_panel").get_by_text("step 1 of")).to_be_visible(
            timeout=30_000
        )
        presenter.get_by_text("Classroom").first.click()
        presenter.get_by_role("button", name="Start a room").click()
        link = presenter.locator("[data-testid=stSidebar] [data-testid=stCode]").first
        expect(link).to_contain_text("room=", timeout=20_000)
        student_link = re.search(r"https?://\S+room=\w+", link.inner_text()).group(0)
        for student in students:
            student.goto(student_link)
            wait_idle(student, 60_000)
            expect(student.get_by_text("Following room")).to_be_visible(timeout=20_000)

        # the first student explores on their own: no frames, no pushes, and still asked
        students[0].get_by_role("button", name="Take control").click()
        expect(students[0].get_by_role("button", name="Rejoin the presenter")).to_be_visible(timeout=30_000)
        presenter.get_by_role("button", name="Ask the room").click()
        wait_idle(presenter)
        numbers = [_numbers(student) for student in students]
        assert numbers[0] == numbers[1]  # the same drawn numbers on every screen
        layers, heads, kv, d_h, b = numbers[0]
        right = 2 * layers * kv * d_h * b / 1024
        slip = 2 * layers * heads * d_h * b / 1024
        assert right != slip
        _send(students[0], f"{right:g}")

        # the projector: exactly the room's question, no answer anywhere on it, no page beside it
        room_box = presenter.locator(ROOM_QUESTION)
        expect(room_box).to_be_visible(timeout=20_000)
        assert PROMPT.search(room_box.inner_text()).groups()[:4] == tuple(str(n) for n in numbers[0][:4])
        main = presenter.locator("[data-testid=stMain]").inner_text()
        assert len(PROMPT.findall(main)) == 1 and f"{right:g} KiB" not in presenter.inner_text("body")
        assert presenter.locator(".st-key-lesson_panel").count() == 0
        # a following screen: the room's question once, and no "Your answer" but its own
        following = students[1].locator("[data-testid=stMain]")
        assert len(PROMPT.findall(following.inner_text())) == 1
        assert following.get_by_label("Your answer").count() == 1
        _send(students[1], f"{slip:g} KiB")

        tally = presenter.locator(TALLY)
        expect(tally.get_by_text("2 of 2 answered; 1 right.")).to_be_visible(timeout=20_000)
        expect(
            tally.get_by_text(
                f"1 used the {heads} query heads instead of the {kv} KV head{'' if kv == 1 else 's'}."
            )
        ).to_be_visible()
        presenter.screenshot(path=str(ARTIFACTS / "live-question-presenter.png"), full_page=True)
        tally.screenshot(path=str(ARTIFACTS / "live-question-tally.png"))

        assert f"{right:g} KiB" not in presenter.inner_text("body")  # the count, still no answer
        presenter.get_by_role("button", name="Reveal the answer").click()
        expect(room_box.get_by_text("The answer:")).to_be_visible(timeout=20_000)
        for student in students:
            expect(student.locator(QUESTION).get_by_text("The answer:")).to_be_visible(timeout=20_000)
        expect(students[0].locator(QUESTION).get_by_text("right.")).to_be_visible()
        expect(
            students[1].locator(QUESTION).get_by_text(f"when you used the {heads} query heads")
        ).to_be_visible()
        students[1].screenshot(path=str(ARTIFACTS / "live-question-student.png"), full_page=True)
        presenter.get_by_role("button", name="Back to the page").click()
        expect(presenter.locator(".st-key-lesson_panel")).to_be_visible(timeout=20_000)
        expect(
            students[1].locator(".st-key-lesson_panel, [data-testid=stMain]").get_by_text("step 1 of").first
        ).to_be_visible(timeout=20_000)
        expect(students[1].locator(QUESTION)).to_have_count(0)
        for pg in (presenter, *students):
            assert pg.locator("[data-testid=stException]").count() == 0
    finally:
        for ctx in contexts:
            ctx.close()
