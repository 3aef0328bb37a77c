"""lab_ui.safe_text: a visitor's text shown on every screen renders no raw HTML, no heading, no
image and no link leaving the lab, and ordinary teaching markdown is left as it was.

Oracles: an independent CommonMark parser (markdown-it-py, the parser rich uses) reads each
output and must find no heading, no image, no HTML and no link but to a lab path; GFM's own
autolink rule (a bare ``http(s)://``, ``www.`` or e-mail address becomes a link) is checked on the
parsed text outside code; the shipped lessons' lines must render to the same HTML as before.
The real renderer (Streamlit's remark in Chromium) is tests/browser/test_browser_lessons.py."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from attn_core import lessons as model
from lab_ui.safe_text import code_span, safe_markdown

MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
FORBIDDEN = {"heading_open", "image", "html_inline", "html_block", "lheading"}
# GFM "autolinks (extension)": what remark-gfm links with no brackets at all.
GFM_AUTOLINK = re.compile(r"https?://|www\.|[\w.+-]+@[\w-]+\.[\w.-]+", re.IGNORECASE)
DIRECTIVE = re.compile(r"(?<!\\):(?=[A-Za-z:])")  # remark-directive's :red[…], :color{…}, ::leaf
LAB_LINK = re.compile(r"/(?!/)[\w\-./]*(\?[\w\-=&%.,+~]*)?(#[\w-]*)?")

HOSTILE = [
    "# WRONG FACT: softmax is linear",
    "  ### indented heading",
    "- # a heading in a list",
    "> # a heading in a quote",
    "Read [the answers](https://evil.example/phish) first.",
    "[protocol-relative](//evil.example/x)",
    "[scheme](mailto:answers@evil.example)",
    "[back-slashed](/\\evil.example)",
    "![pixel](https://tracker.example/p.gif)",
    "![lab image](/app/static/x.png)",
    "[![pixel](https://t.example/p.gif)](/scaling)",
    "<img src=https://tracker.example/p.gif>",
    "<https://evil.example>",
    "<a href='https://evil.example'>x</a>",
    "see https://evil.example/x, or www.evil.example",
    "mail answers@evil.example now",
    "[ref][r] and [r]\n\n[r]: https://tracker.example/p.gif",
    "![ref image][r]\n\n[r]: https://tracker.example/p.gif",
    "footnote[^1]\n\n[^1]: https://evil.example",
    ":red[WRONG FACT] and :orange-badge[warning]",
    ':color{background="red"} and ::leaf[x]',
    "\\[escaped](https://evil.example)",
    "\\\\[double escaped](https://evil.example)",
    "`unclosed code [x](https://evil.example)",
    "```",
    "$unclosed math [x](https://evil.example)",
    "&lt;img src=x&gt; &#91;x&#93;(https://evil.example)",
    "WRONG FACT\n===",
    "WRONG FACT\r===",
    "http&colon;//evil.example/entity and www&period;evil.example",
    "http\\://evil.example/escaped",
    "x_@evil.example",
    "WRONG FACT\n---",
    "<!-- comment -->",
    "x <span onmouseover=alert(1)>y</span>",
]


def _walk(tokens):
    for token in tokens:
        yield token
        yield from _walk(token.children or [])


def _problems(markdown: str) -> list[str]:
    found = []
    for token in _walk(MD.parse(markdown)):
        if token.type in FORBIDDEN:
            found.append(token.type)
        if token.type == "link_open" and not LAB_LINK.fullmatch(token.attrGet("href") or ""):
            found.append(f"link to {token.attrGet('href')}")
        if token.type == "inline":  # the text as shown, each run between other nodes joined
            runs = "".join(t.content if t.type in ("text", "text_special") else "\0" for t in token.children)
            found += [f"bare link in {run!r}" for run in runs.split("\0") if GFM_AUTOLINK.search(run)]
    if DIRECTIVE.search(re.sub(r"(`+).*?\1", "", markdown)):  # outside code spans
        found.append("a directive")
    return found


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_renders_nothing_that_leaves_the_lab(text):
    assert _problems(text) or text in ("```", "$unclosed math [x](https://evil.example)"), (
        "a case that tests nothing"
    )
    safe = safe_markdown(text)
    assert _problems(safe) == [], safe


def test_the_whole_table_at_once_as_one_text():
    assert _problems(safe_markdown("\n".join(HOSTILE))) == []


@pytest.mark.parametrize(
    "text",
    [
        "**bold**, *italics*, _too_, ~~struck~~ and `code`",
        "- a list item",
        "1. a numbered item",
        "| a | b |",
        "the score $q \\cdot k / \\sqrt{d_k}$ and $$\\sum_j e^{s_j}$$",
        "d_k = 128, so q·k has variance d_k",
        "[the Scaling page](/scaling?sc_section=variance&sc_dk=128)",
        "[home](/)",
        "`<b>` in code stays code, and so does `https://example.org`",
    ],
)
def test_teaching_markdown_is_left_as_it_was(text):
    assert safe_markdown(text) == text


def test_the_shipped_lessons_render_as_before():
    lines = [
        line
        for lesson in model.shipped().values()
        for step in lesson.steps
        for line in (lesson.title, step.title, *step.narration)
    ]
    assert lines
    for line in lines:
        assert MD.render(safe_markdown(line)) == MD.render(line), line


@pytest.mark.parametrize(
    "command",
    [
        "\\href{https://e.example}{x}",
        "\\url{https://e.example}",
        "\\includegraphics{https://e.example/p.png}",
        "\\htmlClass{x}{y}",
    ],
)
def test_katex_commands_that_link_or_load_lose_their_backslash(command):
    safe = safe_markdown(f"math ${command}$ here")
    assert not re.search(r"\\(href|url|includegraphics|html[A-Z]\w*)", safe), safe
    assert safe_markdown("$\\\\href$") == "$\\\\href$"  # an escaped backslash, then the letters


@pytest.mark.parametrize(
    "text", ["plain", "a`b", "``x``", "`", "x]( [click](https://e.example)", "  ", "a\nb"]
)
def test_a_code_span_shows_any_text_literally(text):
    tokens = [t for t in _walk(MD.parse(code_span(text))) if t.type != "inline"]
    code = [t for t in tokens if t.type == "code_inline"]
    assert len(code) == 1 and code[0].content.strip() == text.replace("\n", " ").strip(), tokens
    assert {t.type for t in tokens} <= {"paragraph_open", "paragraph_close", "code_inline"}
