"""Whose address a room counts, on a real server: Streamlit's server (uvicorn) takes
X-Forwarded-For from a loopback peer as the client's address before the app sees it, so five
browsers on the server's machine, each sending another header, could start five rooms where one
address may start three. With no trusted proxy named the header is ignored; with the loopback
proxy named (as deploy/serve.sh names its nginx) the header's last entry is the client.

Oracle: the per-address limit, set here to 3 (ATTN_LAB_ROOMS_PER_CLIENT): a fourth room from
the same real address is refused with the limit's message; four different believed addresses
each get theirs."""

from __future__ import annotations

import pytest
from conftest import wait_idle
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
LIMIT = 3


def _start_room(browser, url: str, forwarded: str) -> bool:
    """A new browser context that sends ``forwarded`` as X-Forwarded-For starts a room: whether it
    got one."""
    ctx = browser.new_context(
        viewport={"width": 1200, "height": 900}, extra_http_headers={"X-Forwarded-For": forwarded}
    )
    try:
        pg = ctx.new_page()
        pg.goto(url)
        wait_idle(pg, 60_000)
        pg.get_by_text("Classroom").first.click()
        pg.get_by_role("button", name="Start a room").click()
        started, refused = pg.get_by_text("Presenting room"), pg.get_by_text("Could not start a room")
        expect(started.or_(refused).first).to_be_visible(timeout=120_000)  # a busy machine's rerun
        return started.count() > 0
    finally:
        ctx.close()


@pytest.mark.parametrize(("trusted", "started"), [("", LIMIT), ("127.0.0.1", LIMIT + 1)])
def test_a_forged_header_is_ignored_unless_a_named_proxy_sent_it(browser, trusted, started):
    from harness.server import serve

    env = {
        "ATTN_LAB_ROOMS_PER_CLIENT": str(LIMIT),
        "ATTN_LAB_TRUSTED_PROXIES": trusted,
        "ATTN_LAB_ROOMS": "memory",
    }
    with serve(env=env) as server:
        got = [_start_room(browser, server.http, f"198.51.100.{i}") for i in range(LIMIT + 1)]
    assert sum(got) == started, got
