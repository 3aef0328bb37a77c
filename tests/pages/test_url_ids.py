"""Choices travel in the page address as short stable ids, and links saved before the ids (which
carried the label shown) still open the same section or choice.

The expected ids are written out here by hand (the member names, lower-cased), not computed by the
code under test, so a change that puts labels back into the URL, or renames an id, fails.
"""

import importlib
import pkgutil
import re
from enum import StrEnum

import pytest
from apptest_helpers import ok

import attn_core.views as views
from attn_core.masks import MaskKind
from attn_core.theory.scaling import ScaleRule
from attn_core.views.masks import Section as MaskSection
from attn_core.views.online_softmax import Section as OnlineSection
from lab_ui.widgets import url_id

MASKS, PLAYGROUND, SCALING = "pages/masks.py", "pages/playground.py", "pages/scaling.py"
ONLINE = "pages/online_softmax.py"


def refusals(at):
    return [c.value for c in at.caption if "is not allowed here" in c.value]


def subheaders(at):
    return [s.value for s in at.subheader]


# ------------------------------------------------------------------------ new links carry ids


def test_a_chosen_section_goes_into_the_link_as_its_short_id(app):
    at = app(MASKS)
    at.radio(key="mk_section").set_value("Cached decoding").run()  # by the label the user sees
    ok(at)
    assert at.query_params["mk_section"] == "decoding"
    assert "Cached decoding: P cached keys, L new queries" in subheaders(at)


def test_a_chosen_mask_and_scale_go_into_the_link_as_short_ids(app):
    at = app(PLAYGROUND)
    at.selectbox(key="in_mask").set_value("causal (bottom-right, cached prefix)").run()
    at.selectbox(key="in_scale").set_value("none (1)").run()
    ok(at)
    assert at.query_params["in_mask"] == "causal_bottom_right"
    assert at.query_params["in_scale"] == "none"
    # The labels on screen are unchanged.
    assert "causal (bottom-right, cached prefix)" in at.selectbox(key="in_mask").options
    assert at.selectbox(key="in_mask").value is MaskKind.CAUSAL_BOTTOM_RIGHT


def test_a_link_with_ids_opens_the_choices(app):
    at = app(MASKS, mk_section="fully_masked")
    ok(at)
    assert at.radio(key="mk_section").value is MaskSection.FULLY_MASKED
    assert "Fully masked rows: 0/0 across fills and dtypes" in subheaders(at)
    at = app(SCALING, sc_rule="linear")
    ok(at)
    assert at.selectbox(key="sc_rule").value is ScaleRule.LINEAR
    assert not refusals(at)


def test_the_gallery_kinds_have_short_ids_too(app):
    at = app(MASKS)
    at.selectbox(key="mk_kind").set_value("custom painted grid").run()
    ok(at)
    assert at.query_params["mk_kind"] == "painted"
    at = app(MASKS, mk_kind="document")
    ok(at)
    assert at.selectbox(key="mk_kind").value is MaskKind.DOCUMENT


# -------------------------------------------------------------- links saved before the ids


def test_an_old_link_with_a_section_label_opens_that_section(app):
    at = app(MASKS, mk_section="Cached decoding")
    ok(at)
    assert at.radio(key="mk_section").value is MaskSection.DECODING
    assert "Cached decoding: P cached keys, L new queries" in subheaders(at)
    assert not refusals(at)
    assert at.query_params["mk_section"] == "decoding"  # the address is rewritten to the id


def test_an_old_link_with_a_mask_kind_label_opens_that_mask(app):
    at = app(PLAYGROUND, in_mask="causal (bottom-right, cached prefix)", in_src="hand trace (Q = K = V = X)")
    ok(at)
    assert at.selectbox(key="in_mask").value is MaskKind.CAUSAL_BOTTOM_RIGHT
    assert at.radio(key="in_src").value == "hand trace (Q = K = V = X)"
    assert any("cached prefix; query i sits at position P + i" in c.value for c in at.caption)
    assert not refusals(at)
    assert at.query_params["in_mask"] == "causal_bottom_right"
    assert at.query_params["in_src"] == "hand_trace"


def test_an_old_link_with_a_scale_rule_label_opens_that_rule(app):
    at = app(SCALING, sc_rule="1/d_k")
    ok(at)
    assert at.selectbox(key="sc_rule").value is ScaleRule.LINEAR
    assert not refusals(at)
    assert at.query_params["sc_rule"] == "linear"


def test_an_old_link_to_another_pages_section_opens_it(app):
    at = app(ONLINE, os_section="Memory bill")
    ok(at)
    assert at.radio(key="os_section").value is OnlineSection.MEMORY
    assert at.query_params["os_section"] == "memory"


# ------------------------------------------------------------------------- unknown values


def test_an_unknown_value_is_refused_under_the_widget(app):
    at = app(MASKS, mk_section="Decoding (renamed away)")
    ok(at)
    assert at.radio(key="mk_section").value is MaskSection.GALLERY  # the first section
    assert refusals(at) == [
        ":orange[The link's value `Decoding (renamed away)` is not allowed here; using Mask gallery.]"
    ]
    at = app(PLAYGROUND, in_mask="bottom_right")
    ok(at)
    assert at.selectbox(key="in_mask").value is MaskKind.NONE
    assert len(refusals(at)) == 1 and "`bottom_right`" in refusals(at)[0]


# ------------------------------------------------------------------- the id is not the label


def test_relabelling_a_member_keeps_its_id():
    class Before(StrEnum):
        KV = "KV cache & GQA"

    class After(StrEnum):
        KV = "KV cache and grouped-query attention"

    assert url_id(Before.KV) == url_id(After.KV) == "kv"
    assert url_id(64) == "64" and url_id("llama-2-7b") == "llama-2-7b"  # plain options: their text


@pytest.mark.parametrize(
    ("page", "kind", "key", "label", "short", "query"),
    [
        ("pages/costs.py", "radio", "co_src", "paste or upload config.json", "config", {}),
        ("pages/hf_heads.py", "radio", "hf_src", "local folder or hub id", "local", {}),
        (MASKS, "selectbox", "mk_conv_kind", "sliding window (3)", "window", {"mk_section": "conventions"}),
        ("pages/gradients.py", "selectbox", "gr_G", "random (seeded)", "random", {}),
        (
            "pages/trained_heads.py",
            "selectbox",
            "th_size",
            "3 layers × 4 heads, d_model 64",
            "3x4",
            {"th_section": "train"},
        ),
    ],
)
def test_text_choices_keep_short_ids_and_open_old_links(app, page, kind, key, label, short, query):
    """Choices that are plain text (not an Enum) carry the short id given for them; an old link with
    the text, and a new one with the id, both open the choice."""
    for given in (label, short):
        at = app(page, **query, **{key: given})
        ok(at)
        assert getattr(at, kind)(key=key).value == label
        assert at.query_params[key] == short
        assert not refusals(at)


def test_every_page_sections_ids_are_short_distinct_and_plain():
    """Each page's sections give ids a link can carry as they are (no quoting) and tell apart."""
    enums = []
    for info in pkgutil.iter_modules(views.__path__):
        section = getattr(importlib.import_module(f"attn_core.views.{info.name}"), "Section", None)
        if section is not None:
            enums.append(section)
    assert len(enums) >= 7  # costs, gradients, masks, one_head, online_softmax, scaling, trained_heads
    for enum in enums:
        ids = [url_id(s) for s in enum]
        assert len(set(ids)) == len(ids), enum
        assert all(re.fullmatch(r"[a-z][a-z0-9_]{0,19}", i) for i in ids), ids
