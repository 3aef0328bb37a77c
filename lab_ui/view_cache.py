"""One computation per state: every page's view, shared by all sessions of this server process.

A page calls its view as ``compute(playground.view, qkv, mask, scale, inputs=…)``
(`lab_ui/page.py`), which computes ``playground.view(qkv, mask, scale)`` once through
``view_cache.view``. The key is the view function and a
fingerprint of its inputs' *content* (tensor bytes, dataclass fields, numbers, strings), so a
follower who reruns the presenter's state, or a second student with the same inputs, gets the
object the first one computed; any change in any input is a different key.

Shared, not copied (the ``st.cache_resource`` choice, not ``st.cache_data``'s). ``cache_data``
pickles the result on every hit: for a 512 × 512 Playground view that is several MB copied per
rerun, the very cost this cache removes. Sharing costs nothing, and asks one thing of the pages:
a view is read-only (pages index it, plot it, tabulate it; they never write into it).
``verify()`` re-fingerprints every stored value and names any that changed since it was
stored (with ``check_writes`` on); the tests run every page and then call it. Streamlit's own caches cannot do the rest:
their key hashes tensors through pickle and they have an entry cap but no byte cap.

Bounds: at most ``MAX_ENTRIES`` states per view function, least recently used out first, and
``MAX_BYTES`` for all views together (each entry's size is counted when it is stored: tensor and
array bytes, string lengths, a small charge per Python object). A single result larger than
``MAX_ENTRY_BYTES`` is returned without being kept. Errors (a ValueError naming a bad input) are
never cached. Models and other objects that are not data (an ``nn.Module``, a tokenizer) enter
the key by identity and, for modules, by the version counters of their parameters, which every
in-place update (an optimizer step) bumps: a model trained further is a new key.

Evicted memory is given back at once. The server runs with Streamlit's post-run garbage
collection off (docs/classroom.md), and a view holding a reference cycle (a dataclass that points
back at its figure, a tensor's autograd graph) is freed only by a full collection, which Python
runs rarely: resident memory swung to ~3x ``MAX_BYTES`` between passes. So once ``COLLECT_BYTES``
have been evicted since the last one, the cache runs ``gc.collect()`` itself (outside its lock;
~10-50 ms, at most once per 64 MiB given back).
"""

from __future__ import annotations

import dataclasses
import enum
import gc
import hashlib
import inspect
import os
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch

T = TypeVar("T")

ENABLED = os.environ.get("ATTN_LAB_VIEW_CACHE", "1") != "0"  # 0: compute every time (benchmarks)
MAX_ENTRIES = 64  # states per view function (a class following one presenter needs 1)
MAX_BYTES = 256 * 2**20  # all views together
MAX_ENTRY_BYTES = 64 * 2**20  # one result larger than this is computed, shown, and not kept
OBJECT_BYTES = 64  # the charge for one Python object inside a result (a float, a dict slot)
COLLECT_BYTES = 64 * 2**20  # evicted since the last full collection: collect now


# ---------------------------------------------------------------------------------- fingerprint


class _Identity:
    """A serial number per live object that enters a key by identity (models, tokenizers).

    id() alone can be reused once an object dies; the weak reference notices that."""

    def __init__(self) -> None:
        self._serial: dict[int, tuple[weakref.ref, int]] = {}
        self._next = 0
        self._lock = threading.Lock()

    def __call__(self, obj: object) -> int:
        with self._lock:
            hit = self._serial.get(id(obj))
            if hit is not None and hit[0]() is obj:
                return hit[1]
            self._next += 1
            key = id(obj)
            self._serial[key] = (weakref.ref(obj, lambda _, key=key: self._serial.pop(key, None)), self._next)
            return self._next


_identity = _Identity()


