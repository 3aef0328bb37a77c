"""Practice: every card of the spec as a drill with fresh numbers, checked live by attn_core."""

import secrets
import time

import pandas as pd
import streamlit as st

from attn_core.views import practice
from attn_core.views.practice import Difficulty
from lab_ui import figures, widgets
from lab_ui.badges import table
from lab_ui.open_page import open_drill
from lab_ui.page import compute, header, require, safety_net

TITLE = "Practice"
INTRO = (
    "Cover the card, derive the answer on paper, then type it. Every question draws fresh numbers, and "
    "its answer is computed live by the same attn_core function the card's page uses; a wrong answer is "
    "matched against the slips people make. **Enter** checks, **N** draws the next question."
)
FIX = "the drill: pick at least one card in the sidebar"


def setup() -> tuple[list[str], str, str]:
    with st.sidebar:
        st.header("Drill")
        cards = st.multiselect(
            "cards",
            list(practice.CARD_TITLES),
            default=practice.cards_from_link(st.query_params.get("pr_cards")),
            format_func=lambda c: f"{c} · {practice.CARD_TITLES[c]}",
            key="pr_cards",
            help="A link can choose them: ?pr_cards=13,14",
        )
        difficulty = widgets.selectbox(
            "difficulty", tuple(Difficulty), key="pr_diff", default=Difficulty.MEDIUM
        )
        timer = widgets.selectbox("time per question", tuple(practice.TIMERS), key="pr_timer")
    return cards, difficulty, timer


def session() -> tuple[int, int]:
    """The session's seed and the current question's number (kept per browser session)."""
    if "pr_seed" not in st.session_state:
        st.session_state.pr_seed = secrets.randbelow(2**31)
        st.session_state.pr_n = 0
        st.session_state.pr_log = []
    if st.session_state.get("pr_shown_n") != st.session_state.pr_n:
        st.session_state.pr_shown_n = st.session_state.pr_n
        st.session_state.pr_shown_at = time.monotonic()
    return st.session_state.pr_seed, st.session_state.pr_n


def advance() -> None:
    st.session_state.pr_n += 1


def submit() -> None:
    st.session_state.pr_submit = True


def answer_box(question, n: int):
    """The question and the answer box; returns the submitted text or None. Enter in the box
    submits (its change callback), as does the Check button."""
    st.subheader(f"Card {question.card} · {question.title}")
    st.markdown(question.prompt)
    if question.choices:
        text = st.radio("Your answer", question.choices, index=None, key=f"pr_answer_{n}", on_change=submit)
    else:
        text = st.text_input(
            "Your answer",
            key=f"pr_answer_{n}",
            placeholder=question.hint,
            max_chars=practice.max_chars(question.answer_kind),
            on_change=submit,
        )
    clicked = st.button("Check", type="primary", key=f"pr_check_{n}", icon=":material/check:")
    st.caption(f"Checked by attn_core, accepted within {question.tolerance_text}. Format: {question.hint}.")
    submitted = clicked or st.session_state.pop("pr_submit", False)
    return (text or "") if submitted else None


def show_feedback(question, fb, timer: str) -> None:
    if fb.verdict.correct:
        st.success(fb.headline, icon=":material/check_circle:")
    else:
        st.error(fb.headline, icon=":material/cancel:")
    if fb.slip_note:
        st.warning(fb.slip_note, icon=":material/search:")
    if fb.over_time:
        st.caption(f"Over the {timer} limit: counted, and flagged in the progress log by its time.")
    with st.expander("Worked steps", expanded=not fb.verdict.correct):
        for step in fb.steps:
            st.markdown(f"- {step}")
        if question.slips:
            st.markdown("**Slips this card invites:** " + "; ".join(question.slips))
    open_drill(question.link)


def progress_chart_and_table(view: practice.ProgressView) -> None:
    """Tried and right per card answered, as bars and as a table; the cards not tried, in a line."""
    rows = view.rows
    fig = figures.bars(
        [f"card {r.card}" for r in rows],
        {"tried": [r.tried for r in rows], "right": [r.right for r in rows]},
        title="Answers per card this session",
        y_title="questions",
    )
    figures.show(fig, key="pr_chart")
    df = pd.DataFrame(
        {
            "card": [r.card for r in rows],
            "tried": [r.tried for r in rows],
            "right": [r.right for r in rows],
            "mean time (s)": [round(r.mean_seconds, 1) for r in rows],
            "slips made": [r.slips for r in rows],
        }
    )
    table(df, "practice_by_card.csv", key="pr_progress", hide_index=True)
    if view.untried:
        n = len(view.untried)
        st.caption(f"{n} card{'s' if n != 1 else ''} of the drill not tried yet: {', '.join(view.untried)}.")


def show_progress(cards: list[str]) -> None:
    st.subheader("Progress")
    log = st.session_state.pr_log
    view = practice.progress(log, cards)
    if view.rows:
        progress_chart_and_table(view)
    else:
        st.info("No answers yet this session: check one and your progress per card appears here.")
    if log:
        log_csv = practice.to_csv(log).encode()
        st.download_button(
            "⬇ Progress log (CSV)",
            log_csv,
            "practice_log.csv",
            "text/csv",
            key="pr_log_csv",
            on_click="ignore",
        )
    upload = st.file_uploader("Continue from a downloaded log", type=["csv"], key="pr_upload")
    if upload is not None and st.session_state.get("pr_loaded") != upload.file_id:
        text = upload.getvalue().decode("utf-8", errors="replace")
        loaded = compute(practice.from_csv, text, inputs="the uploaded log", fresh=True)
        if loaded is not None:
            st.session_state.pr_log = [*loaded, *log]
            st.session_state.pr_loaded = upload.file_id
            st.rerun()


def inputs() -> tuple[list[str], str, str]:
    """The drill: (cards, difficulty, timer); the page stops until a card is picked."""
    cards, difficulty, timer = setup()
    require(cards or None, fix=FIX)
    return cards, difficulty, timer


def build(ask: tuple[list[str], str, str]) -> tuple[int, int]:
    """This session's seed and question number: the question is drawn from them."""
    return session()


def show(ask: tuple[list[str], str, str], view: tuple[int, int]) -> None:
    """The question, its answer box and feedback, the Next button and the progress log."""
    cards, difficulty, timer = ask
    seed, n = view
    with safety_net("the cards, the difficulty and your answer"):
        question = practice.next_question(cards, difficulty, seed, n)
        text = answer_box(question, n)
        if text is not None:
            seconds = time.monotonic() - st.session_state.pr_shown_at
            fb = practice.feedback(question, text, seconds, timer)
            if fb.verdict.got is not None and st.session_state.get("pr_recorded") != (seed, n):
                q_seed = practice.question_seed(seed, n)
                st.session_state.pr_log.append(
                    practice.record(question, q_seed, difficulty, fb, seconds, text)
                )
                st.session_state.pr_recorded = (seed, n)
            st.session_state.pr_feedback = (n, fb)
        last = st.session_state.get("pr_feedback")
        if last is not None and last[0] == n:
            show_feedback(question, last[1], timer)
    st.button("Next question", key="pr_next", on_click=advance, shortcut="n", icon=":material/skip_next:")
    with safety_net("the progress log"):
        show_progress(cards)


header(TITLE, INTRO)
ask = inputs()
view = build(ask)
require(view, fix=FIX)
show(ask, view)
