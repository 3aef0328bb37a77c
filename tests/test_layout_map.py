"""The map of the tree in docs/layout.md is true: it names every module of lab_ui/ (classroom/ too)
and classroom_store/, every room and top-level module of attn_core/, every script of benchmarks/
(harness/ too) and of scripts/ (the asset generators), and every file it names exists.

Read as text: the map is the first code block of docs/layout.md; an entry starts at column 0 (a
top folder or file) and its lines run to the next one. A file name is looked up in its entry's
folder (or, with a slash, from the repository root or that folder)."""

import re
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
FILE = re.compile(r"[\w./*-]*\w\.(?:py|sh|md)\b")  # a * stands for any name: *_reference.py
ENTRY = re.compile(r"^(\S+)")


def layout_map() -> str:
    return (ROOT / "docs" / "layout.md").read_text().split("```", 2)[1]


def entries(block: str) -> dict[str, str]:
    """Top-level entry (``lab_ui/``, ``app.py``) → its lines of the map."""
    found: dict[str, list[str]] = {}
    current = None
    for line in block.splitlines():
        if (start := ENTRY.match(line)) is not None:
            current = start.group(1)
            found[current] = []
        if current is not None:
            found[current].append(line)
    return {name: "\n".join(lines) for name, lines in found.items()}


def named_files(text: str) -> set[str]:
    return set(FILE.findall(text))


def named_basenames(text: str) -> set[str]:
    return {Path(name).name for name in named_files(text)}


def modules(folder: str, pattern: str = "*.py") -> list[Path]:
    """A folder's files, recursively, without packages' __init__.py (the folder's own line says
    what it holds) and caches."""
    return sorted(
        p for p in (ROOT / folder).rglob(pattern) if p.name != "__init__.py" and "__pycache__" not in p.parts
    )


def test_the_map_is_found_and_has_its_entries():
    found = entries(layout_map())
    assert {"app.py", "pages/", "lab_ui/", "attn_core/", "benchmarks/", "scripts/", "tests/"} <= set(found)
    assert "page.py" in found["lab_ui/"] and "attention.py" in found["attn_core/"]


@pytest.mark.parametrize("folder", ["lab_ui", "classroom_store", "benchmarks", "scripts"])
def test_every_module_and_script_is_named(folder):
    """lab_ui/, classroom_store/, benchmarks/ and scripts/ by each file's name, in their own entry
    (lab_ui/published_runs.py and benchmarks/published_runs.py are two files)."""
    block = entries(layout_map())[f"{folder}/"]
    names = named_basenames(block)
    files = modules(folder) + (modules(folder, "*.sh") if folder in ("benchmarks", "scripts") else [])
    missing = [str(p.relative_to(ROOT)) for p in files if p.name not in names]
    assert missing == [], "name them in docs/layout.md"


def test_every_room_and_top_level_module_of_attn_core_is_named():
    """attn_core/ at folder level: each subpackage as ``name/``, each top-level module by file."""
    block = entries(layout_map())["attn_core/"]
    rooms = [p.name for p in (ROOT / "attn_core").iterdir() if (p / "__init__.py").is_file()]
    files = [p.name for p in modules("attn_core") if p.parent == ROOT / "attn_core"]
    missing = [f"{room}/" for room in rooms if not re.search(rf"^  {room}/", block, re.M)]
    missing += [name for name in files if name not in named_basenames(block)]
    assert sorted(missing) == [], "name them in docs/layout.md"


def resolves(name: str, folder: str) -> bool:
    """A name from the map: a path from the root or from its entry's folder, or a bare file name
    (or pattern) anywhere under that folder (tests may move into subfolders)."""
    if (ROOT / name).exists() or (ROOT / folder / name).exists():
        return True
    return "/" not in name and folder != "." and any((ROOT / folder).rglob(name))


def test_every_file_the_map_names_exists():
    ghosts = []
    for entry, block in entries(layout_map()).items():
        folder = entry.rstrip("/") if entry.endswith("/") else str(Path(entry).parent)
        if not (ROOT / entry).exists():
            ghosts.append(entry)
        ghosts += [f"{entry}: {name}" for name in named_files(block) if not resolves(name, folder)]
    assert ghosts == []


def test_every_subfolder_the_map_names_exists():
    """An indented entry ending in / (``  classroom/``, ``  harness/``) is a folder of its entry."""
    ghosts = []
    for entry, block in entries(layout_map()).items():
        for sub in re.findall(r"^  (\w+)/", block, re.M):
            if not (ROOT / entry / sub).is_dir():
                ghosts.append(f"{entry}{sub}/")
    assert ghosts == []


def test_every_test_file_name_is_unique():
    """pytest imports a test file by its bare name (the folders of tests/ are not packages), so two
    files of one name in two folders stop the whole run at collection ("import file mismatch")."""
    seen: dict[str, list[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_one_conftest():
    """Tests import helpers with ``from conftest import …``: a second conftest.py in a subfolder
    would be imported under the same name and shadow the first for some of them."""
    assert [p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("conftest.py")] == [
        "tests/conftest.py"
    ]
