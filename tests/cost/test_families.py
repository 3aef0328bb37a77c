"""One home per model family: what a model_type means beyond its keys lives in
attn_core/cost/families.py, and no other cost module branches on a model_type's name. Oracle: the
modules' own syntax trees (a comparison of ``model_type`` with a name or a table of names)."""

from __future__ import annotations

import ast
from pathlib import Path

from attn_core.cost.families import FAMILIES, PLAIN, family
from attn_core.cost.type_facts import recorded_facts

COST = Path(__file__).resolve().parents[2] / "attn_core" / "cost"


def _branches_on_a_name(tree: ast.AST) -> list[int]:
    """Lines comparing ``model_type`` with a string or with a module-level table (``*_TYPES``)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(isinstance(s, ast.Name) and s.id == "model_type" for s in sides):
            continue
        names = [s for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)]
        names += [s for s in sides if isinstance(s, ast.Name) and s.id.endswith("_TYPES")]
        names += [s for s in sides if isinstance(s, ast.Tuple | ast.Set | ast.List)]
        if names:
            lines.append(node.lineno)
    return lines


def test_no_cost_module_branches_on_a_model_type_name():
    found = {
        p.name: lines
        for p in sorted(COST.glob("*.py"))
        if p.name != "families.py" and (lines := _branches_on_a_name(ast.parse(p.read_text())))
    }
    assert found == {}


def test_the_detector_sees_a_branch():
    # the check above is only as good as this: the old forms are caught
    tree = ast.parse(
        'a = model_type == "gpt_oss"\nb = model_type in DEEPSEEK_TYPES\nc = model_type in ("x", "y")'
    )
    assert _branches_on_a_name(tree) == [1, 2, 3]


def test_an_unlisted_type_is_plain_and_every_expert_family_builds_experts():
    assert family("llama") is PLAIN and PLAIN.experts is None and not PLAIN.class_defaults
    for model_type in (t for t, f in FAMILIES.items() if f.experts is not None):  # the build holds experts
        facts = recorded_facts(model_type)
        assert facts is None or facts.moe, model_type
