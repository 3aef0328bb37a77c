"""A hostile visitor, through app.py: inputs that crashed a page, what goes back out (CSV, paths,
messages), and the safety net that keeps any other failure inside one section.

Each case first failed on the code before the fix; the oracles are independent of the code under
test (byte counts by hand, the messages compared with each other, a page written to fail)."""

import logging
from pathlib import Path

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

from attn_core.practice.progress import FIELDS, from_csv
from attn_core.views import hf_heads
from lab_ui.page import NET_MESSAGE

ROOT = Path(__file__).resolve().parents[1]


def no_crash(at) -> list[str]:
    """The page ran to the end without an exception or a safety-net message; its errors."""
    assert not at.exception, [e.message for e in at.exception]
    errors = [e.value for e in at.error]
    assert not any(NET_MESSAGE in e for e in errors), errors
    return errors


# -- typed numbers that overflowed -------------------------------------------------------------


def test_playground_refuses_typed_scores_that_would_overflow(app):
    """1e200 entries made Q Kᵀ = inf: the temperature sweep took log(0) (a math domain error)."""
    big = "1e200, 1e200\n1e200, -1e200"
    at = app(
        "pages/playground.py", in_src="typed matrices", in_Q="1e200, 1e200", in_K=big, in_scale="none (1)"
    )
    errors = no_crash(at)
    assert any("Q row 1, column 1: 1e200 is over the cap" in e for e in errors)


def test_gradients_refuse_typed_keys_that_would_overflow(app):
    """1e308 keys made the Jacobian NaN: eigh failed to converge."""
    at = app("pages/gradients.py", in_src="typed matrices", in_K="1e308, 1e308\n1e308, 1e308\n1, 1")
    errors = no_crash(at)
    assert any("K row 1, column 1: 1e308 is over the cap" in e for e in errors)


def test_typed_entries_at_the_cap_still_work(app):
    at = app("pages/playground.py", in_src="typed matrices", in_Q="1000000, -1000000")
    assert no_crash(at) == []


def test_a_non_finite_comparison_is_never_badged_green():
    def page():
        from lab_ui.badges import oracle_badge

        oracle_badge("torch SDPA", float("nan"), 1e-12)
        oracle_badge("torch SDPA", 0.0, 1e-12)

    at = AppTest.from_function(page).run()
    first, second = (m.value for m in at.markdown if "-badge[" in m.value)
    assert first.startswith(":red-badge[✗ NOT FINITE") and "max |Δ| = 0" not in first
    assert second.startswith(":green-badge[✓ matches")


def test_online_memory_bill_at_its_own_caps(app):
    """T = 16,777,216 and B = 4,096: the byte counts pass 2⁶³ (Arrow's int64 overflowed)."""
    T, B = 16_777_216, 4096
    at = app("pages/online_softmax.py", os_section="Memory bill", os_T=T, os_B=B)
    assert no_crash(at) == []
    df = next(d.value for d in at.dataframe if "naive per layer (bytes)" in d.value.columns)
    row = df[df["T"].astype(str) == str(T)].iloc[0]
    # llama-2-7b: 32 query heads per layer; fp16 weights, 2 bytes each; every T × T matrix kept.
    assert str(row["naive per layer (bytes)"]) == str(B * 32 * T * T * 2)


# -- the Hugging Face folder check ---------------------------------------------------------------


def hf_message(app, source: str) -> str:
    at = app("pages/hf_heads.py", hf_src="local folder or hub id")
    at.text_input(key="hf_path").input(source).run()
    errors = no_crash(at)
    assert len(errors) == 1
    return errors[0]


def test_a_300_character_folder_name_is_refused_in_one_line(app):
    message = hf_message(app, "a" * 300)
    assert "at most 200 characters" in message


