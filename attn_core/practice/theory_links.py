"""Where the theory drills (cards 3, 8, 10, 16, 17, 18) link to, in one place.

The Scaling page (cards 3, 16, 18) and the "What one head can express" page (cards 8, 10, 17) were
built alongside the drills. A drill's `PageLink` names the page's url_path, the section to open and the
drawn numbers under the pages' own widget keys (sc_… and oh_…, as those pages define them). The
Practice page shows a link only once its page is in `lab_ui.nav.PAGES`, so without the pages the
feedback simply has no link. A number outside a widget's range would open at the page's default,
as any stale URL value does (lab_ui.widgets), so the drills draw within the pages' ranges: at most
4,096 keys for the Scaling page (its simulated row). If the pages rename a key or a section, this
module is the one to change.
"""

from __future__ import annotations

import math

from attn_core.practice.question import PageLink

SCALING = "scaling"  # cards 3, 16, 18
ONE_HEAD = "one_head"  # cards 8, 10, 17

# The Scaling page's sections, by the names the page shows.
VARIANCE, ENTROPY, TWO_KEYS, ALIGNMENT, SINKS = (
    "Variance of q·k",
    "Entropy & saturation",
    "Two keys, exactly",
    "Alignment (1/d_k)",
    "Sinks & QK-norm",
)
# The "one head" page's sections.
KERNEL, RANK, SELECT, COLLAPSE = (
    "Nadaraya–Watson",
    "Rank of S, P, log P",
    "Which keys can win",
    "Rank collapse",
)

# The scale rules, as the Scaling page's widget labels: the factor α on q·k at width d.
RULES = {"none (1)": lambda d: 1.0, "1/√d_k": lambda d: 1 / math.sqrt(d), "1/d_k": lambda d: 1 / d}


def scaling_link(section: str, **params) -> PageLink:
    """The Scaling page at ``section`` with these numbers (URL keys sc_<name>)."""
    return PageLink(
        SCALING, {"sc_section": section, **{f"sc_{k}": str(v) for k, v in params.items()}}, section
    )


def one_head_link(section: str, **params) -> PageLink:
    """The "one head" page at ``section`` with these numbers (URL keys oh_<name>)."""
    return PageLink(
        ONE_HEAD, {"oh_section": section, **{f"oh_{k}": str(v) for k, v in params.items()}}, section
    )
