"""One module owns each page's widget keys that other pages' links set: lab_ui/cost_inputs.py the
Cost page's, lab_ui/open_page.py the Serving page's GPU; every link goes through lab_ui/open_page.py."""

from pathlib import Path

import pytest

from lab_ui.cost_inputs import SOURCES
from lab_ui.open_page import costs_values

ROOT = Path(__file__).resolve().parents[2]
# key → the one file that spells it (the keys as the pages' URLs and AppTests know them)
COST_KEYS = ("co_src", "co_model", "co_paste", "co_T", "co_dtype", "co_gpu", "co_section")
OWNERS = {**dict.fromkeys(COST_KEYS, "lab_ui/cost_inputs.py"), "sv_gpu": "lab_ui/open_page.py"}
# attn_core/practice still names every page's URL keys in its drills' links (sc_…, oh_…, gr_…, co_…):
# a later move to lab_ui; until then it is left out of this check.
NOT_YET = ("attn_core/practice/",)


def sources() -> list[Path]:
    files = [
        ROOT / "app.py",
        *(f for d in ("lab_ui", "pages", "attn_core") for f in (ROOT / d).rglob("*.py")),
    ]
    return [f for f in files if not str(f.relative_to(ROOT)).startswith(NOT_YET)]


@pytest.mark.parametrize("key", OWNERS)
def test_only_the_owner_spells_another_pages_key(key):
    spelled = {str(f.relative_to(ROOT)) for f in sources() if f'"{key}"' in f.read_text()}
    assert spelled == {OWNERS[key]}


def test_the_cost_links_carry_the_cost_pages_keys():
    assert costs_values(config_text="{}", T=7) == {"co_src": SOURCES[1], "co_paste": "{}", "co_T": 7}
    assert costs_values(preset="llama-2-7b") == {"co_src": SOURCES[0], "co_model": "llama-2-7b"}
    assert costs_values(gpu="h100", dtype="bf16", section="whole") == {
        "co_gpu": "h100",
        "co_dtype": "bf16",
        "co_section": "whole",
    }
