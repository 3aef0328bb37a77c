"""Widgets whose values survive reruns, page switches and a shared link.

A widget made here takes its first value from (in order): the value it had earlier in this
session (kept under a plain session key, which Streamlit does not drop when another page runs),
the page URL's query parameter of the same key, then the default. Every run writes the current
value back to the URL (only when it differs from the default), so copying the address bar gives
a teacher an exact view to share. A malformed URL value falls back to the default. A choice is
kept by a short id (an Enum member's name, lower-cased: ``mk_section=decoding``), never by the text
shown, so relabelling an option keeps saved links; a link that carries the old text still opens it.

Why not Streamlit's own ``bind="query-params"`` (Streamlit 1.67 has it on every widget kind used
here): it binds a widget to its own page's URL only. Tried in headless Chromium, the shared input
of the Playground (``in_src=random&in_L=9``) did not reach the Gradients page (it opened on the
toy), while these helpers carry it across pages through the session. So the hand-written part is
only this cross-page sharing and the clamping of stale values.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Any, TypeVar

import streamlit as st

T = TypeVar("T")
KEEP_PREFIX = "_keep_"  # session key prefix of every URL-synced value (lab_ui.classroom shares them)
# Each screen's own display settings (projector mode, palette): a lesson step keeps them and a
# classroom follower keeps its own rather than taking the presenter's.
SCREEN_KEYS = frozenset({"projector", "palette"})


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


def _publish(key: str, value: Any, default: Any, text: str | None = None) -> None:
    """Keep the value for other pages and put it in the URL as ``text`` (else its own text)."""
    st.session_state[KEEP_PREFIX + key] = value
    if value == default:
        if key in st.query_params:
            del st.query_params[key]
    else:
        st.query_params[key] = str(value) if text is None else text


def preset(values: Mapping[str, Any]) -> None:
    """Give another page's widgets their values (key → value), as a button's callback before
    switching to that page: each is set as the widget's value and as its kept value, so the page
    opens on them whatever this session or a link held before."""
    for key, value in values.items():
        st.session_state[key] = st.session_state[KEEP_PREFIX + key] = value


def kept(key: str, default: T) -> T:
    """The value a widget not drawn on this run last had in this session (else ``default``): a
    control of another section keeps its value while hidden."""
    return st.session_state.get(KEEP_PREFIX + key, default)


def link_button(label: str, page: str, values: Mapping[str, Any], **kwargs) -> None:
    """A button that opens ``page`` (its path, ``pages/costs.py``) with its widgets at ``values``
    (`preset`); ``kwargs`` go to st.button."""
    if st.button(label, on_click=preset, args=(values,), **kwargs):
        st.switch_page(page)


def _parse_bool(raw: str) -> bool:
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise ValueError(raw)


def url_id(option: Any) -> str:
    """The value a link carries for one option: an Enum member's name, lower-cased (``Section.KV``
    → ``kv``), so that relabelling the member (its value, the text shown) keeps saved links; any
    other option as its text (a number, a preset name)."""
    return option.name.lower() if isinstance(option, Enum) else str(option)


def _label(option: Any) -> str:
    """The text shown for an option: an Enum member's value (its label), else the option's text."""
    return str(option.value) if isinstance(option, Enum) else str(option)


def _choice(
    widget: Callable[..., T],
    label: str,
    options: Iterable[T],
    key: str,
    default: T | None,
    aliases: Mapping[str, T] | None = None,
    ids: Mapping[T, str] | None = None,
    **kwargs,
) -> T:
    """A one-of-options widget mirrored to the URL; a stale value not in options resets.

    The URL carries each option's short id (`url_id`, or ``ids[option]``) and the widget shows its
    label (an Enum member's value, or ``format_func``). Read back from a link, an id, an option's
    text or label (what links carried before ids: ``"causal (bottom-right, cached prefix)"``) and
    ``aliases`` (older URL values → options) all give the option."""
    options = list(options)
    default = options[0] if default is None else default
    id_of = {o: (ids or {}).get(o) or url_id(o) for o in options}
    shown = kwargs.setdefault("format_func", _label)
    by_text: dict[str, T] = {**(aliases or {})}
    for o in options:
        with contextlib.suppress(Exception):  # a format_func that expects something else
            by_text[shown(o)] = o
        by_text[str(o)] = o
    by_text.update({i: o for o, i in id_of.items()})

    def resolve(v: Any) -> Any:
        """An option itself (not an equal string: a StrEnum label restored by the classroom)."""
        if isinstance(v, str) and v in by_text:
            return by_text[v]
        return next((o for o in options if o == v), v)

    for k in (key, KEEP_PREFIX + key):
        if k in st.session_state:
            with contextlib.suppress(TypeError):  # an unhashable value is simply not an option
                st.session_state[k] = resolve(st.session_state[k])
    note = _seed(key, default, lambda raw: by_text.get(raw, raw), lambda v: v in options)
    value = widget(label, options, key=key, **kwargs)
    _note(note)
    _publish(key, value, default, id_of.get(value))
    return value


def selectbox(label: str, options: Iterable[T], key: str, default: T | None = None, **kwargs) -> T:
    """st.selectbox mirrored to the URL by short ids (``options`` may be an Enum class; ``ids=``:
    option → id where not `url_id`; ``aliases=``: older URL values → options)."""
    return _choice(st.selectbox, label, options, key, default, **kwargs)


def radio(label: str, options: Iterable[T], key: str, default: T | None = None, **kwargs) -> T:
    """st.radio mirrored to the URL, as `selectbox`."""
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
