"""No code, docstring, page text or doc cites an issue ("the issue", "the issue's target", "issue
#12"): a reader has only the repository, so a target or a bound says what it is and cites
docs/cards.md, benchmarks/RESULTS.md or the README. Read as text, every .py, .md and .sh file of
the repository outside hidden folders (.venv, .git) and caches."""

import os
import re
from pathlib import Path

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
CITATION = re.compile(r"\bthe issue\b|\bissue's\b|\bissues?\s*#\s*\d|\bissue\s+\d", re.IGNORECASE)


def files() -> list[Path]:
    """Every .py, .md and .sh file, not descending into hidden folders (.venv, .git) or caches."""
    found = []
    for folder, subfolders, names in os.walk(ROOT):
        subfolders[:] = [
            d for d in subfolders if not d.startswith(".") and d not in ("__pycache__", "node_modules")
        ]
        found += [Path(folder) / n for n in names if n.endswith((".py", ".md", ".sh"))]
    return sorted(p for p in found if p != Path(__file__).resolve())


def citations(text: str) -> list[str]:
    """Each line of ``text`` that cites an issue, as ``line number: line``."""
    return [f"{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if CITATION.search(line)]


def test_the_pattern_catches_each_form_and_spares_issuing():
    """Hand-written lines: the forms a citation takes, and the verb that is not one."""
    cited = [
        "# the issue's target",
        "The issue speaks of blocks",
        "see issue #12",
        "per Issue 7",
        "issues #3",
    ]
    assert all(citations(line) for line in cited)
    plain = ["the server issues it", "a random nonce and the time issued", "store.issued(room, secret)"]
    assert not any(citations(line) for line in plain)


def test_no_file_cites_an_issue():
    assert {"app.py", "README.md", "docs/cards.md", "attn_core/online.py"} <= {
        str(p.relative_to(ROOT)) for p in files()
    }
    cited = [f"{p.relative_to(ROOT)}:{hit}" for p in files() for hit in citations(p.read_text())]
    assert cited == [], "say what the target is and cite docs/cards.md, benchmarks/RESULTS.md or the README"