def test_relative_names_answer_the_same_whether_they_exist_or_not(app, monkeypatch, tmp_path):
    """ "attn_core" exists in the server's folder, "no_such_thing_here" does not: a visitor must not
    tell them apart, and no message may show where the server is installed."""
    monkeypatch.setattr(hf_heads.hf, "hub_reachable", lambda timeout=0: False)
    monkeypatch.setenv(hf_heads.MODEL_DIRS_ENV, str(tmp_path))
    monkeypatch.chdir(ROOT)
    assert (ROOT / "attn_core").is_dir() and not (ROOT / "no_such_thing_here").exists()
    existing = hf_message(app, "attn_core")
    missing = hf_message(app, "no_such_thing_here")
    assert existing.replace("attn_core", "X") == missing.replace("no_such_thing_here", "X")
    for message in (existing, missing, hf_message(app, "/etc"), hf_message(app, "../..")):
        assert str(ROOT) not in message and str(tmp_path) not in message


def test_a_missing_folder_under_a_model_root_names_what_was_typed(app, monkeypatch, tmp_path):
    monkeypatch.setenv(hf_heads.MODEL_DIRS_ENV, str(tmp_path))
    message = hf_message(app, str(tmp_path / "gone"))
    assert "there is no folder" in message


# -- practice uploads ---------------------------------------------------------------------------


def practice_upload(app, name: str, content: bytes):
    at = app("pages/practice.py")
    at.file_uploader(key="pr_upload").set_value((name, content, "text/csv"))
    return at.run()


@pytest.mark.parametrize(
    "content",
    [
        bytes(range(256)) * 1024,  # a binary file: a quote opens a field that never closes
        b"\x89PNG\r\n\x1a\n" + b"\x00" * 100,
        (",".join(FIELDS) + '\n"' + "a" * 200_000 + '",1,easy,True,1,,\n').encode(),  # over 128 KiB
    ],
    ids=["binary", "png", "huge-quoted-field"],
)
def test_a_file_that_is_not_a_practice_log_is_refused(app, content):
    at = practice_upload(app, "log.csv", content)
    errors = no_crash(at)
    assert any("not a practice log" in e for e in errors)


def record_downloads(monkeypatch) -> dict[str, bytes]:
    """file name → bytes of every download button drawn from now on."""
    files: dict[str, bytes] = {}
    store = MemoryMediaFileStorage.load_and_get_id

    def load_and_get_id(self, data, mimetype, kind, filename=None):
        files[filename] = data
        return store(self, data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", load_and_get_id)
    return files


def test_formulas_in_an_uploaded_log_go_back_out_as_text(app, monkeypatch):
    files = record_downloads(monkeypatch)
    log = ",".join(FIELDS) + "\n" + '"=HYPERLINK(""http://e.vu"",""x"")",1,easy,True,2.5,@SUM(A1),+cmd\n'
    at = practice_upload(app, "log.csv", log.encode())
    assert no_crash(at) == []
    by_card = next(d.value for d in at.dataframe if "tried" in d.value.columns)
    cards = list(by_card["card"])
    assert any(c.startswith("'=HYPERLINK") for c in cards) and not any(c.startswith("=") for c in cards)
    text = files["practice_log.csv"].decode()
    for line in text.splitlines()[1:]:
        assert not line.startswith(("=", "+", "-", "@", "\t", "\r"))
    back = [a for a in from_csv(text) if "HYPERLINK" in a.card]
    assert back[0].card.startswith("'=") and back[0].slip == "'@SUM(A1)" and back[0].answer == "'+cmd"


# -- the safety net -----------------------------------------------------------------------------


def test_one_failing_section_leaves_the_rest_of_the_page_working(caplog, net_expected):
    def page():
        import streamlit as st

        from lab_ui.page import run_section

        def broken(x):
            raise ZeroDivisionError(f"/srv/secret/path.py line 3: {x}")

        run_section(broken, 7, inputs="the seed in the sidebar")
        run_section(lambda: st.markdown("second section drawn"))
        st.slider("still works", 0, 10, 3, key="after")

    with caplog.at_level(logging.ERROR, logger="attention_lab.pages"):
        at = AppTest.from_function(page).run()
    assert not at.exception
    (message,) = [e.value for e in at.error]
    assert message.startswith(NET_MESSAGE) and "the seed in the sidebar" in message
    assert "/srv/secret" not in message and "Traceback" not in message
    assert any(m.value == "second section drawn" for m in at.markdown)
    at.slider(key="after").set_value(5).run()
    assert at.slider(key="after").value == 5
    assert any("ZeroDivisionError" in r.exc_text for r in caplog.records if r.exc_text)


def test_stop_and_rerun_pass_through_the_net():
    def page():
        import streamlit as st

        from lab_ui.page import require, safety_net

        with safety_net("x"):
            require(None, fix="the thing")
        st.markdown("not reached")

    at = AppTest.from_function(page).run()
    assert not at.exception and at.error.len == 0
    assert "Fix the thing" in at.info[0].value
    assert not any(m.value == "not reached" for m in at.markdown)


# -- numbers and labels from a link ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("page", "query", "key", "default"),
    [
        ("pages/playground.py", {"in_src": "random", "in_seed": "1e400"}, "in_seed", 0),
        ("pages/online_softmax.py", {"os_section": "Memory bill", "os_T": "1e400"}, "os_T", 4096),
        ("pages/online_softmax.py", {"os_section": "Memory bill", "os_B": "-inf"}, "os_B", 1),
    ],
)
def test_a_link_number_outside_the_widget_is_refused_with_a_note(app, page, query, key, default):
    at = app(page, **query)
    assert no_crash(at) == []
    assert at.number_input(key=key).value == default
    raw = query[key]
    assert any(f"The link's value `{raw}` is not allowed here" in c.value for c in at.caption)


