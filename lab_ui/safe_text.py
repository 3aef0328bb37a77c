"""Text a visitor wrote (an uploaded lesson's narration, a name in an address) as markdown that is
safe to show on every screen: it keeps **bold**, *italics*, `code`, lists, tables and LaTeX
($…$), and renders no raw HTML, no heading, no image and no link that leaves the lab.

Streamlit draws ``st.markdown`` with remark (CommonMark and GFM: tables, strikethrough and bare
URLs made links), remark-math with KaTeX, and its own ``:red[…]`` directives. `safe_markdown`
reads that grammar rather than looking for bad strings, one line at a time:

- a code span and a ``$…$`` math span are copied as they are (nothing inside either is markup),
  except the KaTeX commands that link or load (``\\href``, ``\\url``, ``\\includegraphics``,
  ``\\html…``), which lose their backslash and show as letters;
- a link ``[text](/page?key=value)`` to a page of the lab (a path from its root) stays, its text
  made safe the same way; any other link, a reference link, an image, a footnote and a directive
  lose their brackets' meaning (``[`` and ``]`` get a backslash);
- a bare URL or e-mail address becomes a code span: shown, never followed;
- ``<``, ``>``, ``#`` (so no HTML, no autolink, no heading), ``!`` before ``[``, ``:`` before a
  letter or ``:`` (a directive's start: ``:red``, ``:color{…}``, ``::name``), an unpaired
  backtick or ``$``, and every ``\\`` and ``&`` get a backslash: CommonMark shows an escaped
  punctuation character as itself, so the text shown is the text given, character for character,
  and no escape or entity (``http&#58;//``) can spell a URL that the scan for bare URLs missed
  (remark-gfm finds them in the text as shown);
- a line of only ``=`` or ``-`` (the underline that makes the line above it a heading) starts
  with a backslash.

A fenced block of code loses its fence (its backticks are unpaired on their line). Pure Python:
the lessons panel (lab_ui/lessons.py) and any screen that shows a visitor's words call it.
"""

from __future__ import annotations

import re

# A link target inside the lab: a path from the site's root (never "//host", never a scheme),
# with an optional query and fragment in URL-safe characters.
LAB_PATH = re.compile(r"/(?!/)[A-Za-z0-9_\-./]*(?:\?[A-Za-z0-9_\-=&%.,+~]*)?(?:#[A-Za-z0-9_\-]*)?")
_LINK = re.compile(r"\[([^\[\]\n]*)\]\(([^()\s]*)\)")
# What GFM turns into a link by itself, and schemes a browser follows: shown as code instead.
_BARE_URL = re.compile(
    r"(?:https?|ftp)://[^\s`<>()\[\]]*|www\.[^\s`<>()\[\]]*"
    r"|(?:mailto:|xmpp:)?[\w.%+\-]+@[\w\-]+(?:\.[\w\-]+)+",
    re.IGNORECASE,
)
_ESCAPED = frozenset("<>#[]")  # always given a backslash outside code and math
_LINE_END = re.compile(r"\r\n|\r|\n")  # CommonMark's line endings
_SETEXT = re.compile(r"^( {0,3})([=-])")
_SETEXT_LINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# KaTeX commands that make a link or fetch a file (KaTeX refuses them unless trusted; dropped anyway).
_KATEX_COMMAND = re.compile(r"\\([A-Za-z]+|.)", re.DOTALL)
_KATEX_UNSAFE = frozenset({"href", "url", "includegraphics", "htmlClass", "htmlId", "htmlStyle", "htmlData"})


def safe_markdown(text: str) -> str:
    """``text`` as markdown that shows what it says and nothing more (the module docstring has
    the rules). Lines are made safe one by one and joined back with their newlines."""
    return "\n".join(_line(line) for line in _LINE_END.split(text))


def code_span(text: str) -> str:
    """``text`` shown literally as inline code, whatever it holds: the fence is one backtick
    longer than the longest run inside (CommonMark 6.1), padded when the text starts or ends with
    a backtick. Line breaks become spaces (a code span shows them as spaces anyway)."""
    text = text.replace("\r", " ").replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _line(line: str) -> str:
    if _SETEXT_LINE.match(line):
        return _SETEXT.sub(r"\1\\\2", line, count=1)
    return _inline(line)


def _inline(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        i = _token(text, i, out)
    return "".join(out)


def _token(text: str, i: int, out: list[str]) -> int:
    """Append the safe form of the token that starts at ``text[i]``; return where the next starts."""
    char = text[i]
    if char in "\\&":  # shown as itself: no escape or entity can spell a URL the scan missed
        out.append("\\" + char)
        return i + 1
    if char in "`$":
        return _span(text, i, out)
    if char == "[" and (link := _LINK.match(text, i)) is not None and LAB_PATH.fullmatch(link.group(2)):
        out.append(f"[{_inline(link.group(1))}]({link.group(2)})")
        return link.end()
    if (url := _BARE_URL.match(text, i)) is not None:
        out.append(code_span(url.group()))
        return url.end()
    follows = text[i + 1 : i + 2]
    if (
        char in _ESCAPED
        or (char == "!" and follows == "[")
        or (char == ":" and (follows.isalpha() or follows == ":"))
    ):
        out.append("\\" + char)
    else:
        out.append(char)
    return i + 1


def _span(text: str, i: int, out: list[str]) -> int:
    """A code span (backticks) or math span (dollars): a run of n opens, the next run of exactly
    n closes, as CommonMark's code spans and remark-math's inline math read them. Unpaired, each
    character of the run is escaped."""
    char = text[i]
    n = len(text) - len(text[i:].lstrip(char)) - i
    close = re.compile(rf"(?<!{re.escape(char)}){re.escape(char * n)}(?!{re.escape(char)})")
    found = close.search(text, i + n)
    if found is None:
        out.append(("\\" + char) * n)
        return i + n
    span = text[i : found.end()]
    out.append(_safe_katex(span) if char == "$" else span)
    return found.end()


def _safe_katex(math: str) -> str:
    def drop(command: re.Match[str]) -> str:
        return command.group(1) if command.group(1) in _KATEX_UNSAFE else command.group(0)

    return _KATEX_COMMAND.sub(drop, math)
