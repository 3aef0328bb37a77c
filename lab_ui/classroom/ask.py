"""A live question: the presenter asks the room one Practice drill, followers answer on their own
screens, and the presenter sees the answers counted live, the wrong ones grouped by the slip
that produces them (attn_core.practice.tally, drawn by lab_ui.question_tally).

What can be asked is what the presenter's screen shows: the playing lesson step's question
(lab_ui.lessons.step_question) or, on the Practice page, the card of the drill on screen (read
from that page's own session keys, never written). The room keeps only the card, a fresh seed and
the difficulty (question.Asked), so every screen draws the same numbers.

A follower's question box is drawn by its own run, above the presenter's page (the frame or the
page run), and is a fragment: sending an answer reruns only the box, so it works while the rest of
the screen is the presenter's frame, put there with no run (lab_ui.classroom.change_push). A new or
closed question changes the room's `Status.question`, so a follower's poll (or a push) reruns its
screen to draw the box again.
"""

from __future__ import annotations

import functools
import hashlib

import streamlit as st

from attn_core.practice import drills
from attn_core.practice.answers import max_chars
from attn_core.practice.question import AnswerKind, Difficulty, Question
from attn_core.practice.tally import tally
from attn_core.views.practice import question_seed, show_answer
from classroom_store import records, rooms
from classroom_store.question import MAX_ANSWERS, Asked
from lab_ui import lessons, question_tally

_SENT = "_classroom_answer_sent"  # session key: {question id: the text this screen sent}
_NOTE = "_classroom_question_note"  # session key: a message for the presenter's box
_ANSWER_NOTE = "_classroom_answer_note"  # session key: why a follower's answer was not taken
PRACTICE = "practice"  # the Practice page's url_path (lab_ui/nav.py)


@functools.lru_cache(maxsize=64)
def drawn(card: str, seed: int, difficulty: str) -> Question:
    """The room's question as every screen draws it (the same three values, the same numbers)."""
    return drills.draw(card, seed, difficulty)


def _of(asked: Asked) -> Question:
    return drawn(asked.card, asked.seed, asked.difficulty)


_JUDGED_QUESTIONS = 16  # questions whose verdicts this process keeps (a live room has one)


class _ByDigest(dict):
    """Verdicts by answer text, keyed by the text's 16-byte digest (an answer may be 2,000
    characters; its digest is what is kept)."""

    def get(self, text, default=None):
        return super().get(hashlib.blake2b(text.encode(), digest_size=16).digest(), default)

    def __setitem__(self, text, verdict) -> None:
        super().__setitem__(hashlib.blake2b(text.encode(), digest_size=16).digest(), verdict)


_judged: dict[str, _ByDigest] = {}  # question id -> its verdicts, newest question last


def _verdicts(asked: Asked) -> _ByDigest:
    """The verdicts already given for this question's answers, by text: the presenter's count
    runs every second, and judges only the answers it has not seen (a judgement takes up to
    ~0.3 ms, so 1,024 distinct answers re-judged each second would cost ~0.3 s a second)."""
    found = _judged.pop(asked.id, None)
    if found is None or len(found) > 4 * MAX_ANSWERS:  # rewrites only add: bounded anyway
        found = _ByDigest()
    _judged[asked.id] = found
    while len(_judged) > _JUDGED_QUESTIONS:
        del _judged[next(iter(_judged))]
    return found


def askable(url_path: str) -> tuple[str, str, str] | None:
    """(card, difficulty, where it comes from) that the presenter can ask now, or None: on the
    Practice page the drill on screen, else the playing lesson step's question."""
    state = st.session_state
    if url_path == PRACTICE and isinstance(state.get("pr_seed"), int) and isinstance(state.get("pr_n"), int):
        cards = [c for c in state.get("pr_cards") or [] if c in drills.DRILLS] or list(drills.DRILLS)
        try:
            difficulty = Difficulty(state.get("pr_diff", Difficulty.MEDIUM)).value
        except ValueError:
            difficulty = Difficulty.MEDIUM.value
        card = drills.pick_card(cards, question_seed(state["pr_seed"], state["pr_n"]))
        return card, difficulty, "the drill on this page"
    card = lessons.step_question()
    if card in drills.DRILLS:
        return card, Difficulty.MEDIUM.value, "this lesson step's question"
    return None


