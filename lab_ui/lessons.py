"""The lesson player: a lesson (attn_core.lessons) plays on any page, its narration in a panel
above the page's figures, stepped by ← and → (keys or buttons).

The lesson and its step live where every widget value lives (lab_ui/widgets.py): the session's
``_keep_`` keys and the URL (``?lesson=<id>&lesson_step=<n>``, n from 1). A classroom room
publishes exactly those keys with the page, so a follower's screen moves to the presenter's step
and shows its narration with no code of its own. Opening a step clears the page settings the
last view left (each is kept under ``_keep_``; the screen's own projector mode and palette stay)
and opens the step's page with its URL state, as if its link had been opened.

`panel()` is called by lab_ui.page.header on every page; the sidebar's Lessons box (choose,
upload, write) is in lab_ui.lesson_writer. An uploaded lesson is kept on this process's shelf
(lab_ui.lesson_shelf) as its uploader's, under an id the server made: `find` plays it on any
screen that has the id (a room's followers), `catalogue` lists it to its uploader alone. Every
word of a lesson reaches the screen through lab_ui.safe_text: shown, never followed or fetched.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping

import streamlit as st

from attn_core import lessons as model
from lab_ui import st_internals
from lab_ui.lesson_shelf import LessonShelf
from lab_ui.nav import HOME, PAGES, PageInfo
from lab_ui.safe_text import code_span, safe_markdown
from lab_ui.widgets import KEEP_PREFIX, SCREEN_KEYS

LESSON_KEY, STEP_KEY = "lesson", "lesson_step"  # the URL keys (and `_keep_` session keys)
ROOM_PARAM = "room"  # lab_ui.classroom.session's link parameter: a step keeps it
KEPT = SCREEN_KEYS | {LESSON_KEY, STEP_KEY}
_STARTED = "_lesson_started"  # session key: the session has had its first run
_GOTO = "_lesson_goto"  # session key: the step a button or key asked for, opened on the next run
_OWNER = "_lesson_owner"  # session key: this session's name as an uploader (random)
PAGE_BY_URL: dict[str, PageInfo] = {p.url_path: p for p in (HOME, *PAGES)}
SHELF = LessonShelf()  # the lessons uploaded to this server process, each its uploader's


@st.cache_resource(show_spinner=False)
def _shipped() -> dict[str, model.Lesson]:
    return model.shipped(PAGE_BY_URL)


def find(lesson_id: str | None) -> model.Lesson | None:
    """The lesson with this id: a shipped one, else one uploaded to this process (by anyone: a
    room's followers play what their presenter uploaded; an upload's id is the server's, random)."""
    if not lesson_id:
        return None
    return _shipped().get(lesson_id) or SHELF.get(lesson_id)


def catalogue() -> dict[str, model.Lesson]:
    """The lessons this screen's Lessons box lists: the shipped ones, then its own uploads."""
    return {**_shipped(), **{lesson.id: lesson for lesson in SHELF.owned_by(_owner())}}


def _owner() -> str:
    """This session as an uploader: its Streamlit session id (to tell when it has ended) and a
    random name (every AppTest session has the same id)."""
    ctx = st_internals.script_run_ctx()
    session_id = "" if ctx is None else ctx.session_id
    return f"{session_id} {st.session_state.setdefault(_OWNER, secrets.token_hex(8))}"


def _alive(owner: str) -> bool:
    session_id = owner.split(" ", 1)[0]
    return not session_id or st_internals.server_session_alive(session_id)


def upload(lesson: model.Lesson) -> model.Lesson:
    """Keep a lesson this session uploaded; it comes back under the id the server gave it.
    ValueError (lab_ui.lesson_shelf.ShelfFull) when this process has no room for it."""
    return SHELF.add(_owner(), lesson, _alive)


def current_page() -> PageInfo:
    """The registry entry of the page this run shows (Home when it cannot tell)."""
    ctx = st_internals.script_run_ctx()
    if ctx is not None:
        script = str(ctx.pages_manager.get_pages().get(ctx.page_script_hash, {}).get("script_path", ""))
        for page in PAGE_BY_URL.values():
            if script.replace("\\", "/").endswith("/" + page.path):
                return page
    return HOME


def _stored(name: str, from_link: bool) -> str | None:
    """The session's value, else (on the session's first run: a link just opened) the URL's. Later
    the URL only mirrors the session: a room's follower whose presenter closed the lesson keeps a
    stale ``?lesson=`` in its address until its next change, and must not reopen it."""
    value = st.session_state.get(KEEP_PREFIX + name)
    if value is None and from_link:
        value = st.query_params.get(name)
    return None if value is None else str(value)


def active(from_link: bool = False) -> tuple[model.Lesson, int] | None:
    """The lesson playing on this screen and its step (0-based), or None."""
    lesson = find(_stored(LESSON_KEY, from_link))
    if lesson is None:
        return None
    try:
        step = int(_stored(STEP_KEY, from_link) or "1") - 1
    except ValueError:
        step = 0
    return lesson, min(max(step, 0), len(lesson.steps) - 1)


def step_question() -> str | None:
    """The card of the question of the step this run shows (a step button pressed before this
    run counts: the sidebar asks before the page's panel opens it), or None."""
    request = st.session_state.get(_GOTO)
    if request is not None:
        lesson = find(request["lesson"])
        if lesson is None:
            return None
        return lesson.steps[min(max(int(request["step"]), 0), len(lesson.steps) - 1)].question
    playing = active(from_link=not st.session_state.get(_STARTED))  # a link opened in this run
    return None if playing is None else playing[0].steps[playing[1]].question


def go(
    lesson_id: str | None, step: int = 0, *, state: Mapping[str, str] | None = None, page: str = ""
) -> None:
    """Ask for a step (a button's callback): it opens at the start of the next run. ``lesson_id``
    None closes the lesson; ``state`` and ``page`` open another view within the lesson (a step's
    question in Practice)."""
    st.session_state[_GOTO] = {"lesson": lesson_id, "step": step, "state": state, "page": page}


def _clear_view(also: Mapping[str, str]) -> None:
    """Forget the page settings the last view left, so the next view opens as its link says."""
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(KEEP_PREFIX)]:
        name = key[len(KEEP_PREFIX) :]
        if name not in KEPT:
            del st.session_state[key]
            st.session_state.pop(name, None)
    for name in also:
        if name not in KEPT:
            st.session_state.pop(name, None)