def test_a_link_label_is_never_read_as_markdown(app):
    at = app("pages/playground.py", in_src="[x](//e.vu)")
    assert no_crash(at) == []
    (note,) = [c.value for c in at.caption if "link's value" in c.value]
    assert "`[x](//e.vu)`" in note  # inside a code span: shown as typed, not as a link


# -- an uploaded lesson's words ------------------------------------------------------------------


def test_an_uploaded_lessons_words_reach_the_screen_only_as_text(app):
    """Every field of a lesson file a visitor uploads (titles, narration) that the panel or the
    Lessons box shows: a hostile address in any of them stays text (inside code at most), never a
    link, an image, a heading or HTML. Oracle: markdown-it-py's CommonMark reading of each shown
    element; the real renderer is tests/browser/test_browser_lessons.py."""
    import json

    from markdown_it import MarkdownIt

    bad = "# [x](https://evil.example) ![p](https://evil.example/p.gif) <b>x</b>"
    step = {"page": "scaling", "state": {}, "title": bad, "narration": [bad, "ok [lab](/masks) " + bad]}
    lesson = {"id": "causal-mask", "title": bad, "summary": bad, "steps": [step, step]}
    at = app()
    at.session_state["_lesson_box_open"] = True
    at.run()
    at.file_uploader(key="lesson_upload").set_value(
        ("l.json", json.dumps(lesson).encode(), "application/json")
    )
    at.run()
    assert no_crash(at) == []
    shown = [e.value for e in (*at.markdown, *at.caption) if "evil.example" in e.value]
    assert len(shown) >= 5  # panel: caption, title, two lines; the box's "Playing …"
    parser = MarkdownIt("commonmark")
    for text in shown:
        tokens = [t for block in parser.parse(text) for t in [block, *(block.children or [])]]
        kinds = {t.type for t in tokens}
        assert not kinds & {"image", "heading_open", "html_inline", "html_block"}, text
        assert all(t.attrGet("href") == "/masks" for t in tokens if t.type == "link_open"), text
        assert not any("evil.example" in t.content for t in tokens if t.type == "text"), text
