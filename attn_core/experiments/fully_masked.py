"""Fully masked rows: what 0/0 becomes for each fill (−inf, the dtype's min, −1e9), each way of
applying it and each dtype, what the installed PyTorch's own APIs return, and the safe recipe (card 6, step 5)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from attn_core.attention import default_scale, stable_softmax
from attn_core.dtypes import DTYPES
from attn_core.experiments.conventions import identity_mha

FILLS = ("-inf", "finfo(dtype).min", "-1e9")
HOW = ("masked_fill", "additive mask")


def fill_value(fill: str, dtype: torch.dtype) -> float:
    """The number a fill name stands for, before any cast to ``dtype``."""
    if fill == "-inf":
        return -math.inf
    if fill == "finfo(dtype).min":
        return float(torch.finfo(dtype).min)
    if fill == "-1e9":
        return -1e9
    raise ValueError(f"unknown fill {fill!r}; choose one of {FILLS}")


def classify_row(row: torch.Tensor, values: torch.Tensor | None = None) -> str:
    """Name what a weight row (S,) — or, with ``values`` (S, d_v), an output row (d_v,) — is:
    'NaN', 'zeros', 'uniform' (every weight equal / the plain mean of V), 'one-hot' or 'other'."""
    row = row.detach().to(torch.float64)
    if torch.isnan(row).any():
        return "NaN"
    if torch.isinf(row).any():
        return "inf"
    if bool((row == 0).all()):
        return "zeros"
    if values is None:
        if bool((row == row[0]).all()):
            return "uniform"
        return "one-hot" if int((row != 0).sum()) == 1 else "other"
    mean = values.detach().to(torch.float64).mean(-2)
    # A low-precision output of a uniform row is the mean of V to within a few ulps of its dtype.
    tol = 4 * torch.finfo(values.dtype).eps * float(values.abs().max().clamp(min=1))
    return "uniform (mean of V)" if float((row - mean).abs().max()) <= tol else "other"


@dataclass(frozen=True)
class FullyMaskedCase:
    """One (dtype, fill, how) cell: what a row with no allowed key becomes, and what the same fill
    does to a partially masked row next to it."""

    dtype: str
    fill: str
    how: str  # "masked_fill" (replace blocked scores) or "additive mask" (S + M)
    fill_in_dtype: str  # the fill after the cast, e.g. -1e9 in float16 is -inf; or the error
    empty_row: str  # classify_row of the fully masked row's weights, or "error: …"
    empty_row_weights: tuple[float, ...]
    partial_row_sum: float  # Σ_j p_ij of the partially masked row (1 when finite and correct)
    partial_blocked_weight: float  # largest weight the partially masked row puts on a blocked key


def _fill_scores(s: torch.Tensor, allowed: torch.Tensor, value: float, how: str) -> torch.Tensor:
    """Apply a fill the two ways code does it: replace blocked scores in place (masked_fill, which
    refuses a value the dtype cannot hold), or build a float mask M and add it (S + M, where the
    cast of M to the dtype silently rounds: -1e9 becomes -inf in float16)."""
    if how == "masked_fill":
        return s.masked_fill(~allowed, value)
    if how == "additive mask":
        M = torch.zeros(allowed.shape, dtype=torch.float64).masked_fill(~allowed, value).to(s.dtype)
        return s + M
    raise ValueError(f"unknown way to apply a mask {how!r}; choose one of {HOW}")


def fully_masked_case(
    dtype: str, fill: str, how: str, scores: torch.Tensor, allowed: torch.Tensor
) -> FullyMaskedCase:
    """Softmax a (2, S) score block in ``dtype``: row 0 fully masked, row 1 partially masked."""
    dt = DTYPES[dtype]
    value = fill_value(fill, dt)
    s = scores.to(dt)
    try:
        cast = torch.tensor(value, dtype=torch.float64).to(dt)
        fill_in_dtype = f"{float(cast):.6g}"
        filled = _fill_scores(s, allowed, value, how)
    except RuntimeError as exc:  # e.g. masked_fill(-1e9) on float16 refuses to overflow
        msg = f"error: {str(exc).splitlines()[0]}"
        return FullyMaskedCase(dtype, fill, how, msg, msg, (), math.nan, math.nan)
    P = stable_softmax(filled)  # (2, S): e^{s − max} / Σ — the hand softmax
    empty = classify_row(P[0])
    if empty == "other":
        # s + fill keeps the score differences when the fill's ulp is small (float64: ulp(1e9) ≈ 1.2e-7),
        # so the "masked" row is the unmasked softmax to ~1e-7 relative; 1e-6 leaves room.
        unmasked = torch.softmax(scores[0].to(torch.float64), -1)
        if float((P[0].to(torch.float64) - unmasked).abs().max()) <= 1e-6:
            empty = "≈ unmasked softmax"
        elif bool(torch.isneginf(filled[0]).any()):
            # float16: score + (−65504) overflows to −inf once the score is below −16
            empty = "uniform over the keys that did not overflow to −inf"
    return FullyMaskedCase(
        dtype=dtype,
        fill=fill,
        how=how,
        fill_in_dtype=fill_in_dtype,
        empty_row=empty,
        empty_row_weights=tuple(float(p) for p in P[0]),
        partial_row_sum=float(P[1].to(torch.float64).sum()),
        partial_blocked_weight=float(P[1].masked_fill(allowed[1], 0).to(torch.float64).abs().max()),
    )


def example_scores(S: int = 5, spread: float = 1.0, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A (2, S) float64 score block (spread · N(0, 1)) and its mask: row 0 blocks every key, row 1
    blocks the keys after the first two. Used by `fully_masked_table`."""
    if not 2 <= S <= 64:
        raise ValueError(f"S must lie in 2…64, got {S}")
    if not (math.isfinite(spread) and spread > 0):
        raise ValueError(f"the score spread must be a positive number, got {spread}")
    g = torch.Generator().manual_seed(int(seed))
    scores = spread * torch.randn(2, S, generator=g, dtype=torch.float64)
    allowed = torch.zeros(2, S, dtype=torch.bool)
    allowed[1, :2] = True
    return scores, allowed


