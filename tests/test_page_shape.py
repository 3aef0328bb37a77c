"""Every page has the shape lab_ui/page.py gives it: short, not packed, and a renderer only.

Read with `ast` and as text, so the rules hold for a page nobody has opened yet."""

import ast
from pathlib import Path

import pytest

from lab_ui.nav import HOME, PAGES

ROOT = Path(__file__).resolve().parents[1]
PAGE_FILES = [ROOT / p.path for p in (HOME, *PAGES)]
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


@pytest.mark.parametrize("path", PAGE_FILES, ids=lambda p: p.name)
def test_a_page_is_not_packed(path):
    lines = path.read_text().splitlines()
    assert not [n for n, line in enumerate(lines, 1) if "fmt: skip" in line]
    assert not [n for n, line in enumerate(lines, 1) if len(line) > LINE_LENGTH]


@pytest.mark.parametrize("path", PAGE_FILES, ids=lambda p: p.name)
def test_a_page_imports_lab_ui_and_its_views_only(path):
    """Of attn_core a page imports its view module(s) in attn_core.views and nothing else:
    tolerances, caps, slips and the code it shows come through the view."""
    core = [n for n in imports(path) if n.split(".")[0] == "attn_core"]
    assert core, "a page reads its numbers from a view"
    assert all(n.startswith("attn_core.views.") for n in core), core


def calls(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def called_name(call: ast.Call) -> str:
    """`header` for `header(...)`, `st.radio` for `st.radio(...)`; "" for anything else."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return ""


def first_text(call: ast.Call) -> str | None:
    arg = call.args[0] if call.args else None
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


@pytest.mark.parametrize("path", PAGE_FILES, ids=lambda p: p.name)
def test_a_page_uses_the_scaffold(path):
    """The scaffold's one header (not `st.header`); no hand-made stop, section radio or "show the
    code" expander."""
    text = path.read_text()
    tree = ast.parse(text)
    assert "lab_ui.page.header" in imports(path)
    assert [called_name(c) for c in calls(tree)].count("header") == 1
    assert "st.stop()" not in text and "inspect.getsource" not in text
    pickers = [
        c for c in calls(tree) if called_name(c).split(".")[-1] in {"radio", "selectbox", "segmented_control"}
    ]
    assert not [c.lineno for c in pickers if first_text(c) == "Section"], "sections come from section_picker"