def _keep(lesson_id: str | None, step: int) -> None:
    if lesson_id is None:
        for name in (LESSON_KEY, STEP_KEY):
            st.session_state.pop(KEEP_PREFIX + name, None)
            if name in st.query_params:
                del st.query_params[name]
        return
    st.session_state[KEEP_PREFIX + LESSON_KEY] = lesson_id
    st.session_state[KEEP_PREFIX + STEP_KEY] = step + 1
    st.query_params[LESSON_KEY] = lesson_id
    st.query_params[STEP_KEY] = str(step + 1)


def _open(request: Mapping) -> None:
    """Open what `go` asked for: the step's page at the step's URL state (or close the lesson)."""
    lesson = find(request["lesson"])
    if lesson is None:
        _keep(None, 0)
        return
    step_index = min(max(int(request["step"]), 0), len(lesson.steps) - 1)
    step = lesson.steps[step_index]
    state = dict(step.state if request["state"] is None else request["state"])
    target = PAGE_BY_URL.get(request["page"] or step.page, HOME)
    _clear_view(state)
    params = {k: v for k, v in st.query_params.items() if k in SCREEN_KEYS or k == ROOM_PARAM}
    params.update(state)
    params.update({LESSON_KEY: lesson.id, STEP_KEY: str(step_index + 1)})
    _keep(lesson.id, step_index)
    if target != current_page():
        st.switch_page(target.path, query_params=params)
    st.query_params.from_dict(params)


def _from_link(lesson: model.Lesson, step: int) -> None:
    """A fresh screen opened a lesson link: a link to another page goes to the step's own page,
    and a setting of the step that the link does not carry comes from the step."""
    if lesson.steps[step].page != current_page().url_path:
        _open({"lesson": lesson.id, "step": step, "state": None, "page": ""})
    for key, value in lesson.steps[step].state.items():
        if key not in st.query_params and key not in st.session_state:
            st.query_params[key] = value