def _feed(h, obj: Any, depth: int = 0) -> None:
    """Feed ``obj``'s content into the hash ``h``; type names keep 1 and 1.0 and "1" apart."""
    if depth > 32:
        raise TypeError("view_cache: inputs nested deeper than 32 levels")
    h.update(f"{type(obj).__module__}.{type(obj).__qualname__}".encode())
    if obj is None or isinstance(obj, bool | int | float | complex | str | bytes):
        h.update(repr(obj).encode())
    elif isinstance(obj, enum.Enum):
        h.update(repr(obj.value).encode())
    elif isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        if t.dtype in (torch.bfloat16, torch.float16):
            t = t.view(torch.int16)
        h.update(t.numpy().data if t.numel() else b"")
    elif isinstance(obj, np.ndarray) and obj.dtype.hasobject:  # its buffer holds pointers: walk it
        h.update(f"{obj.shape}".encode())
        _feed(h, obj.tolist(), depth + 1)
    elif isinstance(obj, np.ndarray):
        h.update(f"{obj.dtype}{obj.shape}".encode())
        h.update(np.ascontiguousarray(obj).data if obj.size else b"")
    elif hasattr(obj, "to_plotly_json"):  # a plotly figure: its spec
        _feed(h, obj.to_plotly_json(), depth + 1)
    elif isinstance(obj, torch.nn.Module):
        h.update(f"{_identity(obj)}".encode())  # its parameters' versions move on every update
        h.update(",".join(str(p._version) for p in obj.parameters()).encode())
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            h.update(f.name.encode())
            _feed(h, getattr(obj, f.name), depth + 1)
    elif isinstance(obj, list | tuple):
        h.update(f"{len(obj)}".encode())
        for x in obj:
            _feed(h, x, depth + 1)
    elif isinstance(obj, dict):
        h.update(f"{len(obj)}".encode())
        for k, v in obj.items():
            _feed(h, k, depth + 1)
            _feed(h, v, depth + 1)
    elif isinstance(obj, set | frozenset):
        h.update(",".join(sorted(repr(x) for x in obj)).encode())
    elif callable(obj) and hasattr(obj, "__qualname__"):
        h.update(f"{getattr(obj, '__module__', '')}.{obj.__qualname__}".encode())
    else:  # anything else (a tokenizer, a lock): this very object
        h.update(f"{_identity(obj)}".encode())


def fingerprint(*args: Any, **kwargs: Any) -> bytes:
    """A 16-byte digest of the arguments' content (blake2b, as in hashlib)."""
    h = hashlib.blake2b(digest_size=16)
    _feed(h, args)
    _feed(h, sorted(kwargs.items()))
    return h.digest()


# ---------------------------------------------------------------------------------------- size


def size_of(obj: Any) -> int:
    """Bytes a stored result holds: tensor storages and arrays once each, plus OBJECT_BYTES per
    Python object walked (strings by length). An estimate from above for the data that matters."""
    seen: set[int] = set()
    total = 0
    stack = [obj]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        total += OBJECT_BYTES
        if hasattr(x, "to_plotly_json"):  # a figure holds its spec twice: dicts and graph objects
            total += 2 * size_of(x.to_plotly_json())
        elif isinstance(x, torch.Tensor):
            storage = x.untyped_storage()
            if storage.data_ptr() not in seen:
                seen.add(storage.data_ptr())
                total += storage.nbytes()
        elif isinstance(x, np.ndarray):
            total += x.nbytes
        elif isinstance(x, str | bytes):
            total += len(x)
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list | tuple | set | frozenset):
            stack.extend(x)
        elif isinstance(x, torch.nn.Module):
            continue  # a model passed through a view is the caller's, not the cache's
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            stack.extend(getattr(x, f.name) for f in dataclasses.fields(x))
        elif hasattr(x, "__dict__") and not callable(x):
            stack.extend(vars(x).values())
        else:
            total += sys.getsizeof(x, OBJECT_BYTES)
    return total


# --------------------------------------------------------------------------------------- cache


@dataclass
class _Entry:
    value: Any
    nbytes: int
    digest: bytes | None  # fingerprint of the value when it was stored, when checking writes


