"""No function over 60 lines anywhere in the app or its scripts (docs/layout.md; the style guide's
"functions short enough to read at a glance"): attn_core/, lab_ui/, pages/, classroom_store/,
benchmarks/ (harness/ too) and scripts/. A long one is split into named steps.

Read with `ast`: a function's lines run from its ``def`` to its last line (decorators aside),
nested functions and methods counted on their own as well as inside their parent."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("attn_core", "lab_ui", "pages", "classroom_store", "benchmarks", "scripts")
MAX_FUNCTION_LINES = 60


def long_functions(source: str, most: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """name → lines of every function (sync or async, at any depth) longer than ``most``."""
    return {
        node.name: node.end_lineno - node.lineno + 1
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > most
    }


def test_the_counter_counts_def_to_last_line_at_any_depth():
    """Hand-made: a def and 59 lines is 60 (allowed); 60 lines after an async def is 61; a method
    of a class, nested one level down, with 60 lines after its def is 61 too."""
    lines = [f"x = {i}" for i in range(59)]
    ok = ["def ok():", *(f"    {x}" for x in lines)]
    long = ["async def long():", *(f"    {x}" for x in lines), "    return x"]
    method = ["class C:", "    def m(self):", *(f"        {x}" for x in lines), "        return x"]
    source = "\n".join([*ok, *long, *method])
    assert long_functions(source) == {"long": 61, "m": 61}


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_function_is_over_60_lines(folder):
    files = [p for p in sorted((ROOT / folder).rglob("*.py")) if "__pycache__" not in p.parts]
    assert files, folder
    long = {
        f"{p.relative_to(ROOT)}:{name}": n for p in files for name, n in long_functions(p.read_text()).items()
    }
    assert long == {}, "split each into named steps"