def panel() -> None:
    """The playing lesson's narration, its step buttons and the ← → keys (nothing without one)."""
    request = st.session_state.pop(_GOTO, None)
    if request is not None:
        _open(request)
    first = not st.session_state.get(_STARTED)
    st.session_state[_STARTED] = True
    fresh = first and KEEP_PREFIX + LESSON_KEY not in st.session_state  # a link just opened
    playing = active(from_link=fresh)
    if playing is None:
        # An id this server does not have (a link's typo, or a lesson uploaded to another server
        # of a room): said, and kept as it is, so a follower's values still equal the room's.
        wanted = _stored(LESSON_KEY, fresh)
        if wanted is not None:
            # the value is the address's: shown as code, outside the colour's brackets
            st.caption(f":orange[There is no lesson] {code_span(wanted[:40])} :orange[on this server.]")
        for name in (LESSON_KEY, STEP_KEY):
            if name in st.query_params and KEEP_PREFIX + name not in st.session_state:
                del st.query_params[name]
        return
    lesson, index = playing
    if fresh:
        _from_link(lesson, index)
    _keep(lesson.id, index)
    _draw(lesson, index)


def _draw(lesson: model.Lesson, index: int) -> None:
    step = lesson.steps[index]
    n = len(lesson.steps)
    with st.container(border=True, key="lesson_panel"):
        st.caption(f"Lesson · {safe_markdown(lesson.title)} · step {index + 1} of {n}")
        st.markdown(f"**{safe_markdown(step.title)}**")
        for line in step.narration:  # an uploaded file's words: shown, never followed or fetched
            st.markdown(safe_markdown(line))
        if step.question is not None:
            _question(lesson, index, step.question)
        here = current_page().url_path
        if step.page != here:
            st.caption(f"This step is on the page *{PAGE_BY_URL[step.page].title}*.")
        with st.container(horizontal=True, key="lesson_buttons"):
            st.button(
                "← Previous", key="lesson_prev", disabled=index == 0, on_click=go, args=(lesson.id, index - 1)
            )
            st.button(
                "Next →",
                key="lesson_next",
                type="primary",
                disabled=index == n - 1,
                on_click=go,
                args=(lesson.id, index + 1),
            )
            if step.page != here:
                st.button("Back to this step", key="lesson_again", on_click=go, args=(lesson.id, index))
            st.button("Close the lesson", key="lesson_close", type="tertiary", on_click=go, args=(None,))
        st.caption("The ← and → keys step too (when no control has the focus).")
    st.html(  # a constant: tests/test_security.py
        """<script>
(() => {
  if (window.__attnLabLessonKeys) return;
  window.__attnLabLessonKeys = true;
  // Arrow keys belong to whatever has focus when it uses them: a text box, a slider, a radio row.
  const busy = 'input, textarea, select, [contenteditable="true"], [role="slider"], [role="radio"], ' +
    '[role="radiogroup"], [role="combobox"], [role="listbox"], [role="option"], [role="tab"]';
  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const which = {ArrowRight: "lesson_next", ArrowLeft: "lesson_prev"}[e.key];
    if (!which || (e.target instanceof Element && e.target.closest(busy))) return;
    const button = document.querySelector(".st-key-" + which + " button");
    if (!button || button.disabled) return;
    e.preventDefault();
    button.click();
  });
})();
</script>""",
        unsafe_allow_javascript=True,
    )


def _question(lesson: model.Lesson, index: int, card: str) -> None:
    from attn_core.practice.drills import DRILLS

    st.markdown(f"**Ask the room:** card {card}, *{DRILLS[card].title}*: a fresh question in Practice.")
    st.button(
        "Open this question in Practice",
        key="lesson_question",
        icon=":material/quiz:",
        on_click=go,
        args=(lesson.id, index),
        kwargs={"state": {"pr_cards": card}, "page": "practice"},
    )
