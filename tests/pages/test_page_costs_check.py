"""AppTest of the Cost page's "check this estimate on this machine": given the config the page
sized, transformers builds its own first layers and the page says so with the parameters built;
a model whose first layer does not fit the cap gets one line; a closed panel plans nothing.

Oracles: transformers' own base model of the same first layers, built on the meta device from
its config class (``AutoConfig.for_model``), its ``sum(p.numel())``; the planner replaced by one
that fails, for the closed panel."""

from __future__ import annotations

import json
import re

from conftest import hf_numel

from attn_core.verify import plan as verify_plan
from attn_core.verify.examples import LLAMA
from tests.verify.test_run_verify import open_check, wait_for_check

PAGE = "pages/costs.py"
PASTE = "paste or upload config.json"
# More layers than a check builds (MAX_LAYERS): the params built are those of the first 64 only.
# Untied embeddings said outright: the formulas read an unsaid tie as tied, transformers' Llama as
# untied, and the page's other check names that difference in red.
DEEP = LLAMA | {"num_hidden_layers": 70, "tie_word_embeddings": False}


def built_line(at) -> str:
    return next(m.value for m in at.markdown if "Built by" in m.value)


def test_a_closed_check_plans_nothing(app, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("planned while closed")

    monkeypatch.setattr(verify_plan, "plan_build", refuse)  # the page imports it at each run
    at = app(PAGE)
    assert not at.exception and at.error.len == 0
    assert "co_vf_T" not in [s.key for s in at.selectbox]  # the panel's widgets are not drawn
    at.run()  # a rerun (a widget changed elsewhere) plans nothing either
    assert not at.exception


def test_a_pasted_config_is_checked_on_transformers_own_layers(app):
    at = app(PAGE, co_src=PASTE)
    at.text_area(key="co_paste").set_value(json.dumps(DEEP)).run()
    open_check(at)
    assert not at.exception
    expected = hf_numel(DEEP | {"num_hidden_layers": verify_plan.MAX_LAYERS}, base=True)
    assert "Built by **transformers**" in built_line(at)  # planned, before the run
    assert f"**{expected:,}** parameters" in built_line(at)
    at.selectbox(key="co_vf_T").set_value(64).run()
    wait_for_check(at.button(key="co_vf_run").click().run())
    assert not at.exception and not at.error
    done = next(m.value for m in at.markdown if "layers built" in m.value)
    assert "64 of 70 layers built" in done and "Built by **transformers**" in done
    assert f"**{expected:,}** parameters" in done
    assert set(table_of(at)["bound ≤ measured"]) == {"yes"}


def table_of(at):
    return next(df.value for df in at.dataframe if "bound ≤ measured" in df.value.columns)


def test_a_first_layer_over_the_cap_is_one_line(app):
    """Llama 3 8B built by transformers: its 128,256 × 4,096 embedding alone is 2 GiB in fp32, so
    even its first layer does not fit a 1 GiB cap: one line, the rest of the page works."""
    at = open_check(app(PAGE, co_model="llama-3-8b"))
    at.selectbox(key="co_vf_mem").set_value(1.0).run()
    assert not at.exception and at.error.len == 0
    line = next(i.value for i in at.info if "not checked here" in i.value)
    assert "\n" not in line and re.search(r"one layer need [\d.]+ GiB", line) and "1.00 GiB cap" in line
    assert "co_vf_run" not in [b.key for b in at.button]  # nothing to run
    assert at.metric  # the page above it is intact


# -- the check against transformers' build of a pasted config: never waited on ----------------------
def fresh_llama() -> dict:
    """A config no kept outcome answers for (a fresh name)."""
    import uuid

    return LLAMA | {"_name_or_path": f"fresh-{uuid.uuid4().hex}"}


def test_the_formulas_figures_show_while_every_build_slot_is_busy(app, monkeypatch):
    from attn_core.anatomy import runner
    from attn_core.limits import ServerSlot

    monkeypatch.setattr(runner, "_SLOTS", ServerSlot("build check", 0, busy=runner._busy))  # every slot held
    at = app(PAGE, co_src=PASTE)
    at.text_area(key="co_paste").set_value(json.dumps(fresh_llama())).run()
    assert not at.exception and at.error.len == 0
    assert any("busy" in w.value and "try again in a moment" in w.value for w in at.warning)
    assert_formulas_drawn(at)


def assert_formulas_drawn(at) -> None:
    """The formulas' KV-cache metric, by hand: 2 (K, V) · L · H_kv · d_head · 2 B per token, at
    T = 4,096 and B = 1."""
    d_head = LLAMA["hidden_size"] // LLAMA["num_attention_heads"]
    per_token = 2 * LLAMA["num_hidden_layers"] * LLAMA["num_key_value_heads"] * d_head * 2
    assert per_token * 4096 == 2**20
    assert next(m.value for m in at.metric if m.label == "KV cache, B × T") == "1 MiB"


def test_the_formulas_figures_show_while_the_build_is_pending(app, monkeypatch):
    from attn_core.anatomy import runner
    from lab_ui import cost_check

    monkeypatch.setattr(cost_check, "PAGE_WAIT_S", 0)  # the page ends before the build does
    try:
        at = app(PAGE, co_src=PASTE)
        at.text_area(key="co_paste").set_value(json.dumps(fresh_llama())).run()
        assert not at.exception and at.error.len == 0
        assert any("Checking against transformers' build" in i.value for i in at.info)
        assert_formulas_drawn(at)  # drawn without the build
    finally:
        runner.stop_all()
