"""A control's value reaches followers' screens as plain text (lab_ui.classroom.frames): a text
area holding a line of four (or ten) backticks cannot close the fence the value is shown in, and
nothing in a frame's markdown fetches an image or links out of the lab.

Oracle: the frame's markdown rendered by markdown-it-py, a CommonMark parser (Streamlit's
front end renders CommonMark), inspected for images, links and headings."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from lab_ui.classroom import frames

HOSTILE = [
    "````\n![x](https://evil.example/p.png)\n# Password reset\n[log in](https://evil.example/login)",
    "``````````\n# Password reset\n``````````",
    "```\n![x](//evil.example/p.png)",
    "~~~\n# heading",
]


def _text_area(label: str, value: str) -> ForwardMsg:
    msg = ForwardMsg()
    msg.metadata.delta_path.extend([0, 3])
    element = msg.delta.new_element
    element.text_area.label = label
    element.text_area.value = value
    element.text_area.set_value = True
    return msg


def _tokens(body: str) -> list[str]:
    tokens = MarkdownIt("commonmark").parse(body)
    kinds = [t.type for t in tokens]
    for t in tokens:
        kinds += [c.type for c in t.children or ()]
    return kinds


@pytest.mark.parametrize("value", HOSTILE)
def test_a_text_areas_value_is_shown_as_code_whatever_it_holds(value):
    kept = frames._keep(_text_area("queries Q", value))
    body = kept.delta.new_element.markdown.body
    kinds = _tokens(body)
    assert "image" not in kinds and "link_open" not in kinds
    assert kinds.count("heading_open") == 0
    fences = [t for t in MarkdownIt("commonmark").parse(body) if t.type == "fence"]
    assert len(fences) == 1 and fences[0].content.rstrip("\n") == value  # the value, verbatim


@pytest.mark.parametrize(
    "body",
    [
        "see ![chart](https://evil.example/c.png)",
        "[reset your password](https://evil.example)",
        "<https://evil.example/x>",
        '<img src="https://evil.example/p.png">',
    ],
)
def test_a_frames_markdown_fetches_no_image_and_links_nowhere_outside(body):
    msg = ForwardMsg()
    msg.metadata.delta_path.extend([0, 1])
    msg.delta.new_element.markdown.body = body
    kept = frames._keep(msg).delta.new_element.markdown.body
    kinds = _tokens(kept)
    assert "image" not in kinds and "link_open" not in kinds and "html_inline" not in kinds
    html = MarkdownIt("commonmark").render(kept)
    assert "<img" not in html and "<a " not in html


def test_a_link_within_the_lab_stays():
    msg = ForwardMsg()
    msg.metadata.delta_path.extend([0, 1])
    msg.delta.new_element.markdown.body = "open [the Cost page](/costs?co_section=kv)"
    kept = frames._keep(msg).delta.new_element.markdown.body
    assert "link_open" in _tokens(kept)


def test_math_and_comparisons_are_left_as_they_are():
    for body in ("$q_i<k_j$ for $i<j$", "a < b and c<d", "see `x<y`"):
        msg = ForwardMsg()
        msg.metadata.delta_path.extend([0, 1])
        msg.delta.new_element.markdown.body = body
        assert frames._keep(msg).delta.new_element.markdown.body == body