def _ask(room_id: str, secret: str, card: str, difficulty: str) -> None:
    try:
        rooms.store().ask(room_id, secret, card, difficulty)
    except records.RoomError as err:
        st.session_state[_NOTE] = f"Could not ask the room: {err}."


def _close(room_id: str, secret: str) -> None:
    try:
        rooms.store().close_question(room_id, secret)
    except records.RoomError as err:
        st.session_state[_NOTE] = f"Could not close the question: {err}."


def _clear(room_id: str, secret: str) -> None:
    try:
        rooms.store().clear_question(room_id, secret)
    except records.RoomError as err:
        st.session_state[_NOTE] = f"Could not go back to the page: {err}."


def _room_question(room: dict) -> Asked | None:
    try:
        return rooms.store().question(room["id"])
    except records.RoomError:
        return None


def presenter_box(room: dict, url_path: str) -> None:
    """In the presenter's Classroom box: ask what the screen shows (while no question is on it)."""
    note = st.session_state.pop(_NOTE, None)
    if note:
        st.warning(note, icon=":material/quiz:")
    if _room_question(room) is not None:
        st.caption("The room's question is on your screen in place of the page: reveal its answer there.")
        return
    found = askable(url_path)
    if found is None:
        st.caption("A lesson step with a question, or the Practice page, lets you ask the room.")
        return
    card, difficulty, where = found
    st.markdown(f"Ask {where}: card {card}, *{drills.DRILLS[card].title}* (fresh numbers, {difficulty}).")
    st.button(
        "Ask the room",
        key="classroom_ask",
        icon=":material/quiz:",
        on_click=_ask,
        args=(room["id"], room["secret"], card, difficulty),
        help="Every follower gets this drill with the same new numbers and answers on their own screen.",
    )


def presenter_question(room: dict) -> bool:
    """The presenter's main area while the room has a question: exactly the room's question (her
    page's own drill would show other numbers), its answer only once she reveals it (which closes
    it for everyone), then back to the page. True when it drew the question (the page does not run)."""
    asked = _room_question(room)
    if asked is None:
        return False
    question = _of(asked)
    with st.container(border=True, key="classroom_room_question"):
        st.markdown(f"**The room's question** · card {question.card}, *{question.title}*")
        st.markdown(question.prompt)
        args = (room["id"], room["secret"])
        if asked.open:
            st.caption(
                f"Followers answer on their own screens (units and tolerance: {question.tolerance_text}); "
                "the count is in the sidebar. No screen shows the answer until you reveal it."
            )
            st.button(
                "Reveal the answer",
                key="classroom_close_question",
                icon=":material/done_all:",
                type="primary",
                on_click=_close,
                args=args,
                help="Closes the question: no more answers.",
            )
            return True
        _reveal(question, None)
        st.button(
            "Back to the page",
            key="classroom_clear_question",
            icon=":material/undo:",
            on_click=_clear,
            args=args,
            help="The question and its answers go; every screen shows your page.",
        )
    return True


def live(room: dict) -> None:
    """The presenter's live count of the answers (drawn by the one-second check-in)."""
    try:
        asked = rooms.store().question(room["id"])
        if asked is None:
            return
        answers, seated = rooms.store().answers(room["id"], room["secret"])
    except records.RoomError:
        return
    question = _of(asked)
    with st.container(border=True, key="classroom_tally"):
        state = "open" if asked.open else "closed: followers see the answer"
        st.markdown(f"**Card {asked.card}, {question.title}** ({state})")
        counted = tally(question, answers, seats=seated, judged=_verdicts(asked))
        question_tally.show(counted, key="classroom_tally_chart", folded=True)


