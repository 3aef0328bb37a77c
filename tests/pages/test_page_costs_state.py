"""AppTest: the Cost page sizes a pasted hybrid's recurrent state at the dtype its config states
(``mamba_ssm_cache_dtype``), as the CLI does. Oracle: a hand count of Nemotron 3 Nano's Mamba-2
state from its config — conv columns (H·P + 2·G·N)·K at bf16, recurrent H·P·N at fp32 — which is
also what transformers' own cache allocates (tests/anatomy)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from attn_core.cost.units import format_bytes_binary

PAGE = "pages/costs.py"
PASTE = "paste or upload config.json"
NANO = Path(__file__).parents[1] / "data" / "configs" / "nemotron-3-nano-30b-a3b.json"


def _card(at) -> str:
    return next((m.value for m in at.caption if "per sequence at any T" in m.value), "")


def test_nemotron_3_nano_state_shows_at_fp32(app):
    c = json.loads(NANO.read_text())
    n = c["layers_block_type"].count("mamba")
    H, P, N, G, K = (
        c["mamba_num_heads"],
        c["mamba_head_dim"],
        c["ssm_state_size"],
        c["n_groups"],
        4,
    )  # K: class default
    fp32 = n * ((H * P + 2 * G * N) * K * 2 + H * P * N * 4)
    at = app(PAGE, co_src=PASTE)
    at.text_area(key="co_paste").set_value(NANO.read_text()).run()
    deadline = time.monotonic() + 120  # the build that completes the config runs in a child
    while not _card(at) and time.monotonic() < deadline:
        assert not at.exception
        time.sleep(0.5)  # the page's own fragment polls the child the same way
        at.run()
    card = _card(at)
    assert f"is {format_bytes_binary(fp32)} per sequence at any T" in card
