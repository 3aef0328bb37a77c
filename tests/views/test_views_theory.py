"""The Scaling page's view (attn_core.views.scaling) and the "one head" page's view
(attn_core.views.one_head), against the spec's printed check numbers (cards 3, 10, 17, 18, typed
here from the spec) and against facts computed here directly (a softmax row built by hand, which
key of a circle has the largest first coordinate).
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from attn_core.theory.scaling import ScaleRule
from attn_core.views import one_head, scaling
from attn_core.views.one_head import ExpressivityInputs
from attn_core.views.scaling import ScalingInputs
from attn_core.views.sections import SectionViews


def test_sinks_section_prints_card_18s_numbers():
    v = scaling.view("Sinks & QK-norm", ScalingInputs(T=4096, target_weight=0.9, advantage=5.0, gain=5.0))
    by_T = {row["T"]: row for row in v.table}
    for T, a in ((128, 7.04), (1024, 9.13), (4096, 10.51)):
        assert by_T[T]["advantage for the target"] == pytest.approx(a, abs=5e-3)
    assert by_T[1024]["weight at the chosen a"] == pytest.approx(0.127, abs=5e-4)  # 12.7% at a = 5
    assert v.cap == pytest.approx(0.843, abs=5e-4)  # g = 5 at T = 4,096
    assert v.gain_for_target == pytest.approx(5.26, abs=5e-3)
    assert v.usual_cap == pytest.approx(2.9e-4, abs=5e-6)  # g = 1/√128
    row = torch.zeros(4096, dtype=torch.float64)
    row[0] = v.advantage_for_target
    assert float(torch.softmax(row, 0)[0]) == pytest.approx(0.9, rel=1e-12)  # the row, built here
    assert all(c.passed for c in v.checks)


def test_two_keys_section_prints_card_3s_exact_probabilities():
    v = scaling.view(scaling.Section.TWO_KEYS, ScalingInputs(d_k=128))
    assert v.at_d_k[ScaleRule.NONE.value]["exact"] == pytest.approx(0.773, abs=5e-4)
    assert v.at_d_k[ScaleRule.SQRT.value]["exact"] == pytest.approx(0.00135, abs=5e-6)
    assert v.at_d_k[ScaleRule.NONE.value]["gaussian"] == pytest.approx(0.774, abs=5e-4)
    assert v.threshold == pytest.approx(math.log(99), rel=1e-15)
    assert all(c.passed for c in v.checks)


def test_variance_section_theory_is_card_3s():
    v = scaling.view(scaling.Section.VARIANCE, ScalingInputs(d_k=128, rule=ScaleRule.SQRT))
    assert v.theory_by_rule == pytest.approx(
        {ScaleRule.NONE: 128.0, ScaleRule.SQRT: 1.0, ScaleRule.LINEAR: 1 / 128}
    )
    assert v.scale == pytest.approx(128**-0.5)
    assert [r["d_k σ_q² σ_k²"] for r in v.table] == [8, 32, 128, 512]
    assert all(c.passed for c in v.checks)


@pytest.mark.parametrize(
    ("change", "word"), [({"T": 1}, "T"), ({"rho": 2.0}, "ρ"), ({"target_weight": 1.0}, "")]
)
def test_scaling_inputs_out_of_range_are_refused(change, word):
    with pytest.raises(ValueError, match=word):
        scaling.validate(ScalingInputs(**change))


def test_rank_section_prints_card_10s_ranks():
    v = one_head.view("Rank of S, P, log P", ExpressivityInputs(T=64, d_k=8))
    assert v.study.ranks == {"S": 8, "log P": 9, "P": 64}
    assert all(c.passed for c in v.checks)


def test_select_section_a_one_dimensional_head_picks_only_the_extremes():
    n = 12
    v = one_head.view(one_head.Section.SELECT, ExpressivityInputs(circle_keys=n))
    one_dim = v.counts["d_k = 1 (first coordinate only)"]
    assert sum(one_dim) == sum(v.counts["d_k = 2"]) == one_head.CIRCLE_QUERIES
    # keys at angles 2πj/n: the first coordinate cos(2πj/n) is largest at j = 0, smallest at n/2
    assert {j for j, c in enumerate(one_dim) if c} == {0, n // 2}
    assert all(c > 0 for c in v.counts["d_k = 2"])  # on the circle every key wins some query
    assert all(c.passed for c in v.checks)


def test_collapse_section_uniform_head_is_card_17s():
    v = one_head.view(one_head.Section.COLLAPSE, ExpressivityInputs(layers=6, stacks=2))
    assert v.uniform.theory == pytest.approx(1 / 4096) == pytest.approx(2.44e-4, abs=5e-7)
    assert all(c.passed for c in v.checks)


def test_a_width_the_heads_do_not_divide_is_refused_where_heads_are_read():
    bad = ExpressivityInputs(width=64, heads=3)
    with pytest.raises(ValueError, match="multiple of h = 3"):
        one_head.view(one_head.Section.CIRCUITS, bad)
    # the collapse stacks never split the width into heads: a hidden heads value cannot block them
    assert one_head.view(one_head.Section.COLLAPSE, replace(bad, layers=2, stacks=1)).inputs.heads == 3


# ------------------------------------------- both views are built one section per call (views/sections.py)


@pytest.mark.parametrize("module", [scaling, one_head], ids=["scaling", "one_head"])
def test_every_section_has_its_builder_and_a_view_carries_its_inputs(module):
    assert module.SECTIONS.missing() == []
    assert set(module.SECTIONS.builders) == set(module.Section)
    first = next(iter(module.Section))
    x = module.ScalingInputs(T=64, d_k=8) if module is scaling else module.ExpressivityInputs(T=16, d_k=4)
    by_label, by_member = module.view(first.value, x), module.view(first, x)  # an old link's label
    assert type(by_label) is type(by_member) and by_label.inputs == by_member.inputs == x


def test_a_section_gets_one_builder_and_a_bad_input_is_refused_before_it_runs():
    calls = []
    views = SectionViews(one_head.Section, one_head.validate)
    views.builds(one_head.Section.RANK)(calls.append)
    assert views.missing() == [s for s in one_head.Section if s is not one_head.Section.RANK]
    with pytest.raises(ValueError, match="already has a builder"):
        views.builds(one_head.Section.RANK)(print)
    with pytest.raises(ValueError, match="stacks"):
        views.view(one_head.Section.RANK, ExpressivityInputs(stacks=0))
    assert calls == []
    views.view("Rank of S, P, log P", ExpressivityInputs())
    assert calls == [ExpressivityInputs()]


def test_the_scaling_pages_inputs_and_sinks_section_live_in_their_own_modules():
    """attn_core.views.scaling_inputs holds the inputs and their checks; scaling_sinks builds card
    18's section, registered as the Scaling page's SINKS builder."""
    from attn_core.views import scaling_inputs, scaling_sinks

    assert scaling.SECTIONS.builders[scaling.Section.SINKS] is scaling_sinks.sinks_view
    assert scaling.ScalingInputs is scaling_inputs.ScalingInputs
    assert scaling.validate is scaling_inputs.validate
    assert scaling.SECTIONS.missing() == []
