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