def fully_masked_table(S: int = 5, spread: float = 1.0, seed: int = 0) -> list[FullyMaskedCase]:
    """Every (dtype, fill, how) combination on the same `example_scores` (card 6, step 5)."""
    scores, allowed = example_scores(S, spread, seed)
    return [
        fully_masked_case(dtype, fill, how, scores, allowed)
        for dtype in DTYPES
        for fill in FILLS
        for how in HOW
    ]


@dataclass(frozen=True)
class ApiMeasurement:
    """What an installed PyTorch API returned for a fully masked row: measured, not assumed."""

    api: str
    dtype: str
    backend: str
    result: str  # classify_row of the output row, or "error: …"
    torch_version: str
    device: str


def _sdpa_backends() -> list[tuple[str, Callable]]:
    return [
        ("default dispatch", contextlib.nullcontext),
        ("MATH", lambda: sdpa_kernel(SDPBackend.MATH)),
        ("FLASH_ATTENTION", lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)),
    ]


def measure_fully_masked_apis(
    dtypes: Sequence[str] = tuple(DTYPES), device: str = "cpu", S: int = 5, d: int = 8, seed: int = 0
) -> list[ApiMeasurement]:
    """Feed torch's own attention APIs a query whose mask row is all False and classify the output.

    The spec records PyTorch 2.14.1's CPU SDPA returning zeros and says this has varied by version
    and backend, so the page shows what *this* installation does. APIs: F.scaled_dot_product_attention
    with a bool mask and with an additive -inf mask (per available backend), nn.MultiheadAttention
    with need_weights=True and False."""
    out: list[ApiMeasurement] = []
    version = torch.__version__
    allowed = torch.ones(2, S, dtype=torch.bool, device=device)
    allowed[0] = False  # row 0 fully masked, row 1 sees everything
    for name in dtypes:
        dt = DTYPES[name]
        g = torch.Generator().manual_seed(seed)
        q, k, v = (torch.randn(1, 1, n, d, generator=g).to(dt).to(device) for n in (2, S, S))
        additive = torch.zeros(2, S, dtype=dt, device=device).masked_fill(~allowed, -math.inf)
        for backend, ctx in _sdpa_backends():
            for label, mask in (("bool mask", allowed), ("additive −∞ mask", additive)):
                api = f"F.scaled_dot_product_attention, {label}"
                try:
                    with ctx():
                        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)
                    result = classify_row(o[0, 0, 0].cpu(), v[0, 0].cpu())
                except RuntimeError as exc:
                    result = f"error: {str(exc).splitlines()[0][:120]}"
                out.append(ApiMeasurement(api, name, backend, result, version, device))
        mha = identity_mha(d, dt).to(device)  # identity projections: a uniform row gives mean(V)
        for need in (True, False):
            api = f"nn.MultiheadAttention (True = blocked), need_weights={need}"
            try:
                with torch.no_grad():
                    o, _ = mha(q[0], k[0], v[0], attn_mask=~allowed, need_weights=need)
                result = classify_row(o[0, 0].cpu(), v[0, 0].cpu())
            except RuntimeError as exc:
                result = f"error: {str(exc).splitlines()[0][:120]}"
            out.append(ApiMeasurement(api, name, "module", result, version, device))
    return out


def safe_masked_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor):
    """Card 6's safe recipe: fill blocked scores with the dtype's most negative finite number, then
    zero the outputs of fully masked rows. Returns (weights (..., L, S), output (..., L, d_v)); a
    fully masked row gives zero weights and a zero output instead of NaN or a uniform average."""
    s = (q @ k.transpose(-2, -1)) * default_scale(q.shape[-1])  # (..., L, S)
    allowed = torch.broadcast_to(allowed.to(torch.bool), s.shape)
    P = stable_softmax(s.masked_fill(~allowed, torch.finfo(s.dtype).min))
    has_key = allowed.any(-1, keepdim=True)  # (..., L, 1)
    P = P * has_key.to(P.dtype)
    return P, P @ v
