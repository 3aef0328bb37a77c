"""AppTest of the Practice page: answer right, then wrong (a named slip), then junk; the progress
table counts them. The oracle for the right answer is the KV-cache formula, worked out in this file
from the numbers printed in the question."""

import re

import pytest

from attn_core.practice.drills import DRILLS
from lab_ui.nav import PAGES
from lab_ui.open_page import drill_params

PAGE = "pages/practice.py"


def kv_numbers(prompt: str) -> tuple[int, int, int, int, int]:
    m = re.search(r"(\d+) layers, (\d+) query heads and (\d+) KV heads? of width (\d+).*in (\w+)\.", prompt)
    layers, heads, kv, d_h, dtype = m.groups()
    return int(layers), int(heads), int(kv), int(d_h), {"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1}[dtype]


def open_kv_drill(app):
    at = app(PAGE)
    at.session_state["pr_seed"] = 12345  # pin the session's questions
    at.multiselect(key="pr_cards").set_value(["13"]).run()
    assert not at.exception
    return at


def prompt(at) -> str:
    return next(m.value for m in at.markdown if "KV head" in m.value)


def answer(at, text: str):
    n = at.session_state["pr_n"]
    at.text_input(key=f"pr_answer_{n}").set_value(text)
    next(b for b in at.button if b.label == "Check").click().run()
    assert not at.exception
    return at


def progress_row(at):
    df = next(d.value for d in at.dataframe if "tried" in d.value.columns)
    return df.iloc[0]


def test_page_opens_on_a_question(app):
    at = app(PAGE)
    assert not at.exception and at.error.len == 0
    assert at.subheader[0].value.startswith("Card ")
    assert any(c.value.startswith("Checked by attn_core") for c in at.caption)


def test_right_then_wrong_then_junk(app):
    at = open_kv_drill(app)
    layers, heads, kv, d_h, b = kv_numbers(prompt(at))
    right = 2 * layers * kv * d_h * b / 1024  # KiB
    answer(at, f"{right:g} KiB")
    assert at.success[0].value.startswith("Right")
    row = progress_row(at)
    assert (row["card"], row["tried"], row["right"]) == ("13", 1, 1)

    next(b for b in at.button if b.label == "Next question").click().run()
    layers, heads, kv, d_h, b = kv_numbers(prompt(at))
    wrong = 2 * layers * heads * d_h * b / 1024  # sized with the query heads: card 13's slip
    answer(at, f"{wrong:g}")
    if heads != kv:
        assert at.error[0].value.startswith("Not quite")
        assert "query heads" in at.warning[0].value
    row = progress_row(at)
    assert (row["tried"], row["right"]) == (2, 1 if heads != kv else 2)

    next(b for b in at.button if b.label == "Next question").click().run()
    answer(at, "lots of memory")
    assert "Could not read" in at.error[0].value
    assert progress_row(at)["tried"] == 2  # unreadable answers are not counted


def test_feedback_links_to_the_live_page_with_the_numbers(app):
    at = open_kv_drill(app)
    answer(at, "1")
    links = at.get("page_link")
    assert links, "the feedback links to the card's page"
    assert "co_paste" in str(links[0].proto)


def test_no_cards_chosen_is_a_message_not_a_crash(app):
    at = app(PAGE)
    at.multiselect(key="pr_cards").set_value([]).run()
    assert not at.exception
    assert "pick at least one card" in at.info[0].value.lower()


@pytest.mark.parametrize("card", list(DRILLS))
def test_each_cards_link_opens_its_page_with_the_numbers(app, card):
    link = DRILLS[card].card_numbers().link
    paths = {p.url_path: p.path for p in PAGES}
    if link.url_path not in paths:
        # cards 3, 8, 10, 16-18 link to the Scaling and "one head" pages, built on another
        # branch; until they are in the navigation the Practice page shows no link for these cards.
        pytest.skip(f"page {link.url_path!r} is not in lab_ui.nav.PAGES on this branch yet")
    path = paths[link.url_path]
    at = app(path, **drill_params(link))
    assert not at.exception
    assert at.error.len == 0, [e.value for e in at.error]


def test_a_fresh_session_shows_no_empty_chart_or_table_of_zeros(app):
    """Before any answer the progress says so in words: no bar chart of zeros, no table of zero rows.
    After one answer it lists the card answered (one row), not every card of the drill."""
    at = app(PAGE)
    assert not at.exception
    assert not at.get("plotly_chart")
    assert not any("tried" in d.value.columns for d in at.dataframe)
    assert any("no answers yet" in i.value.lower() for i in at.info)
    at = open_kv_drill(app)
    at.multiselect(key="pr_cards").set_value(["13", "14"]).run()
    asked = re.match(r"Card (\d+) ·", at.subheader[0].value).group(1)
    answer(at, "1")  # a plain number: readable (and counted) whichever card was drawn
    df = next(d.value for d in at.dataframe if "tried" in d.value.columns)
    assert df["card"].tolist() == [asked] and df["tried"].tolist() == [1]
    assert len(at.get("plotly_chart")) == 1
    other = "14" if asked == "13" else "13"
    assert any(f"1 card of the drill not tried yet: {other}." in c.value for c in at.caption)
