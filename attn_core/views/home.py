"""The Home page's view: the running example it introduces (the spec's toy sentence)."""

from attn_core.toy import SENTENCE as SENTENCE  # re-exported for the page
