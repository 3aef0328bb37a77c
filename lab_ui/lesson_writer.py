"""The sidebar's Lessons box: play a shipped or uploaded lesson, or write one by saving the view
on screen as a step and download the file (the format of attn_core.lessons).

A saved step is the page on screen and its address's query parameters, exactly as a shared link
carries them (minus the room and this screen's own display settings), so playing the step
opens the view the teacher saw. The draft lives in the session only; the download is the lesson.
"""

from __future__ import annotations

import re

import streamlit as st

from attn_core import lessons as model
from lab_ui import lessons
from lab_ui.safe_text import safe_markdown

_DRAFT = "_lesson_draft"  # session key: {"title": str, "steps": [step dicts]}
_UPLOAD_ERROR = "_lesson_upload_error"
_OPEN = "_lesson_writer_open"  # session key: the writer box is open
_BOX_OPEN = "_lesson_box_open"  # session key: the Lessons box is open
NO_QUESTION = ""


def _draft() -> dict:
    return st.session_state.setdefault(_DRAFT, {"steps": []})


def slug(title: str) -> str:
    """A lesson id from its title: lower-case letters, digits and dashes."""
    text = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40]
    return text or "my-lesson"


def view_state() -> dict[str, str]:
    """This screen's view as a step's URL state: the address's parameters, less the room, the
    lesson itself and this screen's display settings."""
    skip = lessons.KEPT | {lessons.ROOM_PARAM}
    return {k: v for k, v in st.query_params.items() if k not in skip}


def _save(page: str) -> None:
    """The "Save this view as a step" callback: validated now, so the download always loads."""
    draft = _draft()
    raw = {
        "page": page,
        "state": view_state(),
        "title": st.session_state.get("lesson_w_title", ""),
        "narration": [
            line for line in st.session_state.get("lesson_w_text", "").splitlines() if line.strip()
        ],
    }
    if (question := st.session_state.get("lesson_w_question", NO_QUESTION)) != NO_QUESTION:
        raw["question"] = question
    try:
        if len(draft["steps"]) >= model.MAX_STEPS:
            raise ValueError(f"a lesson has at most {model.MAX_STEPS} steps")
        model.parse_step(raw, f"step {len(draft['steps']) + 1}", lessons.PAGE_BY_URL, model.drill_ids())
    except ValueError as exc:
        st.session_state["_lesson_w_error"] = str(exc)
        return
    draft["steps"].append(raw)
    st.session_state["lesson_w_title"] = ""
    st.session_state["lesson_w_text"] = ""


def draft_lesson() -> model.Lesson | None:
    """The draft as a lesson (None until it has a title and a step)."""
    draft = _draft()
    title = str(draft.get("title", "")).strip()
    if not title or not draft["steps"]:
        return None
    return model.parse(
        {"id": slug(title), "title": title, "summary": "", "steps": draft["steps"]},
        lessons.PAGE_BY_URL,
        model.drill_ids(),
    )


def _toggle_box() -> None:
    st.session_state[_BOX_OPEN] = bool(st.session_state.get("lesson_box"))


def _toggle() -> None:
    st.session_state[_OPEN] = bool(st.session_state.get("lesson_writer"))


def _name() -> None:
    _draft()["title"] = st.session_state.get("lesson_w_name", "")


def _upload() -> None:
    file = st.session_state.get("lesson_upload")
    if file is None:
        return
    try:
        lesson = lessons.upload(model.loads(file.getvalue(), lessons.PAGE_BY_URL, model.drill_ids()))
    except ValueError as exc:
        st.session_state[_UPLOAD_ERROR] = f"{file.name[:60]}: {exc}"
        return
    lessons.go(lesson.id, 0)


def _play() -> None:
    lessons.go(st.session_state.get("lesson_pick"), 0)


def box() -> None:
    """The sidebar's Lessons and Write-a-lesson boxes (call in the sidebar, outside a fragment)."""
    # Sent only once opened, and kept open from page to page (as the writer below).
    st.session_state["lesson_box"] = bool(st.session_state.get(_BOX_OPEN))
    with st.expander("Lessons", icon=":material/school:", key="lesson_box", on_change=_toggle_box):
        if st.session_state.get("lesson_box"):
            _player_box()
    # Its contents are sent only once opened (most screens never write a lesson); it stays open
    # from page to page while the teacher collects steps (the same key on another page is a new
    # widget, which would start closed).
    st.session_state["lesson_writer"] = bool(st.session_state.get(_OPEN))
    with st.expander("Write a lesson", icon=":material/edit_note:", key="lesson_writer", on_change=_toggle):
        if st.session_state.get("lesson_writer"):
            _writer()


def _player_box() -> None:
    if (playing := lessons.active()) is not None:
        lesson, index = playing
        st.markdown(f"▶ Playing **{safe_markdown(lesson.title)}**, step {index + 1} of {len(lesson.steps)}")
    catalogue = lessons.catalogue()
    st.selectbox(
        "lesson",
        list(catalogue),
        key="lesson_pick",
        format_func=lambda i: catalogue[i].title,
        label_visibility="collapsed",
    )
    st.button("Play this lesson", key="lesson_play", on_click=_play, icon=":material/play_arrow:")
    st.file_uploader("…or play a lesson file", type=["json"], key="lesson_upload", on_change=_upload)
    if (error := st.session_state.pop(_UPLOAD_ERROR, None)) is not None:
        st.text(error)  # plain text: a file name is never read as markdown


def _writer() -> None:
    from attn_core.practice.drills import DRILLS

    page = lessons.current_page()
    # Kept in the draft: the same key on another page is a new widget, which would start empty.
    st.session_state["lesson_w_name"] = _draft().get("title", "")
    st.text_input("lesson title", key="lesson_w_name", max_chars=model.MAX_TITLE, on_change=_name)
    st.caption(f"Set this page ({page.title}) as you want it shown, then save it as the next step.")
    st.text_input("step title", key="lesson_w_title", max_chars=model.MAX_TITLE)
    st.text_area("narration (a few lines)", key="lesson_w_text", height=110, max_chars=2000)
    st.selectbox(
        "question for the room",
        [NO_QUESTION, *DRILLS],
        key="lesson_w_question",
        format_func=lambda c: "none" if c == NO_QUESTION else f"{c} · {DRILLS[c].title}",
    )
    st.button("Save this view as a step", key="lesson_w_save", on_click=_save, args=(page.url_path,))
    if (error := st.session_state.pop("_lesson_w_error", None)) is not None:
        st.text(f"Not saved: {error}")
    steps = _draft()["steps"]
    for i, step in enumerate(steps):
        st.caption(f"{i + 1}. {lessons.PAGE_BY_URL[step['page']].title}: {safe_markdown(step['title'])}")
    if steps:
        st.button("Remove the last step", key="lesson_w_pop", on_click=steps.pop, type="tertiary")
    lesson = draft_lesson()
    st.download_button(
        "⬇ Download the lesson (JSON)",
        lesson.to_json() if lesson is not None else "",
        file_name=f"{lesson.id if lesson else 'lesson'}.json",
        mime="application/json",
        key="lesson_w_download",
        disabled=lesson is None,
        on_click="ignore",
        help="Give it a title and save at least one step. Put the file in assets/lessons/ to ship it, "
        "or play it with the Lessons box's upload.",
    )
