"""lab_ui.launch: the server imports what every page imports before it answers, so no first visitor
waits on an import. Oracle: the pages' own files, read here with a regular expression (not ast), and
a fresh interpreter's sys.modules after the warm-up."""

import re
import subprocess
import sys
from pathlib import Path

from lab_ui import launch

ROOT = Path(__file__).resolve().parents[2]
IMPORT = re.compile(r"^(?:from ([\w.]+) import|import ([\w.]+))", re.M)


def test_the_warm_up_list_holds_every_top_level_import_of_app_and_the_pages():
    wanted = set()
    for path in [ROOT / "app.py", *(ROOT / "pages").glob("*.py")]:
        wanted |= {a or b for a, b in IMPORT.findall(path.read_text(encoding="utf-8"))}
    wanted.discard("__future__")
    assert wanted - {"__future__"} <= set(launch.page_imports()) | {"__future__"}
    assert {"torch", "lab_ui.page", "attn_core.views.costs", "attn_core.views.serving"} <= set(
        launch.page_imports()
    )


def test_after_the_warm_up_a_fresh_interpreter_holds_the_pages_modules():
    code = (
        "import sys; from lab_ui import launch; done = launch.warm_imports(); "
        "missing = [m for m in launch.page_imports() if m not in sys.modules]; print(len(done), missing)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    count, missing = out.stdout.strip().split(" ", 1)
    assert missing == "[]" and int(count) == len(launch.page_imports())


def test_the_launcher_is_the_streamlit_command():
    out = subprocess.run(
        [sys.executable, "-m", "lab_ui.launch", "version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0 and "Streamlit, version" in out.stdout
