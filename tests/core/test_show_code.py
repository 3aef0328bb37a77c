"""The code behind a page is sent only when a reader opens "Show the code" (the browser then loads
the code block's highlighter), and it is the source of the function the page names."""

import inspect

from attn_core.attention import attention


def test_the_code_is_sent_only_when_opened(app):
    at = app("pages/playground.py")
    assert not at.exception and len(at.code) == 0
    at.session_state["show_code:attn_core.attention"] = True
    at.run()
    assert not at.exception
    assert [c.value.strip() for c in at.code] == [inspect.getsource(attention).strip()]


def test_the_shapes_table_is_drawn_only_when_opened(app):
    """The Playground's shapes table: absent until its expander opens, then every intermediate's
    shape for the default input, the spec's toy row: bank's one query over the three tokens it may
    see, vectors of width 2, one head."""

    def shapes(at):
        return [df.value for df in at.dataframe if "tensor" in df.value.columns]

    at = app("pages/playground.py")
    assert not at.exception and shapes(at) == []
    at.session_state["pg_shapes_open"] = True
    at.run()
    (df,) = shapes(at)
    table = dict(zip(df["tensor"], df["shape"], strict=True))
    assert table["Q"] == "1 × 1 × 1 × 2" and table["K"] == table["V"] == "1 × 1 × 3 × 2"
    assert table["P = softmax(S)"] == "1 × 1 × 1 × 3" and table["O = P V"] == "1 × 1 × 1 × 2"
