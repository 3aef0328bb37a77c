"""Widgets whose values survive reruns, page switches and a shared link.

A widget made here takes its first value from (in order): the value it had earlier in this
session (kept under a plain session key, which Streamlit does not drop when another page runs),
the page URL's query parameter of the same key, then the default. Every run writes the current
value back to the URL (only when it differs from the default), so copying the address bar gives
a teacher an exact view to share. A malformed URL value falls back to the default.

Why not Streamlit's own ``bind="query-params"`` (Streamlit 1.67 has it on every widget kind used
here): it binds a widget to its own page's URL only. Tried in headless Chromium, the shared input
of the Playground (``in_src=random&in_L=9``) did not reach the Gradients page (it opened on the
toy), while these helpers carry it across pages through the session. So the hand-written part is
only this cross-page sharing and the clamping of stale values.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import streamlit as st

T = TypeVar("T")
KEEP_PREFIX = "_keep_"  # session key prefix of every URL-synced value (lab_ui.classroom shares them)


def _seed(key: str, default: T, parse: Callable[[str], T], valid: Callable[[T], bool]) -> str | None:
    """Put a valid starting value into st.session_state[key] before the widget is created.

    Returns a note to show under the widget when the page URL carried a value for it that is
    refused (not a value of this widget, or outside its range: 1e400 is not a number here)."""
    if key in st.session_state and valid(st.session_state[key]):
        # Re-assert the value: the same key on another page is a new widget (a new id) and would
        # otherwise start from its own default instead of the value the user left.
        st.session_state[key] = st.session_state[key]
        return None
    candidates: list[Any] = []
    if KEEP_PREFIX + key in st.session_state:
        candidates.append(st.session_state[KEEP_PREFIX + key])
    raw = st.query_params.get(key)
    from_link = None
    if raw is not None:
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            from_link = parse(raw)
            candidates.append(from_link)
    value = next((c for c in candidates if valid(c)), default)
    st.session_state[key] = value
    if raw is None or (from_link is not None and valid(from_link)):
        return None
    shown = raw[:40].replace("`", "'")  # a code span: the link's text is never read as markdown
    return f"The link's value `{shown}` is not allowed here; using {value}."


def _note(note: str | None) -> None:
    """The refusal of a link's value, under the widget it was meant for."""
    if note is not None:
        st.caption(f":orange[{note}]")


def _publish(key: str, value: Any, default: Any) -> None:
    st.session_state[KEEP_PREFIX + key] = value
    if value == default:
        if key in st.query_params:
            del st.query_params[key]
    else:
        st.query_params[key] = str(value)


def _parse_bool(raw: str) -> bool:
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise ValueError(raw)


def _choice(
    widget: Callable[..., T],
    label: str,
    options: Sequence[T],
    key: str,
    default: T | None,
    aliases: dict[str, T] | None = None,
    **kwargs,
) -> T:
    """A one-of-options widget mirrored to the URL; a stale value not in options resets.
    ``aliases`` maps older URL values (a label that used to be the value) to options."""
    options = list(options)
    default = options[0] if default is None else default
    by_text = {**(aliases or {}), **{str(o): o for o in options}}
    note = _seed(key, default, lambda raw: by_text.get(raw, raw), lambda v: v in options)
    value = widget(label, options, key=key, **kwargs)
    _note(note)
    _publish(key, value, default)
    return value


def selectbox(label: str, options: Sequence[T], key: str, default: T | None = None, **kwargs) -> T:
    """st.selectbox mirrored to the URL (``aliases=``: older URL values → options)."""
    return _choice(st.selectbox, label, options, key, default, **kwargs)


def radio(label: str, options: Sequence[T], key: str, default: T | None = None, **kwargs) -> T:
    """st.radio mirrored to the URL."""
    return _choice(st.radio, label, options, key, default, **kwargs)


def slider(label: str, min_value: T, max_value: T, default: T, key: str, **kwargs) -> T:
    """st.slider (int or float, by the type of ``default``) mirrored to the URL.

    A kept value outside a range that has since shrunk is clamped into it, never an error."""
    kind = type(default)
    if key in st.session_state and isinstance(st.session_state[key], int | float):
        st.session_state[key] = kind(min(max(st.session_state[key], min_value), max_value))
    note = _seed(key, default, kind, lambda v: isinstance(v, int | float) and min_value <= v <= max_value)
    value = st.slider(label, min_value, max_value, key=key, **kwargs)
    _note(note)
    _publish(key, value, default)
    return value


def number(label: str, min_value: T, max_value: T, default: T, key: str, **kwargs) -> T:
    """st.number_input (bounded) mirrored to the URL."""
    kind = type(default)
    note = _seed(key, default, kind, lambda v: isinstance(v, int | float) and min_value <= v <= max_value)
    value = st.number_input(label, min_value, max_value, key=key, **kwargs)
    _note(note)
    _publish(key, value, default)
    return value


def toggle(label: str, key: str, default: bool = False, **kwargs) -> bool:
    """st.toggle mirrored to the URL."""
    note = _seed(key, default, _parse_bool, lambda v: isinstance(v, bool))
    value = st.toggle(label, key=key, **kwargs)
    _note(note)
    _publish(key, value, default)
    return value


def text_area(label: str, key: str, default: str, max_chars: int = 4000, **kwargs) -> str:
    """st.text_area mirrored to the URL (bounded length, so a link stays a link)."""
    note = _seed(key, default, str, lambda v: isinstance(v, str) and len(v) <= max_chars)
    value = st.text_area(label, key=key, max_chars=max_chars, **kwargs)
    _note(note)
    _publish(key, value, default)
    return value
