"""The Layout (docs/layout.md), checked: every import of every module in attn_core/, lab_ui/,
classroom_store/, pages/ and app.py, read with ``ast`` (imports inside functions too), against the
rules the Layout states.

- attn_core never imports streamlit, plotly, lab_ui or pages;
- attn_core/cost/ imports only numpy, the standard library and itself;
- a page imports only streamlit, pandas, the standard library, lab_ui and the view modules;
- hf/ and trained/ do not import each other (their head metrics live in attn_core.heads, below both);
- the math modules import no room of attn_core;
- nothing in attn_core imports the views, except the views themselves;
- inside attn_core, names come from their defining module, never through the lazy ``attn_core``
  face (``import attn_core`` or ``from attn_core import <a name that is not a submodule>``);
- classroom_store (the classroom's rooms) never imports streamlit, plotly, lab_ui or pages;
- only lab_ui/st_internals.py imports a ``streamlit.`` submodule (``streamlit.testing`` aside);
- the modules of attn_core, lab_ui and classroom_store import one another without a cycle.

Oracle: the file tree and Python's own parser; the walker is itself checked on known imports."""

from __future__ import annotations

import ast
import graphlib
import importlib.util
import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = "attn_core"
VIEWS = "attn_core.views"  # the package of per-page view modules: a rename changes this line only
STORE = "classroom_store"  # the classroom's rooms, no Streamlit
INTERNALS = "lab_ui/st_internals.py"  # the one module that reaches past Streamlit's public API
FOLDERS = (CORE, "lab_ui", STORE, "pages")
ROOMS = (
    "slips",
    "experiments",
    "theory",
    VIEWS.rsplit(".", 1)[1],
    "cost",
    "kernels",
    "verify",
    "anatomy",
    "practice",
    "trained",
    "hf",
)
MATH = (
    "attention",
    "masks",
    "backward",
    "online",
    "jacobian",
    "finite_diff",
    "stats",
    "tile_plan",
    "toy",
    "oracle",
    "limits",
    "dtypes",
    "heads",
    "tile_maps",
)
PAGE_LIBRARIES = {"streamlit", "pandas", "lab_ui"}
STDLIB = set(sys.stdlib_module_names)