def follower_box(room: dict, seat: str, client: str) -> None:
    """Above the page on a follower's screen: the room's question, if any, and this screen's
    answer box. Remembers which question (and state) it drew, for the poll to notice a change."""
    try:
        asked = rooms.store().question(room["id"])
    except records.RoomError:
        return
    room["question_tag"] = "" if asked is None else asked.tag
    if asked is not None:
        _answer_box(room["id"], seat, client, asked)


@st.fragment
def _answer_box(room_id: str, seat: str, client: str, asked: Asked) -> None:
    question = _of(asked)
    sent = st.session_state.setdefault(_SENT, {})
    with st.container(border=True, key="classroom_question"):
        st.markdown(f"**The presenter asks the room** · card {question.card}, *{question.title}*")
        st.markdown(question.prompt)
        if asked.open:
            _answer_form(room_id, seat, client, asked, question, sent)
        else:
            _reveal(question, sent.get(asked.id))


def _send(room_id: str, seat: str, client: str, question_id: str) -> None:
    """The Send button's callback (it runs before the box's next run, so a press is never lost
    to a rerun): the answer to the room, or the reason it was not taken for the box to say. The
    seat is renewed first: a student exploring on their own does not poll, and still answers."""
    text = st.session_state.get(f"classroom_answer_{question_id}")
    text = "" if text is None else str(text).strip()
    sent = st.session_state.setdefault(_SENT, {})
    if not text:
        st.session_state[_ANSWER_NOTE] = "Type an answer first."
        return
    try:
        if rooms.store().follow(room_id, seat, client) is not records.Seat.TAKEN:
            raise records.RoomError("every seat of the room is taken")
        rooms.store().answer(room_id, seat, question_id, text)
    except records.RoomError as err:
        st.session_state[_ANSWER_NOTE] = f"Your answer was not taken: {err}."
    else:
        sent.clear()  # one question's answer at a time: nothing else is kept
        sent[question_id] = text


def _answer_form(room_id: str, seat: str, client: str, asked: Asked, question: Question, sent: dict) -> None:
    with st.form(f"classroom_form_{asked.id}", border=False):
        if question.answer_kind is AnswerKind.CHOICE:
            st.radio("Your answer", question.choices, index=None, key=f"classroom_answer_{asked.id}")
        else:
            st.text_input(
                "Your answer",
                key=f"classroom_answer_{asked.id}",
                placeholder=question.hint,
                max_chars=max_chars(question.answer_kind),
            )
        st.form_submit_button(
            "Send my answer",
            type="primary",
            icon=":material/send:",
            key=f"classroom_send_{asked.id}",
            on_click=_send,
            args=(room_id, seat, client, asked.id),
        )
    note = st.session_state.pop(_ANSWER_NOTE, None)
    if note:
        st.warning(note, icon=":material/error:")
    if asked.id in sent:
        shown = sent[asked.id].replace("`", "'")[:200]
        st.caption(f"Sent: `{shown}`. You can change it until the presenter closes the question.")
    st.caption(f"Units and tolerance: {question.tolerance_text}.")


def _reveal(question: Question, mine: str | None) -> None:
    """The answer, how ``mine`` (this screen's answer, None for none) fared, the worked steps."""
    st.markdown(f"**The answer:** {show_answer(question)}")
    if mine is not None:
        verdict, shown = question.judge(mine), mine.replace("`", "'")[:200]
        if verdict.correct:
            st.success(f"You answered `{shown}`: right.")
        elif verdict.slip is not None:
            st.info(f"You answered `{shown}`: that is what you get when you {verdict.slip}.")
        else:
            st.info(f"You answered `{shown}`.")
    with st.expander("Worked steps", expanded=True):
        for step in question.steps:
            st.markdown(step)
