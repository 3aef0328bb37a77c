"""The Practice page in a real browser: type a right answer and press Enter, then a wrong one."""

import re

import pytest
from conftest import ARTIFACTS, wait_idle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def kv_answer(prompt: str, heads_for_kv: bool = False) -> float:
    """KiB per token from the question's own numbers (2·L·H_kv·d_h·b / 1024): the oracle."""
    m = re.search(r"(\d+) layers, (\d+) query heads and (\d+) KV heads? of width (\d+).*in (\w+)\.", prompt)
    layers, heads, kv, d_h, dtype = m.groups()
    b = {"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1}[dtype]
    return 2 * int(layers) * int(heads if heads_for_kv else kv) * int(d_h) * b / 1024


def test_practice_by_typing(server_url, page):
    page.goto(f"{server_url}/practice?pr_cards=13")
    wait_idle(page, 60_000)
    prompt = page.get_by_text(re.compile(r"KV heads? of width")).inner_text()
    box = page.get_by_label("Your answer")
    box.fill(f"{kv_answer(prompt):g}")
    box.press("Enter")
    wait_idle(page)
    expect(page.get_by_text(re.compile(r"^Right"))).to_be_visible()
    page.get_by_role("button", name="Next question").click()
    # a new question has a new, empty answer box; wait until the answered one is gone
    expect(page.locator('input[aria-label="Your answer"]:not([value=""])')).to_have_count(0)
    wait_idle(page)
    box = page.get_by_label("Your answer")
    prompt = page.get_by_text(re.compile(r"KV heads? of width")).inner_text()
    box.fill(f"{kv_answer(prompt, heads_for_kv=True):g}")  # sized with the query heads: card 13's slip
    box.press("Enter")
    wait_idle(page)
    expect(page.get_by_text(re.compile(r"^(Not quite|Right)"))).to_be_visible()  # Right only if h = H_kv
    if page.get_by_text(re.compile(r"^Not quite")).count():
        expect(
            page.get_by_text(re.compile(r"^Your answer is exactly .* query heads instead of"))
        ).to_be_visible()
    expect(page.get_by_test_id("stDataFrame")).to_be_visible()  # the progress table
    page.screenshot(path=str(ARTIFACTS / "practice-answered.png"), full_page=True)
    assert page.console_errors == []
