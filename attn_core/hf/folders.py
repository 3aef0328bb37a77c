"""Which local folders a visitor may load a Hugging Face model from, and how a name is read as a
folder or a hub id.

Decided by the name first: a path (starting with /, . or ~, or with more than one /) must lie
under a model root (the Hugging Face cache and ./models, or the folders ``ATTN_LAB_MODEL_DIRS``
names), with the same refusal whether it exists or not; a name or org/name is a folder only where
one lies under a root, a hub id everywhere else. No message names a path on this server.
"""

from __future__ import annotations

import os
from pathlib import Path

MODEL_DIRS_ENV = "ATTN_LAB_MODEL_DIRS"  # os.pathsep-separated folders a visitor may load from
MAX_SOURCE_CHARS = 200  # a hub id is at most 96 + 1 + 96 characters; a folder name under a root is shorter
REFUSAL = (
    "this server loads local models only from its model folders (the Hugging Face cache and ./models, "
    "or the folders ATTN_LAB_MODEL_DIRS names), or a hub id such as gpt2 or org/name"
)


def model_roots() -> list[Path]:
    """The only folders whose models a visitor may load from this server: the Hugging Face cache
    and ./models by default, or those ATTN_LAB_MODEL_DIRS names. Anything else on the disk is
    not the visitor's to read, nor to probe for (the refusal is the same whether it exists)."""
    named = os.environ.get(MODEL_DIRS_ENV, "")
    roots = named.split(os.pathsep) if named else ["~/.cache/huggingface", "models"]
    return [Path(r).expanduser().resolve() for r in roots if r]


def names_a_path(source: str) -> bool:
    """Whether ``source`` is a path by its name alone (starts with /, . or ~, or has more than one
    /), never a hub id (a name or org/name)."""
    return source.startswith(("/", ".", "~")) or source.count("/") > 1


def is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder; False (not an error) for a name the OS cannot even look up."""
    try:
        return path.is_dir()
    except (OSError, ValueError):  # a name too long, a NUL byte
        return False


def resolve_local(source: str) -> Path | None:
    """The folder under one of model_roots() that ``source`` names, or None for a hub id; a path
    outside every root is refused (ValueError, the same whether it exists or not)."""
    if len(source) > MAX_SOURCE_CHARS:
        raise ValueError(f"a model folder or hub id is at most {MAX_SOURCE_CHARS} characters")
    if "\x00" in source:
        raise ValueError(REFUSAL)
    resolved = Path(os.path.realpath(os.path.expanduser(source)))
    under_root = any(resolved == root or root in resolved.parents for root in model_roots())
    if names_a_path(source):
        if not under_root:
            raise ValueError(REFUSAL)
        return resolved
    return resolved if under_root and is_folder(resolved) else None


def read_as_folder(source: str, folder: bool | None, shown: str) -> bool:
    """Whether to load ``source`` as a local folder: ``folder`` when given (True: it must be one),
    else whether a folder is there, a path-shaped name that is no folder being refused.
    ValueError naming ``shown`` (what the visitor typed) when the folder is missing."""
    missing = ValueError(f"there is no folder {shown!r} on this server")
    there = is_folder(Path(source).expanduser())
    if folder is None:
        if not there and names_a_path(source):
            raise missing  # a path, not an org/name id
        return there
    if folder and not there:
        raise missing
    return folder
