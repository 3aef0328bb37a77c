"""The drills' links to the live pages: each carries the ids the page's URL keeps (the section's
Enum member, lower-cased), never the label shown, and the page opens on it keeping every value.

Oracles: the target page's own ``Section`` enum read through lab_ui.widgets.url_id (not the drills'
tables), and the page itself, run in AppTest on the link: the address it writes back after the run
(a page rewrites a label it was given into its id, and drops a refused value) and the notes it
shows under a widget whose link value it refused.
"""

from __future__ import annotations

import importlib

import pytest

from attn_core.practice import drills, page_links
from attn_core.practice.question import Difficulty, PageLink, PageSection
from attn_core.views.inputs import InputKind, ScaleKind
from lab_ui.nav import PAGES
from lab_ui.open_page import drill_params
from lab_ui.widgets import url_id

PATHS = {p.url_path: p.path for p in PAGES}
SECTION_KEYS = {  # the section picker's URL key, per page that has one
    "costs": "co_section",
    "masks": "mk_section",
    "gradients": "gr_section",
    "online_softmax": "os_section",
    "scaling": "sc_section",
    "one_head": "oh_section",
}


def links() -> list[PageLink]:
    """Every drill's card numbers, and a seeded sample of its draws at each difficulty."""
    found = []
    for card, drill in drills.DRILLS.items():
        found.append(drill.card_numbers().link)
        found += [drills.draw(card, seed, d).link for d in Difficulty for seed in range(12)]
    return [link for link in found if link is not None]


def one_per_section() -> list[PageLink]:
    by_place: dict[tuple[str, str], PageLink] = {}
    for link in links():
        by_place.setdefault((link.url_path, link.section), link)
    return list(by_place.values())


def test_a_section_is_linked_by_the_id_of_the_pages_own_section():
    seen = set()
    for link in links():
        key = SECTION_KEYS.get(link.url_path)
        params = drill_params(link)
        if key is None:  # the Playground has no section picker: the link names what to look at
            assert not link.section_id and not any(k.endswith("_section") for k in params), link
            continue
        section = importlib.import_module(f"attn_core.views.{link.url_path}").Section
        assert params[key] == link.section_id == url_id(section(link.section)), link  # the label names it
        seen.add(link.url_path)
    assert seen == set(SECTION_KEYS)  # the sample reaches every page with sections


def test_no_link_carries_a_label_where_the_page_keeps_an_id():
    labels = {  # labels of choices the linked widgets show (what links carried before ids; "random"
        # is both the label and the id of its source)
        "paste or upload config.json",
        "typed matrices",
        "none (1)",
        "custom temperature",
        "causal (top-left)",
        "1/√d_k",
        "1/d_k",
    }
    for link in links():
        for key, value in drill_params(link).items():
            if key.endswith(("_src", "_scale", "_kind", "_rule")):
                assert value not in labels, (key, value)


@pytest.mark.parametrize("link", one_per_section(), ids=lambda link: f"{link.url_path}:{link.section}")
def test_the_page_opens_on_the_link_and_keeps_every_value(app, link):
    assert link.url_path in PATHS, f"no page {link.url_path!r} in lab_ui.nav.PAGES"
    params = drill_params(link)
    at = app(PATHS[link.url_path], **params)
    assert not at.exception, [e.message for e in at.exception]
    assert at.error.len == 0, [e.value for e in at.error]
    assert not [c.value for c in at.caption if "is not allowed here" in c.value]
    for key, value in params.items():
        # a value the page kept stays in its address as given (a default one is dropped from it)
        assert at.query_params.get(key, value) == value, (key, value, at.query_params.get(key))


def test_every_link_target_is_a_section_of_its_page_by_id_and_label():
    targets = [v for v in vars(page_links).values() if isinstance(v, PageSection)]
    assert len(targets) >= 16
    for t in targets:
        assert t.url_path in PATHS and t.url_path in SECTION_KEYS
        section = importlib.import_module(f"attn_core.views.{t.url_path}").Section(t.label)
        assert t.id == url_id(section)
    assert (url_id(InputKind.TYPED), url_id(InputKind.RANDOM)) == (page_links.TYPED, page_links.RANDOM)
    assert (
        url_id(ScaleKind.NONE),
        url_id(ScaleKind.TEMPERATURE),
    ) == (page_links.NO_SCALE, page_links.TEMPERATURE)
