"""Shared fixtures: AppTest factory, and a live Streamlit server + headless Chromium for browser tests;
and the shared helpers tests import with ``from conftest import …`` (hf_model: transformers' own
model of a config, the oracle of every parameter count)."""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import sys
from pathlib import Path

import pytest
import torch
from harness.browser import CHROMIUM, CHROMIUM_ARGS  # benchmarks/harness (pytest's pythonpath)
from streamlit.testing.v1 import AppTest

# Without a GPU our Triton kernel runs under Triton's interpreter. Triton reads the switch when it is
# first imported, and other tests (FlexAttention, torch.compile) may import it before
# attn_core.kernels does: set it before any test module loads.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"


class _NetRecords(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def net_expected():
    """Request this in a test that makes a page's safety net catch something on purpose."""


@pytest.fixture(autouse=True)
def no_section_fails_quietly(request):
    """A page's safety net turns an unexpected exception into a message instead of a traceback, so
    `not at.exception` alone would no longer catch a broken page: any test during which the net
    caught something fails here, with the exception, unless it asked for `net_expected`."""
    handler = _NetRecords()
    logger = logging.getLogger("attention_lab.pages")
    logger.addHandler(handler)
    yield
    logger.removeHandler(handler)
    if handler.records and "net_expected" not in request.fixturenames:
        first = handler.records[0]
        trace = logging.Formatter().formatException(first.exc_info) if first.exc_info else ""
        pytest.fail(f"a page's safety net caught: {first.getMessage()}\n{trace}")


@pytest.fixture
def app():
    """A fresh AppTest of the whole app (navigation included); call .run() or switch_page."""

    def make(page: str | None = None, **query) -> AppTest:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        for key, value in query.items():
            at.query_params[key] = str(value)
        at.run()
        if page is not None:
            at.switch_page(page).run()
        return at

    return make


def load_benchmark(name: str):
    """Import benchmarks/<name>.py (not a package) as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def hf_model(config, *, base: bool = False, device: str = "meta"):
    """transformers' own model of ``config`` (a config.json dict with its model_type, or a
    PretrainedConfig): the causal LM, or with ``base`` the model without its head (AutoModel: what
    `verify` and the Cost page's check build). On the meta device nothing is allocated (Llama 2
    70B's weights cost no memory); ``device="cpu"`` gives weights drawn from torch's generator
    (seed it first) for a forward or save_pretrained. Its config is ``model.config``."""
    import transformers

    if not isinstance(config, transformers.PretrainedConfig):
        config = transformers.AutoConfig.for_model(**config)
    auto = transformers.AutoModel if base else transformers.AutoModelForCausalLM
    with torch.device(device):
        return auto.from_config(config)


def hf_numel(config, *, base: bool = False) -> int:
    """The parameters of `hf_model` (on meta): Σ numel over transformers' own module tree."""
    return sum(p.numel() for p in hf_model(config, base=base).parameters())


@pytest.fixture(scope="session")
def server_url():
    """Serve the app headless on a free loopback port for the whole session (the same
    `serve()` the load benchmark uses: it waits for /_stcore/health and always stops the server)."""
    from harness.server import serve

    # every browser test comes from 127.0.0.1: the several that start a room would pass the
    # per-address limit meant for one visitor (tests/classroom/test_rooms.py holds that limit)
    with serve(env={"ATTN_LAB_ROOMS_PER_CLIENT": "16"}) as server:
        yield server.http


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by Playwright (its own browser download does not work here)."""
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.fail("chromium is not installed: `make test` installs it (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    # An `expect` returns as soon as its condition holds; Playwright's default gives up after 5 s,
    # a fixed time a busy 2-core machine misses while a page reruns. Wait up to a minute instead.
    expect.set_options(timeout=60_000)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A new page that records console errors; the test fails if any appear."""
    ARTIFACTS.mkdir(exist_ok=True)  # screenshots go here
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.console_errors = []

    def on_console(msg) -> None:
        # Failed loads are judged by URL below: the console line does not say which resource.
        if msg.type == "error" and not msg.text.startswith("Failed to load resource"):
            pg.console_errors.append(msg.text)

    def on_response(resp) -> None:
        # Streamlit's front end probes <page path>/_stcore/{health,host-config} to find its base
        # URL when a page is opened by its own path; those 404s are expected and harmless.
        probe = resp.url.rsplit("/_stcore/", 1)[-1] in ("health", "host-config")
        if resp.status >= 400 and not probe:
            pg.console_errors.append(f"HTTP {resp.status} {resp.url}")

    pg.on("console", on_console)
    pg.on("response", on_response)
    pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
    yield pg
    context.close()


def wait_idle(pg, timeout: float = 30_000) -> None:
    """Wait until the script has finished and nothing on the page is stale."""
    pg.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]", timeout=timeout)
    pg.wait_for_function("document.querySelectorAll('[data-stale=\"true\"]').length === 0", timeout=timeout)


@pytest.fixture
def small_probe(monkeypatch):
    """`verify`'s probe buffers small enough for tiny layers (the probe's logic is the same, its
    arrays small) and for the run's own terms to dominate the peak (a child gets the parent's sizes,
    so the plan sizes what runs). Here, not in tests/verify/: a second conftest.py would shadow this
    one for tests that import from ``conftest`` (the test folders are not packages)."""
    from attn_core.verify import peak
    from attn_core.verify.examples import SMALL_PROBE

    for name, size in SMALL_PROBE.items():
        monkeypatch.setitem(getattr(peak, name), "cpu", size)
