"""Where the drills link to, in one place: each page section by the id its URL keeps and the label
it shows, and the ids of the other choices a link sets. tests/practice/test_page_links.py opens every
drill's link and checks that its page keeps each value.

The Scaling page (cards 3, 16, 18) and the "What one head can express" page (cards 8, 10, 17) were
built alongside the drills. A drill's `PageLink` names the page's url_path, the section to open (by
the id the page's URL keeps, and the label it shows) and the drawn numbers by the names of the
pages' inputs, a choice by its id: ids only. The widget keys those names become (sc_dk, oh_T, …)
are lab_ui/open_page.py's, which owns every key a link sets. A number outside a widget's range
would open at the page's default, as any stale URL value does (lab_ui.widgets), so the drills draw
within the pages' ranges: at most 4,096 keys for the Scaling page (its simulated row). If the pages
rename a section or a choice, this module is the one to change; a renamed key, open_page.
"""

from __future__ import annotations

import math

from attn_core.practice.question import PageLink, PageSection, choice_id
from attn_core.theory.scaling import ScaleRule

SCALING = "scaling"  # cards 3, 16, 18
ONE_HEAD = "one_head"  # cards 8, 10, 17

# The Cost page (cards 9, 11-14) and its "paste or upload config.json" source, by id.
KV, FLOPS, SCORES = (
    PageSection("costs", "kv", "KV cache & GQA"),
    PageSection("costs", "flops", "FLOPs"),
    PageSection("costs", "scores", "Score memory"),
)
PASTED = "config"
# The Masks page (cards 6, 7).
GALLERY, PERMUTATIONS = (
    PageSection("masks", "gallery", "Mask gallery"),
    PageSection("masks", "permutations", "Permutations"),
)
# The Gradients and Online-softmax pages (cards 4, 5, 15).
JACOBIAN, ONE_ROW, MERGE = (
    PageSection("gradients", "jacobian", "Softmax Jacobian"),
    PageSection("gradients", "one_row", "One row, one key"),
    PageSection("online_softmax", "merge", "Merge (split-K)"),
)
# The shared input picker (Playground, Gradients; cards 1, 2, 4, 5): its sources and scales, by id.
TYPED, RANDOM = "typed", "random"
NO_SCALE, TEMPERATURE = "none", "temperature"

# The Scaling page's sections: the id its URL keeps, the label it shows.
VARIANCE, ENTROPY, TWO_KEYS, ALIGNMENT, SINKS = (
    PageSection(SCALING, "variance", "Variance of q·k"),
    PageSection(SCALING, "entropy", "Entropy & saturation"),
    PageSection(SCALING, "two_keys", "Two keys, exactly"),
    PageSection(SCALING, "alignment", "Alignment (1/d_k)"),
    PageSection(SCALING, "sinks", "Sinks & QK-norm"),
)
# The "one head" page's sections.
KERNEL, RANK, SELECT, COLLAPSE = (
    PageSection(ONE_HEAD, "kernel", "Nadaraya–Watson"),
    PageSection(ONE_HEAD, "rank", "Rank of S, P, log P"),
    PageSection(ONE_HEAD, "select", "Which keys can win"),
    PageSection(ONE_HEAD, "collapse", "Rank collapse"),
)

# The scale rules, as the Scaling page's widget labels: the factor α on q·k at width d.
RULES = {"none (1)": lambda d: 1.0, "1/√d_k": lambda d: 1 / math.sqrt(d), "1/d_k": lambda d: 1 / d}


def _values(params: dict) -> dict[str, str]:
    """The drawn numbers by the page's input names, as text; a scale rule by its id."""
    return {k: choice_id(ScaleRule(v)) if k == "rule" else str(v) for k, v in params.items()}


def scaling_link(section: PageSection, **params) -> PageLink:
    """The Scaling page at ``section`` with these numbers (by its inputs' names: dk, T, rule, …)."""
    return section.link(_values(params))


def one_head_link(section: PageSection, **params) -> PageLink:
    """The "one head" page at ``section`` with these numbers (by its inputs' names: T, dk, lam, …)."""
    return section.link(_values(params))
