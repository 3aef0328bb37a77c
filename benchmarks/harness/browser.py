"""Debian's Chromium, headless, as the browser tests and `first_figure.py` launch it through
Playwright (Playwright's own browser download does not work on these machines)."""

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
