"""Where the Hugging Face page's models come from: the folder rules (attn_core.hf.folders) and the
models kept once per server process (SmolLM2 and the demo, attn_core.views.hf_heads).

Oracles: folders made here under tmp_path (a root, a folder inside it, a folder outside it), and a
counting stand-in for SmolLM2's loader, called through the page's own ``compute`` both ways the
page calls it (with a progress callback: never cached by the view cache; without: cached)."""

from __future__ import annotations

import threading

import pytest
import torch

from attn_core.hf import folders
from attn_core.hf.loading import Loaded
from attn_core.views import hf_heads
from lab_ui import view_cache
from lab_ui.page import compute


@pytest.fixture
def roots(tmp_path, monkeypatch):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "org" / "model").mkdir(parents=True)
    outside.mkdir()
    monkeypatch.setenv(folders.MODEL_DIRS_ENV, str(root))
    monkeypatch.chdir(root)
    return root, outside


def test_a_path_must_lie_under_a_model_root_whether_it_exists_or_not(roots):
    root, outside = roots
    assert folders.model_roots() == [root.resolve()]
    assert folders.resolve_local(str(root / "org" / "model")) == (root / "org" / "model").resolve()
    for path in (str(outside), str(outside / "gone"), "../outside", "/etc"):
        with pytest.raises(ValueError) as refused:
            folders.resolve_local(path)
        assert str(refused.value) == folders.REFUSAL  # one answer: nothing to probe the disk with
    with pytest.raises(ValueError, match="at most 200 characters"):
        folders.resolve_local("a" * 201)


def test_a_name_is_a_folder_only_under_a_root_else_a_hub_id(roots):
    root, _ = roots
    assert folders.resolve_local("org/model") == (root / "org" / "model").resolve()  # cwd is the root
    assert folders.resolve_local("gpt2") is None and folders.resolve_local("org/other") is None
    assert [folders.names_a_path(s) for s in ("/m", "./m", "~/m", "a/b/c", "org/name", "gpt2")] == [
        True,
        True,
        True,
        True,
        False,
        False,
    ]


def test_read_as_folder_refuses_a_missing_folder_by_the_name_typed(roots):
    root, _ = roots
    assert folders.read_as_folder(str(root / "org" / "model"), None, "typed") is True
    assert folders.read_as_folder("gpt2", None, "gpt2") is False  # a hub id
    assert folders.read_as_folder(str(root), False, "typed") is False  # told: a hub id
    for source, folder in ((str(root / "gone"), None), ("org/gone", True)):
        with pytest.raises(ValueError, match="there is no folder 'typed' on this server"):
            folders.read_as_folder(source, folder, "typed")


@pytest.fixture
def counted_shipped(monkeypatch):
    """SmolLM2's loader replaced by one that counts its calls (and waits for ``release``)."""
    calls: list[object] = []
    release = threading.Event()
    fake = Loaded(torch.nn.Linear(1, 1), None, "stand-in", 2, 0.0, False)

    def loader(progress=None):
        calls.append(progress)
        release.wait(5)
        if progress is not None:
            progress(1.0, "loaded")
        return fake

    monkeypatch.setattr(hf_heads, "_KEPT", {})
    monkeypatch.setitem(hf_heads._KEEPERS, hf_heads.SHIPPED, loader)
    view_cache.CACHE.clear()
    yield calls, release, fake
    view_cache.CACHE.clear()  # the stand-in must not reach another test through the shared cache


def test_the_shipped_model_loads_once_however_the_page_asks(counted_shipped):
    calls, release, fake = counted_shipped
    release.set()
    assert not hf_heads.shipped_loaded()
    seen: list[float] = []
    first = compute(hf_heads.load, hf_heads.SHIPPED, progress=lambda f, s: seen.append(f), inputs="m")
    assert hf_heads.shipped_loaded()
    again = compute(hf_heads.load, hf_heads.SHIPPED, progress=lambda f, s: seen.append(f), inputs="m")
    cached = compute(hf_heads.load, hf_heads.SHIPPED, inputs="m")  # through the view cache
    assert first is again is cached is fake
    assert len(calls) == 1 and seen == [1.0]  # only the first load reports progress


def test_visitors_asking_at_once_share_one_load(counted_shipped):
    calls, release, fake = counted_shipped
    got: list[Loaded] = []
    threads = [threading.Thread(target=lambda: got.append(hf_heads.load(hf_heads.SHIPPED))) for _ in range(4)]
    for t in threads:
        t.start()
    release.set()
    for t in threads:
        t.join(10)
    assert len(calls) == 1 and len(got) == 4 and all(g is fake for g in got)