@dataclass(frozen=True)
class Import:
    module: str  # dotted, absolute: "attn_core.cost.config_reader"; a submodule named in `from`, itself
    line: int
    face: bool  # `import attn_core` or `from attn_core import <not a submodule>`


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(dotted: str) -> bool:
    """A module or package of this repository."""
    base = ROOT.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(source: str, name: str, is_package: bool) -> list[Import]:
    """Every import in ``source`` (the module ``name``), resolved to absolute dotted names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(alias.name, node.lineno, alias.name == CORE))
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package this module lives in
                package = name.split(".") if is_package else name.split(".")[:-1]
                base = ".".join(
                    package[: len(package) - node.level + 1] + ([node.module] if node.module else [])
                )
            else:
                base = node.module
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if is_module(sub):
                    found.append(Import(sub, node.lineno, False))
                else:
                    found.append(Import(base, node.lineno, base == CORE))
    return found


@cache
def tree() -> dict[str, list[Import]]:
    """repo-relative path → its imports, for every .py under attn_core/, lab_ui/, classroom_store/,
    pages/, and app.py."""
    out = {}
    paths = [p for folder in FOLDERS for p in sorted((ROOT / folder).rglob("*.py"))] + [ROOT / "app.py"]
    for path in paths:
        name = module_name(path)
        out[path.relative_to(ROOT).as_posix()] = imports_of(
            path.read_text(encoding="utf-8"), name, path.name == "__init__.py"
        )
    return out


def top(module: str) -> str:
    return module.split(".")[0]


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def core_files(package: str = CORE) -> dict[str, list[Import]]:
    prefix = package.replace(".", "/")
    return {
        path: found
        for path, found in tree().items()
        if path.startswith(prefix + "/") or path == prefix + ".py"
    }


def breaches(files: dict[str, list[Import]], bad) -> list[str]:
    return [f"{path}:{i.line} imports {i.module}" for path, found in files.items() for i in found if bad(i)]


# ------------------------------------------------------------------------------- the walker


def test_the_walker_resolves_what_python_would():
    source = "\n".join(
        [
            "import os, numpy as np",
            "from . import online",
            "from .cost import shapes",
            "from ..masks import causal_mask",
            "from attn_core import toy",
            "from attn_core import attention_params",
            "import attn_core",
            "def f():",
            "    import transformers",
        ]
    )
    found = {i.module: i.face for i in imports_of(source, "attn_core.experiments.x", False)}
    assert found == {
        "os": False,
        "numpy": False,
        "attn_core.experiments": False,  # `online` is no module of experiments/: the package itself
        "attn_core.experiments.cost": False,
        "attn_core.masks": False,
        "attn_core.toy": False,  # a submodule: allowed
        "attn_core": True,  # both the name through the face and the bare import
        "transformers": False,
    }
    # and on the real tree: what we know is there is seen
    assert any(i.module == "transformers" for i in tree()["attn_core/hf/loading.py"])  # inside a function
    assert any(i.module == "attn_core.heads" for i in tree()["attn_core/trained/analysis.py"])
    assert len(tree()) > 100 and all(p.split("/")[0] in FOLDERS or p == "app.py" for p in tree())
    assert any(i.module == "classroom_store.redis_rooms" for i in tree()["classroom_store/rooms.py"])


# -------------------------------------------------------------------------------- the rules


def test_core_never_imports_the_ui():
    assert breaches(core_files(), lambda i: top(i.module) in {"streamlit", "plotly", "lab_ui", "pages"}) == []


def test_the_cost_model_imports_only_numpy_the_stdlib_and_itself():
    files = core_files(f"{CORE}.cost")
    assert len(files) > 10
    allowed = lambda i: top(i.module) in STDLIB | {"numpy"} or within(i.module, f"{CORE}.cost")  # noqa: E731
    assert breaches(files, lambda i: not allowed(i)) == []


def page_breach(i: Import) -> bool:
    return not (top(i.module) in STDLIB | PAGE_LIBRARIES or within(i.module, VIEWS))


def test_pages_import_only_the_ui_and_their_views():
    pages = {p: f for p, f in tree().items() if p.startswith("pages/")}
    assert len(pages) >= 10
    assert breaches(pages, page_breach) == []


def test_hf_and_trained_do_not_import_each_other():
    hf, trained = f"{CORE}.hf", f"{CORE}.trained"
    assert breaches(core_files(hf), lambda i: within(i.module, trained)) == []
    assert breaches(core_files(trained), lambda i: within(i.module, hf)) == []


@pytest.mark.parametrize("name", MATH)
def test_the_math_imports_no_room(name):
    files = core_files(f"{CORE}.{name}")
    assert list(files) == [f"{CORE}/{name}.py"]
    assert breaches(files, lambda i: any(within(i.module, f"{CORE}.{room}") for room in ROOMS)) == []


def test_nothing_below_the_views_imports_them():
    views = VIEWS.replace(".", "/") + "/"
    others = {p: f for p, f in core_files().items() if not p.startswith(views)}
    assert breaches(others, lambda i: within(i.module, VIEWS)) == []


def test_inside_the_package_nothing_goes_through_the_lazy_face():
    inner = {p: f for p, f in core_files().items() if p != f"{CORE}/__init__.py"}
    assert breaches(inner, lambda i: i.face) == []


# ------------------------------------------------------------------ every module named by a test

TESTS = ROOT / "tests"


def core_modules() -> list[str]:
    """Every module of attn_core by its dotted name (a package by its own, from __init__.py)."""
    return sorted(module_name(p) for p in (ROOT / CORE).rglob("*.py"))


def named_in(source: str, name: str) -> set[str]:
    """The attn_core modules a test file names: those it imports (``from attn_core.cost import
    ledger`` names attn_core.cost.ledger), and any dotted name or repo path in its text."""
    found = {i.module for i in imports_of(source, name, False) if top(i.module) == CORE}
    dotted = re.findall(r"\battn_core(?:\.\w+)+", source)
    dotted += [p[:-3].replace("/", ".") for p in re.findall(r"\battn_core(?:/\w+)+\.py", source)]
    for name in dotted:  # attn_core.cost.config_reader.from_hf_config names attn_core.cost.config_reader
        parts = name.split(".")
        found |= {".".join(parts[:n]) for n in range(2, len(parts) + 1)}
    return found


@cache
def named_by_tests() -> frozenset[str]:
    """What the test files name, this file aside (its own lists name modules without testing them)."""
    here = Path(__file__).resolve()
    return frozenset(
        module
        for path in sorted(TESTS.rglob("*.py"))
        if path.resolve() != here
        for module in named_in(path.read_text(encoding="utf-8"), "tests." + path.stem)
    )


def test_the_name_finder_sees_imports_dotted_names_and_paths():
    source = "\n".join(
        [
            "from attn_core.cost import ledger",
            "import attn_core.views.scaling as sc",
            "from attn_core.practice.question import Difficulty",
            "NAME = 'attn_core.hf.demo'",
            "PATH = 'attn_core/kernels/timing.py'",
            "COSTS = 'attn_core.views.costs_text'",
            "f = attn_core.cost.mla.mla_cache_bytes",
        ]
    )
    found = named_in(source, "tests.test_x")
    assert {
        "attn_core.practice.question",
    } <= found
    assert "attn_core.views.costs" not in found and "attn_core.cost.led" not in found  # whole names only


def test_every_module_is_named_by_some_test():
    modules = core_modules()
    assert len(modules) > 100 and "attn_core.cost.config_reader" in modules
    unnamed = [m for m in modules if m not in named_by_tests()]
    assert unnamed == [], "named by no test file: give each a test of its own"


# ---------------------------------------------------------------- the classroom, Streamlit, cycles


def test_the_classroom_store_never_imports_the_ui():
    files = core_files(STORE)
    assert len(files) >= 7 and "classroom_store/redis_rooms.py" in files
    assert breaches(files, lambda i: top(i.module) in {"streamlit", "plotly", "lab_ui", "pages"}) == []


def streamlit_submodules(source: str) -> list[tuple[int, str]]:
    """The ``streamlit.`` submodules ``source`` imports (line, dotted name), ``streamlit.testing``
    aside: ``import streamlit.x``, ``from streamlit.x import …`` and ``from streamlit import x``
    where ``x`` is a submodule (asked of Python's import system), not a name of the public API."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("streamlit.")]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.startswith("streamlit."):
                found.append((node.lineno, node.module))
            elif node.module == "streamlit":
                for alias in node.names:
                    sub = f"streamlit.{alias.name}"
                    if importlib.util.find_spec(sub) is not None:
                        found.append((node.lineno, sub))
    return [(line, name) for line, name in found if not within(name, "streamlit.testing")]


def test_the_streamlit_finder_sees_submodules_not_the_public_api():
    source = "\n".join(
        [
            "import streamlit as st",
            "from streamlit.testing.v1 import AppTest",
            "from streamlit import session_state",
            "from streamlit import runtime",
            "import streamlit.proto.ForwardMsg_pb2",
            "def f():",
            "    from streamlit.runtime.scriptrunner import get_script_run_ctx",
        ]
    )
    assert streamlit_submodules(source) == [
        (4, "streamlit.runtime"),
        (5, "streamlit.proto.ForwardMsg_pb2"),
        (7, "streamlit.runtime.scriptrunner"),
    ]


def test_only_st_internals_reaches_into_streamlit():
    """The app's code (app.py, pages/, lab_ui/, attn_core/, classroom_store/). The tests and
    benchmarks/harness are left out: they drive a server as a browser does, in Streamlit's own
    wire messages (streamlit.proto), and AppTest is streamlit.testing."""
    reached = {
        f"{path}:{line} imports {name}"
        for path in tree()
        for line, name in streamlit_submodules((ROOT / path).read_text(encoding="utf-8"))
    }
    assert any(r.startswith(INTERNALS) for r in reached)  # the finder sees the one that may
    assert sorted(r for r in reached if not r.startswith(INTERNALS + ":")) == []


def import_graph() -> dict[str, set[str]]:
    """Module → the modules of attn_core, lab_ui and classroom_store it imports (inside functions
    too; a package's own __init__ counts as the package)."""
    ours = (CORE, "lab_ui", STORE)
    graph = {}
    for path, found in tree().items():
        if top(path.split("/")[0]) not in ours:
            continue
        name = module_name(ROOT / path)
        graph[name] = {i.module for i in found if top(i.module) in ours and i.module != name}
    return graph


def cycle_in(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (its modules in order, the first repeated last), or []."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return list(error.args[1])
    return []


def test_the_cycle_finder_finds_a_lazy_cycle():
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    found = cycle_in({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    assert set(found) == {"a", "b"} and found[0] == found[-1]
    source = "import lab_ui.page\ndef f():\n    from lab_ui import figures\n"  # a lazy import counts
    assert {i.module for i in imports_of(source, "lab_ui.view_cache", False)} >= {"lab_ui.figures"}


def test_no_import_cycle():
    graph = import_graph()
    assert {"lab_ui.figures", "lab_ui.view_cache", "classroom_store.rooms", "attn_core.attention"} <= set(
        graph
    )
    assert "lab_ui.view_cache" in graph["lab_ui.figures"]  # the edge that stays: figures reads the cache
    assert cycle_in(graph) == [], "imports run one way: move what both need into the module that owns it"