class ViewCache:
    """LRU per view function, one byte budget for all: see the module docstring."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self.max_entry_bytes = min(MAX_ENTRY_BYTES, max_bytes)
        self._pages: dict[str, OrderedDict[bytes, _Entry]] = {}
        self._lock = threading.Lock()
        self._inflight: dict[tuple[str, bytes], threading.Event] = {}
        self.nbytes = 0
        self.evicted = 0  # bytes evicted since the last full collection
        self.hits = self.misses = 0
        self.check_writes = False  # tests: fingerprint each stored value so that verify() can compare

    def view(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``, computed once per distinct input content. Read-only result. A
        bound method's instance is an input too (a page view's ``view.part(x)``)."""
        key = (
            fingerprint(fn.__self__, *args, **kwargs)
            if inspect.ismethod(fn)
            else fingerprint(*args, **kwargs)
        )
        return self.get(f"{fn.__module__}.{fn.__qualname__}", key, lambda: fn(*args, **kwargs))

    def get(self, name: str, key: bytes, compute: Callable[[], T]) -> T:
        """The value stored under ``name`` and ``key``, or ``compute()``'s, stored."""
        if not ENABLED:
            return compute()
        while True:
            with self._lock:
                entries = self._pages.setdefault(name, OrderedDict())
                if (entry := entries.get(key)) is not None:
                    entries.move_to_end(key)
                    self.hits += 1
                    return entry.value
                wait = self._inflight.get((name, key))
                if wait is None:  # nobody computes this state: this session does
                    self._inflight[(name, key)] = threading.Event()
                    self.misses += 1
                    break
            wait.wait()  # another session computes the same state: take its result (or retry)
        try:
            value = compute()
            self._store(name, key, value)
            return value
        finally:
            with self._lock:
                self._inflight.pop((name, key)).set()

    def _store(self, name: str, key: bytes, value: Any) -> None:
        nbytes = size_of(value)
        if nbytes > self.max_entry_bytes:
            return
        entry = _Entry(value, nbytes, fingerprint(value) if self.check_writes else None)
        evicted: list[_Entry] = []
        with self._lock:
            entries = self._pages.setdefault(name, OrderedDict())
            entries[key] = entry
            self.nbytes += nbytes
            while len(entries) > self.max_entries:
                evicted.append(entries.popitem(last=False)[1])
                self.nbytes -= evicted[-1].nbytes
            while self.nbytes > self.max_bytes:  # the least recently used of the largest page
                page = max(self._pages.values(), key=lambda e: sum(x.nbytes for x in e.values()))
                evicted.append(page.popitem(last=False)[1])
                self.nbytes -= evicted[-1].nbytes
            self.evicted += sum(e.nbytes for e in evicted)
            collect = self.evicted >= COLLECT_BYTES
            if collect:
                self.evicted = 0
        del evicted
        if collect:  # the evicted views' cycles go now, not at Python's next full pass
            gc.collect()

    def entries(self) -> dict[str, int]:
        """States kept per view function."""
        with self._lock:
            return {name: len(e) for name, e in self._pages.items() if e}

    def values(self) -> list[Any]:
        with self._lock:
            return [entry.value for e in self._pages.values() for entry in e.values()]

    def verify(self) -> list[str]:
        """Names of the views whose stored value changed since it was stored (a page wrote into
        a shared result); empty when every view is intact. Only values stored while
        ``check_writes`` was on are checked (fingerprinting a large view costs ~10 ms)."""
        with self._lock:
            stored = [(name, entry) for name, e in self._pages.items() for entry in e.values()]
        return [name for name, entry in stored if entry.digest and fingerprint(entry.value) != entry.digest]

    def clear(self) -> None:
        with self._lock:
            self._pages.clear()
            self.nbytes = self.hits = self.misses = 0


CACHE = ViewCache()  # the server process's one cache, shared by every session


def view(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` from the server's shared cache (see the module docstring)."""
    return CACHE.view(fn, *args, **kwargs)
