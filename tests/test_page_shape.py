"""Every page has the shape lab_ui/page.py gives it: short, not packed, and a renderer only.

Read with `ast` and as text, so the rules hold for a page nobody has opened yet. The Cost page is
held to the length rule only while its internals are being rewritten onto one view call; the
other rules name it in NOT_YET so that it joins them by deleting one line."""

import ast
from pathlib import Path

import pytest

from lab_ui.nav import HOME, PAGES

ROOT = Path(__file__).resolve().parents[1]
PAGE_FILES = [ROOT / p.path for p in (HOME, *PAGES)]
NOT_YET: set[str] = set()  # a page still moving onto the scaffold; empty: every page is on it
LINE_LENGTH = 110  # pyproject.toml's ruff line-length


def imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def test_every_registered_page_is_checked():
    assert {p.name for p in (ROOT / "pages").glob("*.py")} == {p.name for p in PAGE_FILES}


@pytest.mark.parametrize("path", PAGE_FILES, ids=lambda p: p.name)
def test_a_page_is_at_most_250_lines(path):
    assert len(path.read_text().splitlines()) <= 250


@pytest.mark.parametrize("path", [p for p in PAGE_FILES if p.name not in NOT_YET], ids=lambda p: p.name)
def test_a_page_is_not_packed(path):
    lines = path.read_text().splitlines()
    assert not [n for n, line in enumerate(lines, 1) if "fmt: skip" in line]
    assert not [n for n, line in enumerate(lines, 1) if len(line) > LINE_LENGTH]


@pytest.mark.parametrize("path", [p for p in PAGE_FILES if p.name not in NOT_YET], ids=lambda p: p.name)
def test_a_page_imports_lab_ui_and_its_views_only(path):
    """Of attn_core a page imports its view module(s) in attn_core.views and nothing else:
    tolerances, caps, slips and the code it shows come through the view."""
    core = [n for n in imports(path) if n.split(".")[0] == "attn_core"]
    assert core, "a page reads its numbers from a view"
    assert all(n.startswith("attn_core.views.") for n in core), core


@pytest.mark.parametrize("path", [p for p in PAGE_FILES if p.name not in NOT_YET], ids=lambda p: p.name)
def test_a_page_uses_the_scaffold(path):
    """One header; no hand-made stop, section radio or "show the code" expander."""
    text = path.read_text()
    assert "header(" in text
    assert "st.stop()" not in text and "inspect.getsource" not in text
    assert 'state.radio("Section"' not in text
