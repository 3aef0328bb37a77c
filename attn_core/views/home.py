"""The Home page's view: the running example it introduces (the spec's toy sentence)."""

from attn_core.toy import SENTENCE

__all__ = [  # what the page reads (the page import rule: tests/pages/test_page_shape.py)
    "SENTENCE",
]
