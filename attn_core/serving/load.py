"""The requests a deployment serves: how they arrive and how long they are.

- ``mode="rate"``: Poisson arrivals at ``rate`` requests/s (exponential gaps, seeded);
- ``mode="concurrency"``: a closed loop keeping ``concurrency`` requests in the system (a new one
  arrives the moment one finishes: a fixed batch, as benchmarks with a set batch run it);
- ``mode="max"``: every request arrives at time 0 (offline, maximum load).

Lengths are fixed (``spread`` 0), drawn uniformly in [(1 − spread)·L, (1 + spread)·L], seeded, or
given request by request (``prompt_lens`` / ``output_lens``: a published run's own lengths, one per
request, in arrival order; ``in_len`` / ``out_len`` are then their rounded means).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Mode = Literal["rate", "concurrency", "max"]
MAX_REQUESTS = 200_000
MAX_IN_LEN = 1 << 19  # 524,288 prompt tokens: the step tables grow with the longest context
MAX_OUT_LEN = 1 << 16  # 65,536 output tokens
MAX_OUTPUT_TOKENS = 50_000_000  # K × output: bounds the steps a simulation runs


@dataclass(frozen=True)
class Load:
    """K requests of ``in_len`` prompt and ``out_len`` output tokens, arriving as ``mode`` says."""

    in_len: int
    out_len: int
    mode: Mode = "max"
    rate: float | None = None  # requests/s, mode "rate"
    concurrency: int | None = None  # requests in the system, mode "concurrency"
    requests: int = 1000  # K
    spread: float = 0.0  # lengths uniform in [(1 − s)·L, (1 + s)·L]; 0: fixed
    seed: int = 0
    prompt_lens: tuple[int, ...] | None = None  # (K,) each request's prompt, when given one by one
    output_lens: tuple[int, ...] | None = None  # (K,) each request's output tokens, likewise

    def __post_init__(self) -> None:
        for name, hi in (("in_len", MAX_IN_LEN), ("out_len", MAX_OUT_LEN), ("requests", MAX_REQUESTS)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
                raise ValueError(f"{name} must be a whole number from 1 to {hi:,}, got {v!r}")
        if self.mode not in ("rate", "concurrency", "max"):
            raise ValueError(f"mode must be rate, concurrency or max, got {self.mode!r}")
        if self.mode == "rate" and not (isinstance(self.rate, int | float) and 0 < self.rate < 1e7):
            raise ValueError(f"a Poisson load needs a rate above 0 requests/s, got {self.rate!r}")
        if self.mode == "concurrency":
            c = self.concurrency
            if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= MAX_REQUESTS:
                raise ValueError(f"concurrency must be a whole number ≥ 1, got {c!r}")
        if self.requests * self.out_len > MAX_OUTPUT_TOKENS:
            raise ValueError(f"requests × out_len must be at most {MAX_OUTPUT_TOKENS:,} tokens")
        if not 0 <= self.spread < 1:
            raise ValueError(f"spread must be in [0, 1), got {self.spread!r}")
        self._check_given()

    def _check_given(self) -> None:
        """Per-request lengths come in pairs, one per request, each within the scalar bounds."""
        given = (self.prompt_lens, self.output_lens)
        if given == (None, None):
            return
        if None in given or self.spread:
            raise ValueError("prompt_lens and output_lens come together, without a spread")
        for name, lens, hi in (("prompt_lens", given[0], MAX_IN_LEN), ("output_lens", given[1], MAX_OUT_LEN)):
            if len(lens) != self.requests or not all(isinstance(v, int) and 1 <= v <= hi for v in lens):
                raise ValueError(f"{name} must hold {self.requests} whole numbers from 1 to {hi:,}")
        if sum(given[1]) > MAX_OUTPUT_TOKENS:
            raise ValueError(f"the outputs must total at most {MAX_OUTPUT_TOKENS:,} tokens")

    @property
    def max_context(self) -> int:
        """The longest sequence any request reaches."""
        if self.prompt_lens is not None:
            return max(p + n for p, n in zip(self.prompt_lens, self.output_lens, strict=True)) + 1
        return int(np.ceil((self.in_len + self.out_len) * (1 + self.spread))) + 1


@dataclass(frozen=True)
class Requests:
    """Per request (K,): arrival time (s; NaN in a closed loop until a slot frees) and lengths."""

    arrival: np.ndarray
    prompt: np.ndarray
    output: np.ndarray


def _lengths(rng: np.random.Generator, L: int, spread: float, k: int) -> np.ndarray:
    if spread == 0:
        return np.full(k, L, dtype=np.int64)
    lo, hi = max(1, round(L * (1 - spread))), round(L * (1 + spread))
    return rng.integers(lo, hi + 1, size=k)


def make_requests(load: Load) -> Requests:
    """The K requests of a load, seeded: Poisson arrival times, all at 0, or NaN (closed loop)."""
    rng = np.random.default_rng(load.seed)
    k = load.requests
    if load.prompt_lens is not None:
        prompt, output = np.array(load.prompt_lens, np.int64), np.array(load.output_lens, np.int64)
    else:
        prompt = _lengths(rng, load.in_len, load.spread, k)
        output = _lengths(rng, load.out_len, load.spread, k)
    if load.mode == "rate":
        arrival = np.cumsum(rng.exponential(1 / load.rate, size=k))
    elif load.mode == "max":
        arrival = np.zeros(k)
    else:
        arrival = np.full(k, np.nan)
        arrival[: load.concurrency] = 0.0
    return Requests(arrival, prompt, output)
