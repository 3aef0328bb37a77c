"""One module owns each page's widget keys that other pages' links set: lab_ui/cost_inputs.py the
Cost page's, lab_ui/open_page.py the Serving page's GPU and the keys a drill's link sets; every link
goes through lab_ui/open_page.py, and attn_core's drills return ids only."""

import re
from pathlib import Path

import pytest

from attn_core.practice.page_links import JACOBIAN, KV, PASTED, VARIANCE, scaling_link
from attn_core.practice.question import PageLink
from lab_ui.cost_inputs import SOURCES
from lab_ui.open_page import costs_values, drill_params

ROOT = Path(__file__).resolve().parents[2]
# key → the one file that spells it (the keys as the pages' URLs and AppTests know them)
COST_KEYS = ("co_src", "co_model", "co_paste", "co_T", "co_dtype", "co_gpu", "co_section")
OWNERS = {**dict.fromkeys(COST_KEYS, "lab_ui/cost_inputs.py"), "sv_gpu": "lab_ui/open_page.py"}


def sources() -> list[Path]:
    return [
        ROOT / "app.py",
        *(f for d in ("lab_ui", "pages", "attn_core") for f in (ROOT / d).rglob("*.py")),
    ]


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


def test_attn_core_spells_no_pages_widget_key():
    """A drill's link carries ids and input names; the keys (co_T, sc_dk, in_src) are open_page's."""
    key = re.compile(r"[\"'](?:co|mk|gr|os|sc|oh|in|sv)_\w+[\"']")
    spelled = {
        str(f.relative_to(ROOT)): key.findall(f.read_text())
        for f in (ROOT / "attn_core" / "practice").rglob("*.py")
    }
    assert {f: keys for f, keys in spelled.items() if keys} == {}


def test_a_drills_link_becomes_the_pages_keys():
    """Hand-written: the keys the pages define (lab_ui/cost_inputs.py, pages/scaling.py,
    lab_ui/inputs.py with its default prefix, the Gradients page's section picker)."""
    cost = KV.link({"src": PASTED, "paste": "{}", "T": "4096", "dtype": "fp16"})
    assert drill_params(cost) == {
        "co_section": "kv",
        "co_src": "config",
        "co_paste": "{}",
        "co_T": "4096",
        "co_dtype": "fp16",
    }
    assert drill_params(scaling_link(VARIANCE, dk=64, rule="1/√d_k")) == {
        "sc_section": "variance",
        "sc_dk": "64",
        "sc_rule": "sqrt",
    }
    assert drill_params(JACOBIAN.link(inputs={"src": "typed", "Q": "1"})) == {
        "gr_section": "jacobian",
        "in_src": "typed",
        "in_Q": "1",
    }
    assert drill_params(PageLink("playground", "shapes", inputs={"L": "5"})) == {"in_L": "5"}
