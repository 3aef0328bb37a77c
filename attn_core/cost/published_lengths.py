"""The prompt and output lengths of a published serving run whose dataset's lengths vary, as the
row's own figures give them (``replay.lengths`` in ``assets/published/runs.json``). Two rules:

- ``per-request``: the run's log lists every request's prompt and output tokens (``input_lens``,
  ``output_lens``, in the order the requests were sent): the replay sends exactly those;
- ``token-rates``: the run reports request/s R with output tokens/s O and either input tokens/s I
  or total tokens/s T over the same span: mean output = O / R tokens, mean prompt = I / R or
  (T − O) / R tokens (each request's tokens counted once, so rates over one span divide). A mean
  prompt the source states outright (``mean_input_len``, with where) may stand in for I or T.

``spread`` (0 ≤ s < 1, optional) draws each length uniformly in [(1 − s)·L, (1 + s)·L] around the
means, where the source says how widely they vary. Every derivation is kept in ``how``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class LengthsError(ValueError):
    """A row's ``replay.lengths`` object does not follow one of the two rules."""


@dataclass(frozen=True)
class Lengths:
    """Mean prompt and output tokens per request, and the requests' own lengths where listed."""

    mean_input: float
    mean_output: float
    spread: float = 0.0
    input_lens: tuple[int, ...] | None = None  # (K,), the per-request rule
    output_lens: tuple[int, ...] | None = None
    how: str = ""

    @property
    def input_len(self) -> int:
        return max(1, round(self.mean_input))

    @property
    def output_len(self) -> int:
        return max(1, round(self.mean_output))


def _positive(doc: dict[str, Any], key: str, rid: str) -> float | None:
    v = doc.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v < 1e9:
        raise LengthsError(f"row {rid!r}: replay.lengths.{key} must be a positive number, got {v!r}")
    return float(v)


def _lens(doc: dict[str, Any], key: str, rid: str) -> tuple[int, ...]:
    v = doc.get(key)
    if (
        not isinstance(v, list)
        or not v
        or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in v)
    ):
        raise LengthsError(f"row {rid!r}: replay.lengths.{key} must be a list of whole numbers ≥ 1")
    return tuple(v)


def _per_request(doc: dict[str, Any], rid: str) -> tuple[float, float, tuple[int, ...], tuple[int, ...]]:
    ins, outs = _lens(doc, "input_lens", rid), _lens(doc, "output_lens", rid)
    if len(ins) != len(outs):
        raise LengthsError(f"row {rid!r}: input_lens and output_lens list different numbers of requests")
    return sum(ins) / len(ins), sum(outs) / len(outs), ins, outs


def _token_rates(doc: dict[str, Any], rid: str) -> tuple[float, float]:
    R, O = _positive(doc, "requests_per_s", rid), _positive(doc, "output_tokens_per_s", rid)
    I, T = _positive(doc, "input_tokens_per_s", rid), _positive(doc, "total_tokens_per_s", rid)
    stated = _positive(doc, "mean_input_len", rid)
    if R is None or O is None or (I, T, stated) == (None, None, None):
        raise LengthsError(
            f"row {rid!r}: replay.lengths needs input_lens and output_lens, or requests_per_s and "
            "output_tokens_per_s with input_tokens_per_s, total_tokens_per_s or mean_input_len"
        )
    if T is not None and T <= O:
        raise LengthsError(f"row {rid!r}: total tokens/s {T} is not above output tokens/s {O}")
    mean_in = I / R if I is not None else (T - O) / R if T is not None else stated
    return mean_in, O / R


def parse_lengths(doc: Any, rid: str) -> Lengths | None:
    """A row's ``replay.lengths`` as `Lengths` (None when absent); LengthsError naming the field."""
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise LengthsError(f"row {rid!r}: replay.lengths must be an object")
    spread = doc.get("spread", 0.0)
    if isinstance(spread, bool) or not isinstance(spread, int | float) or not 0 <= spread < 1:
        raise LengthsError(f"row {rid!r}: replay.lengths.spread must be in [0, 1), got {spread!r}")
    how = str(doc.get("how", ""))
    if "input_lens" in doc or "output_lens" in doc:
        if spread:
            raise LengthsError(f"row {rid!r}: listed lengths take no spread")
        mean_in, mean_out, ins, outs = _per_request(doc, rid)
        return Lengths(mean_in, mean_out, 0.0, ins, outs, how)
    mean_in, mean_out = _token_rates(doc, rid)
    return Lengths(mean_in, mean_out, float(spread), how=how)
