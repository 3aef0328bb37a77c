"""``python -m lab_ui.launch run app.py [streamlit flags]``: the ``streamlit`` command, started only
after this process has imported everything the pages import (torch, transformers, every view).

A fresh server otherwise makes its first visitors wait for those imports — 9–23 s of a cold first
figure on a busy 2-core machine (benchmarks/RESULTS.md, "cold first figure"), against a few seconds
for a minimal Streamlit page. Imported here, before the server answers ``/_stcore/health``, they
are in ``sys.modules`` when the first page runs, so no visitor's first figure waits on an import.
``make run``, ``deploy/serve.sh`` and the tests' server (benchmarks/harness/server.py) start the lab
this way."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def page_imports(root: Path = ROOT) -> list[str]:
    """The modules app.py and every page file import (their top-level imports, in file order; a\n    module of this repository named after ``from package import`` too)."""
    names: list[str] = []
    for path in [root / "app.py", *sorted((root / "pages").glob("*.py"))]:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.append(node.module)
                names += [s for a in node.names if _is_module(root, s := f"{node.module}.{a.name}")]
    return list(dict.fromkeys(names))


def _is_module(root: Path, dotted: str) -> bool:
    """A module of this repository (``from attn_core.views import costs`` imports attn_core.views.costs)."""
    path = root / dotted.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def warm_imports(root: Path = ROOT) -> list[str]:
    """Import what the pages import; returns the module names imported. A module that fails to import
    here fails the same way in its page, where the page's safety net reports it: skipped here."""
    done = []
    for name in page_imports(root):
        try:
            importlib.import_module(name)
        except ImportError:  # the page reports it, with its own message, when it runs
            continue
        done.append(name)
    return done


def main() -> int:
    sys.path.insert(0, str(ROOT))  # pages import lab_ui and attn_core from the repository root
    warm_imports()
    from lab_ui.st_internals import streamlit_command_line

    return streamlit_command_line()


if __name__ == "__main__":
    sys.exit(main())
