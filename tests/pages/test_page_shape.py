"""Every page has the shape lab_ui/page.py gives it: short, not packed, and a renderer only.

Read with `ast` and as text, so the rules hold for a page nobody has opened yet."""

import ast
from pathlib import Path

import pytest

from lab_ui.nav import HOME, PAGES

ROOT = Path(__file__).resolve().parents[2]
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


# --------------------------------------------------------- the hello shape: sections of one argument

HELLO_PAGES = PAGE_FILES  # every page has the shape below
# No page function over 60 lines: tests/test_function_length.py, for the whole tree.


def module_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_the_shape_rules_cover_real_pages():
    assert set(HELLO_PAGES) <= set(PAGE_FILES)


@pytest.mark.parametrize("path", HELLO_PAGES, ids=lambda p: p.name)
def test_a_section_is_a_function_of_the_view(path):
    """Every run_section call runs a page function of one argument (directly, or through the
    page's SHOW dict of such functions) on one view: no lambda, no globals passed."""
    tree = ast.parse(path.read_text())
    functions = module_functions(tree)
    one_arg = {name for name, f in functions.items() if len(f.args.args) == 1 and not f.args.vararg}
    runs = [c for c in calls(tree) if called_name(c) == "run_section"]
    for call in runs:
        assert len(call.args) == 2, f"line {call.lineno}: run_section(section, view, inputs=...)"
        body = call.args[0]
        assert not isinstance(body, ast.Lambda), f"line {call.lineno}: a lambda as a section"
        if isinstance(body, ast.Subscript):  # SHOW[section]
            table = next(
                n.value
                for n in tree.body
                if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == ast.unparse(body.value)
            )
            assert isinstance(table, ast.Dict)
            sections = table.values
        else:
            sections = [body]
        assert all(isinstance(s, ast.Name) and s.id in one_arg for s in sections), ast.unparse(call)


@pytest.mark.parametrize("path", HELLO_PAGES, ids=lambda p: p.name)
def test_a_page_reads_in_the_hello_order(path):
    """Its functions first, then the header and the rest: no function defined below the header."""
    tree = ast.parse(path.read_text())
    header_line = next(c.lineno for c in calls(tree) if called_name(c) == "header")
    after = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.lineno > header_line]
    assert after == []


@pytest.mark.parametrize("path", HELLO_PAGES, ids=lambda p: p.name)
def test_a_page_calls_its_view_module_by_its_name(path):
    aliased = [
        f"{node.module}.{a.name} as {a.asname}"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attn_core.views")
        for a in node.names
        if a.asname
    ]
    assert aliased == []


# ------------------------------------------------- what a page reads from a view, the view exports


def view_exports(module: str) -> tuple[set[str] | None, set[str], set[str]]:
    """(``__all__`` or None, the names the view defines, the names it imports: ``X as X`` and
    plain)."""
    return exports_of((ROOT / (module.replace(".", "/") + ".py")).read_text())


def exports_of(source: str) -> tuple[set[str] | None, set[str], set[str]]:
    """`view_exports` of a module's source text."""
    tree = ast.parse(source)
    listed, defined, reexported = None, set(), set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        defined.add(name.id)
                if isinstance(target, ast.Name) and target.id == "__all__":
                    listed = set(ast.literal_eval(node.value))
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            reexported |= {a.asname or a.name for a in node.names}
    return listed, defined, reexported


def page_reads(path: Path) -> dict[str, set[str]]:
    """view module → the names the page takes from it (``from view import X`` and ``view.X``)."""
    tree = ast.parse(path.read_text())
    reads: dict[str, set[str]] = {}
    modules = {}  # local name → view module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attn_core.views"):
            for a in node.names:
                if (ROOT / node.module.replace(".", "/") / f"{a.name}.py").is_file():
                    modules[a.asname or a.name] = f"{node.module}.{a.name}"
                else:
                    reads.setdefault(node.module, set()).add(a.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            reads.setdefault(modules[node.value.id], set()).add(node.attr)
    return reads


# A view written both ways by hand: the reader's oracle, whichever spelling the real views use.
BOTH_SPELLINGS = """
from attn_core.cost.gpus import list_gpus as list_gpus
from attn_core.slips import SLIPS
__all__ = ["SLIPS", "Section", "view"]
MAX_T: int = 64
A, B = 1, 2
class Section: ...
def view(): ...
"""


def test_the_export_reader_sees_all_defs_and_reexports():
    assert exports_of(BOTH_SPELLINGS) == (
        {"SLIPS", "Section", "view"},
        {"__all__", "MAX_T", "A", "B", "Section", "view"},
        {"list_gpus", "SLIPS"},
    )
    assert exports_of("X = 1")[0] is None  # no __all__: the page's names are looked up one by one
    listed, defined, reexported = view_exports("attn_core.views.masks")
    assert {"Section", "MasksView", "view", "MAX_T"} <= listed and "PAINTED" in listed
    assert {"Section", "MasksView", "view", "MAX_T", "NOTES"} <= defined and "PAINTED" not in defined
    assert page_reads(ROOT / "pages/masks.py")["attn_core.views.masks"] >= {"view", "Section", "MAX_T"}


@pytest.mark.parametrize("path", PAGE_FILES, ids=lambda p: p.name)
def test_what_a_page_reads_from_a_view_the_view_exports(path):
    """A view with ``__all__`` lists every name its page reads, whether it defines or imports it
    (no ``X as X`` lines needed); one without it (the older spelling, ``X as X`` for a name it only
    passes on, until every view has ``__all__``) at least has the name at its top level."""
    for module, names in page_reads(path).items():
        listed, defined, reexported = view_exports(module)
        exported = listed if listed is not None else defined | reexported
        assert names <= exported, f"{module} does not export {sorted(names - exported)}"


# ----------------------------------------------------------- the five lines every page ends in

ENDING = [
    "header(TITLE, INTRO)",
    "ask = inputs()",  # the page's widgets → one object, or None after a message (or the page stops)
    "view = build(ask)",  # its view call(s) through compute → the view, or None after a message
    "require(view, fix=FIX)",
    "show(ask, view)",  # what the page draws from them: the section picker and run_section
]
TOP_LEVEL = ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef | ast.Assign | ast.AnnAssign


@pytest.mark.parametrize("path", PAGE_FILES, ids=lambda p: p.name)
def test_a_page_ends_in_the_same_five_lines(path):
    """Its imports, constants and functions, then the five lines above and nothing else."""
    tree = ast.parse(path.read_text())
    body = tree.body[1:] if ast.get_docstring(tree) else tree.body
    last_def = max(i for i, n in enumerate(body) if isinstance(n, ast.FunctionDef))
    assert [ast.unparse(n) for n in body[last_def + 1 :]] == ENDING
    loose = [n.lineno for n in body[: last_def + 1] if not isinstance(n, TOP_LEVEL)]
    assert loose == [], "a statement outside the page's functions"
    assert {"inputs", "build", "show"} <= set(module_functions(tree))


@pytest.mark.parametrize("path", PAGE_FILES, ids=lambda p: p.name)
def test_a_pages_constants_call_nothing_that_draws(path):
    """A top-level assignment is a constant or a table of sections: no widget, no view call."""
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            drawn = [called_name(c) for c in calls(node) if called_name(c).startswith(("st.", "widgets."))]
            assert drawn == [], f"line {node.lineno}"
            assert "compute" not in [called_name(c) for c in calls(node)], f"line {node.lineno}"
