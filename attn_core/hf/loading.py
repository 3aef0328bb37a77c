"""Load a Hugging Face causal LM within the page's caps: a local folder (``folders`` decides
which names are folders) or a hub id where the hub is reachable; eager attention, float32, eval
mode, switched to the capture function (``capture.use_capture``)."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError

from attn_core.hf.capture import use_capture
from attn_core.hf.folders import is_folder, read_as_folder

MAX_PARAMS = 200_000_000  # CPU, float32: 0.8 GB of weights; GPT-2 (124M) and SmolLM-135M fit
LOAD_CAP_S = 60.0  # a load that took longer is reported as over the cap (it cannot be interrupted)


@dataclass(frozen=True)
class Loaded:
    model: torch.nn.Module
    tokenizer: object | None  # None when the folder has no tokenizer: type token ids instead
    name: str
    n_params: int
    load_s: float
    over_time_cap: bool


class OverCap(ValueError):
    """The model is larger than the page allows."""


def _transformers():
    try:
        import transformers
    except ImportError as exc:  # pragma: no cover - an environment without the optional package
        raise ValueError("the transformers package is not installed on this server") from exc
    return transformers


HUB_HOST = "huggingface.co"
HUB_PROBE_S = 3.0  # seconds to wait for the hub before treating it as unreachable


def hub_reachable(timeout: float = HUB_PROBE_S) -> bool:
    """One TCP connection to the hub: without it transformers retries for ~30 s before failing."""
    try:
        socket.create_connection((HUB_HOST, 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def _hub_miss(source: str, offline: dict) -> ValueError:
    """A hub id's failure, said the same whatever is on this disk: transformers would read a folder
    of that name in the server's working directory, so such a name is answered as a miss, and
    transformers' own words (which can name local paths) are not shown for a hub id."""
    return ValueError(
        f"could not load the hub id {source!r}: "
        + (
            "it is not in this server's cache and the hub is unreachable from here "
            "(a model folder on this server works)"
            if offline
            else "no such model on the hub, or not a causal LM that transformers can read"
        )
    )


def _tokenizer(tf, name: str, offline: dict):
    """The model's own tokenizer, or None (none shipped, or one built from the model type alone)."""
    try:
        tokenizer = tf.AutoTokenizer.from_pretrained(name, **offline)
    except (OSError, ValueError, TypeError):
        return None
    return tokenizer if has_vocabulary(tokenizer) else None


def load(
    source: str, max_params: int = MAX_PARAMS, *, folder: bool | None = None, shown_as: str | None = None
) -> Loaded:
    """A local folder (config.json + weights) or a hub id; eager attention, float32, eval mode.

    ``folder`` says which ``source`` is (None: a folder when one exists there); messages name it
    as ``shown_as`` (what the visitor typed), never by its path on this server. The parameter
    count is read from the config on the meta device before any weight is loaded, so an
    oversized model is refused without reading it. ValueError with the reason otherwise."""
    tf = _transformers()
    source = source.strip()
    if not source:
        raise ValueError("give a local folder or a hub id")
    shown = shown_as if shown_as is not None else source
    folder = read_as_folder(source, folder, shown)
    local = Path(source).expanduser()
    where = f"the folder {shown!r}" if folder else f"the hub id {source!r}"
    name = str(local) if folder else source
    start = time.perf_counter()
    # offline: only the local cache is tried (an unreachable hub fails at once instead of retrying)
    offline = {} if folder or hub_reachable() else {"local_files_only": True}
    hub_miss = _hub_miss(source, offline)
    if not folder and is_folder(local):
        raise hub_miss
    try:
        config = tf.AutoConfig.from_pretrained(name, **offline)
        with torch.device("meta"):
            shell = tf.AutoModelForCausalLM.from_config(config)
        n_params = sum(p.numel() for p in shell.parameters())
        if n_params > max_params:
            raise OverCap(f"{n_params:,} parameters: over this page's cap of {max_params:,}")
        model = tf.AutoModelForCausalLM.from_pretrained(
            name,
            attn_implementation="eager",
            dtype=torch.float32,
            use_safetensors=True,  # never unpickle a .bin a folder or a hub repo offers
            **offline,
        )
    except OverCap:
        raise
    # no config.json, unknown model type, no network, no such repo; a corrupt safetensors header
    except (OSError, ValueError, SafetensorError) as exc:
        if not folder:
            raise hub_miss from exc
        detail = str(exc).splitlines()[0].replace(name, shown) if str(exc) else type(exc).__name__
        raise ValueError(f"could not load {where}: {detail}") from exc
    model.eval()
    use_capture(model)
    tokenizer = _tokenizer(tf, name, offline)
    load_s = time.perf_counter() - start
    return Loaded(model, tokenizer, shown, n_params, load_s, load_s > LOAD_CAP_S)


def has_vocabulary(tokenizer) -> bool:
    """Whether a tokenizer has words beyond its special tokens: one that transformers builds from
    the model type alone (a GPT-NeoX folder without tokenizer files) has only those, and would
    read every text as 0 tokens."""
    vocab = tokenizer.get_vocab()
    specials = set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
    return len(vocab) >= 2 and any(i not in specials for i in vocab.values())
