"""What a causal mask guarantees, measured: change the future, fully masked rows, cached decoding.

Card 6: with M_ij = -inf for j > i, e^{-inf} = 0 leaves blocked keys out of the numerator *and*
the normalizer, so o_i = f(x_1, …, x_i). The experiments here test that claim instead of
trusting it, for the right mask and for each shape-compatible slip (`attn_core.slips`).
Mask convention: bool, True = may attend. Shapes (..., T, d) with self-attention L = S = T unless
stated; the leading axes (batch, heads) ride along.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from attn_core.attention import attention, default_scale, stable_softmax
from attn_core.conventions import identity_mha
from attn_core.dtypes import DTYPES
from attn_core.masks import causal_mask
from attn_core.oracle import ROUNDING_TOL, max_abs_diff
from attn_core.slips import forward as slips

# ---------------------------------------------------------------------------------------------
# Change the future / change the past
# ---------------------------------------------------------------------------------------------

CORRECT = "mask scores before softmax (−∞)"
METHODS = (
    CORRECT,
    "zero weights after softmax",
    "zero after softmax, then renormalize",
    "multiply scores by the 0/1 mask",
    "no mask",
)


def _forward(method: str, q, k, v, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(weights (..., T, T), output (..., T, d_v)) of one masking method."""
    if method == CORRECT:
        r = attention(q, k, v, allowed)
        return r.weights, r.output
    if method == "zero weights after softmax":
        r = slips.zero_after_softmax(q, k, v, allowed)
    elif method == "zero after softmax, then renormalize":
        r = slips.zero_after_softmax(q, k, v, allowed, renormalize=True)
    elif method == "multiply scores by the 0/1 mask":
        r = slips.multiply_by_mask(q, k, v, allowed)
    elif method == "no mask":
        r = attention(q, k, v)
    else:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    return r.weights, r.output


@dataclass(frozen=True)
class MethodLeak:
    """How one masking method's outputs moved when some positions were changed."""

    method: str
    row_change: torch.Tensor  # (T,) ‖o_i' − o_i‖∞, max over leading axes too
    row_sums: torch.Tensor  # (T,) Σ_j p_ij before the change, max |·| deviation over leading axes
    must_not_move: tuple[int, ...]  # rows that cannot see any changed position under a causal mask
    max_leak: float  # largest change among those rows: exactly 0 for a correct mask
    leaking_rows: tuple[int, ...]  # rows in must_not_move whose output moved at all
    min_visible_change: float  # smallest change among rows that can see a changed token (> 0: the test sees)

    @property
    def worst_row_sum(self) -> float:
        """The row sum Σ_j p_ij furthest from 1 (1 for a correct softmax, < 1 after zeroing)."""
        return float(self.row_sums[(self.row_sums - 1).abs().argmax()])

    @property
    def verdict(self) -> str:
        """'no leak' (exactly 0), 'rounding only' (≤ ROUNDING_TOL) or 'leaks'."""
        if self.max_leak == 0:
            return "no leak: exactly 0"
        if self.max_leak <= ROUNDING_TOL:
            return "rounding only"
        return "leaks"


@dataclass(frozen=True)
class PerturbationReport:
    kind: str  # "future" or "past"
    t: int  # future: positions > t changed; past: positions ≤ t changed (0-based)
    changed: tuple[int, ...]  # the positions whose q, k and v were redrawn
    methods: tuple[MethodLeak, ...]

    def method(self, name: str) -> MethodLeak:
        return next(m for m in self.methods if m.method == name)


def perturb_positions(
    x: torch.Tensor, positions: Sequence[int], *, magnitude: float = 1.0, seed: int = 0
) -> torch.Tensor:
    """Copy of x (..., T, d) with rows ``positions`` moved by magnitude · N(0, 1) (seeded)."""
    g = torch.Generator().manual_seed(int(seed))
    x2 = x.clone()
    idx = torch.as_tensor(list(positions), dtype=torch.long)
    noise = torch.randn((*x.shape[:-2], len(idx), x.shape[-1]), generator=g, dtype=x.dtype)
    x2[..., idx, :] += magnitude * noise
    return x2


def perturbed_inputs(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, changed: Sequence[int], *, magnitude: float, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The experiment's changed tokens: rows ``changed`` of q, k and v each moved by independent noise."""
    q2, k2, v2 = (
        perturb_positions(x, changed, magnitude=magnitude, seed=seed + n) for n, x in enumerate((q, k, v))
    )
    return q2, k2, v2


def perturbation_experiment(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    t: int,
    *,
    kind: str = "future",
    magnitude: float = 3.0,
    seed: int = 1,
    methods: Sequence[str] = METHODS,
) -> PerturbationReport:
    """Change the tokens after t (``kind="future"``) or up to t (``"past"``, the control that shows
    the test can see a change) and report, per method and query row, ‖o_i' − o_i‖∞.

    q, k (..., T, d_k), v (..., T, d_v); a token is its (q, k, v) row, so changing token j redraws
    all three rows. A causal mask (True = may attend, j ≤ i) allows row i to depend on token j only
    when j ≤ i, so rows before the first changed position must not move — exactly, not to a
    tolerance: their arithmetic never touches a changed number (card 6, step 3)."""
    T = q.shape[-2]
    if k.shape[-2] != T or v.shape[-2] != T:
        raise ValueError("the change-the-future experiment is self-attention: q, k, v need the same length")
    if kind == "future":
        if not 0 <= t < T - 1:
            raise ValueError(f"t must lie in 0…{T - 2} so that some future position exists (T = {T})")
        changed = tuple(range(t + 1, T))
    elif kind == "past":
        if not 0 <= t < T:
            raise ValueError(f"t must lie in 0…{T - 1} (T = {T})")
        changed = tuple(range(t + 1))
    else:
        raise ValueError(f"kind must be 'future' or 'past', not {kind!r}")
    if not (math.isfinite(magnitude) and magnitude > 0):
        raise ValueError(f"the perturbation size must be a positive number, got {magnitude}")
    allowed = causal_mask(T, T)  # (T, T), True = j ≤ i
    q2, k2, v2 = perturbed_inputs(q, k, v, changed, magnitude=magnitude, seed=seed)
    must_not_move = tuple(range(changed[0]))
    reports = []
    for method in methods:
        weights, out = _forward(method, q, k, v, allowed)
        _, out2 = _forward(method, q2, k2, v2, allowed)
        change = (out2 - out).abs().amax(-1).reshape(-1, T).amax(0)  # (T,)
        sums = weights.sum(-1).reshape(-1, T)  # (leading, T)
        worst = sums.gather(0, (sums - 1).abs().argmax(0, keepdim=True))[0]  # (T,) furthest from 1
        guarded = change[list(must_not_move)] if must_not_move else change[:0]
        visible = change[changed[0] :]  # rows allowed to see the first changed position
        leaking = tuple(i for i in must_not_move if float(change[i]) != 0.0)
        reports.append(
            MethodLeak(
                method=method,
                row_change=change,
                row_sums=worst,
                must_not_move=must_not_move,
                max_leak=float(guarded.max()) if guarded.numel() else 0.0,
                leaking_rows=leaking,
                min_visible_change=float(visible.min()),
            )
        )
    return PerturbationReport(kind=kind, t=t, changed=changed, methods=tuple(reports))


# ---------------------------------------------------------------------------------------------
# Fully masked rows across fills and dtypes
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Cached decoding
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CachedBlockReport:
    """P cached keys + L new queries: which mask alignment reproduces the full causal pass."""

    P: int
    L: int
    bottom_right: torch.Tensor  # (L, P + L) allowed: query i (position P + i) sees j ≤ P + i
    top_left: torch.Tensor  # (L, P + L) allowed: query i sees j ≤ i — drops valid cached keys
    discarded_pairs: int  # allowed pairs bottom-right has and top-left lacks (= P · L)
    full_pass_rows: torch.Tensor  # (..., L, d_v) rows P … P+L−1 of the full T×T causal pass
    diff_bottom_right: float  # ours, bottom-right vs full pass
    diff_top_left: float  # ours, top-left vs full pass (large: the bug)
    diff_sdpa_lower_right: float  # SDPA with torch's causal_lower_right vs full pass
    diff_sdpa_is_causal_vs_top_left: float  # SDPA is_causal=True vs our top-left (how torch aligns)
    diff_sdpa_is_causal_vs_full: float


def cached_block(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, P: int) -> CachedBlockReport:
    """Treat tokens 0 … P−1 as a KV cache and tokens P … T−1 as new queries (lesson, "Masking, order
    and cached decoding"): q, k (..., T, d_k), v (..., T, d_v). Query row i has absolute position
    P + i, so key j is allowed when j ≤ P + i (bottom-right). Compares both alignments and SDPA's
    two spellings with the last L rows of the full causal pass."""
    T = q.shape[-2]
    if not 0 <= P < T:
        raise ValueError(f"the cached prefix P must lie in 0…{T - 1} so that at least one query is new")
    L = T - P
    full = attention(q, k, v, causal_mask(T, T)).output[..., P:, :]  # (..., L, d_v)
    q_new = q[..., P:, :]  # (..., L, d_k)
    br, tl = causal_mask(L, T, "bottom_right"), causal_mask(L, T, "top_left")
    out_br = attention(q_new, k, v, br).output
    out_tl = attention(q_new, k, v, tl).output
    # Imported here: torch.nn.attention.bias pulls in torch._dynamo, ~1.2 s on every app start.
    from torch.nn.attention.bias import causal_lower_right

    sdpa_lr = F.scaled_dot_product_attention(q_new, k, v, attn_mask=causal_lower_right(L, T), dropout_p=0.0)
    sdpa_causal = F.scaled_dot_product_attention(q_new, k, v, is_causal=True, dropout_p=0.0)
    return CachedBlockReport(
        P=P,
        L=L,
        bottom_right=br,
        top_left=tl,
        discarded_pairs=int((br & ~tl).sum()),
        full_pass_rows=full,
        diff_bottom_right=max_abs_diff(out_br, full),
        diff_top_left=max_abs_diff(out_tl, full),
        diff_sdpa_lower_right=max_abs_diff(sdpa_lr, full),
        diff_sdpa_is_causal_vs_top_left=max_abs_diff(sdpa_causal, out_tl),
        diff_sdpa_is_causal_vs_full=max_abs_diff(sdpa_causal, full),
    )


@dataclass(frozen=True)
class DecodeReport:
    """Token-by-token decoding with a growing KV cache vs one full causal pass."""

    prefill: int  # tokens processed as one causal block before decoding starts
    outputs: torch.Tensor  # (..., T, d_v) from prefill + one step per later token
    full_pass: torch.Tensor  # (..., T, d_v) attention(q, k, v, causal)
    cache_lengths: tuple[int, ...]  # keys in the cache when each decode step ran
    max_abs_diff: float
    bitwise_equal: bool


def decode_with_kv_cache(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, prefill: int = 1) -> DecodeReport:
    """Prefill ``prefill`` tokens with a causal block, then decode one token at a time: append its
    k_t, v_t to the cache and attend q_t to the cache with no mask at all (card 6, step 4). Queries
    are never cached. q, k (..., T, d_k), v (..., T, d_v)."""
    T = q.shape[-2]
    if not 1 <= prefill <= T:
        raise ValueError(f"prefill must lie in 1…{T}")
    K_cache, V_cache = k[..., :prefill, :], v[..., :prefill, :]  # (..., prefill, d)
    outs = [attention(q[..., :prefill, :], K_cache, V_cache, causal_mask(prefill, prefill)).output]
    lengths = []
    for t in range(prefill, T):
        K_cache = torch.cat([K_cache, k[..., t : t + 1, :]], dim=-2)  # (..., t + 1, d_k)
        V_cache = torch.cat([V_cache, v[..., t : t + 1, :]], dim=-2)  # (..., t + 1, d_v)
        lengths.append(K_cache.shape[-2])
        outs.append(attention(q[..., t : t + 1, :], K_cache, V_cache).output)  # (..., 1, d_v)
    outputs = torch.cat(outs, dim=-2)  # (..., T, d_v)
    full = attention(q, k, v, causal_mask(T, T)).output
    return DecodeReport(
        prefill=prefill,
        outputs=outputs,
        full_pass=full,
        cache_lengths=tuple(lengths),
        max_abs_diff=max_abs_diff(outputs, full),
        bitwise_equal=bool(torch.equal(outputs, full)),
    )


# ---------------------------------------------------------------------------------------------
# Counting
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairCount:
    T: int
    allowed_pairs: int  # T (T + 1) / 2
    total_pairs: int  # T²
    fraction: float  # (T + 1) / 2T


def causal_pair_count(T: int) -> PairCount:
    """A causal T×T mask allows T(T + 1)/2 of the T² pairs: a fraction (T + 1)/2T (card 6, step 7)."""
    if T < 1:
        raise ValueError(f"T must be at least 1, got {T}")
    return PairCount(T, T * (T + 1) // 2, T * T, (T + 1) / (2 * T))


# ---------------------------------------------------------------------------------------------
# The off-by-one triu mask, and the -1e9 fill that hides it
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TriuSlipReport:
    """Card 6, step 5: triu(ones, 0) also blocks the diagonal, so query 0 sees nothing."""

    wrong_allowed: torch.Tensor  # (T, T) ~triu(ones, 0): j < i
    right_allowed: torch.Tensor  # (T, T) ~triu(ones, 1): j ≤ i
    fully_masked_rows: tuple[int, ...]
    row0_inf_fill: tuple[float, ...]  # hand softmax with -inf: 0/0 = NaN
    row0_finite_fill: tuple[float, ...]  # with -1e9: uniform 1/T — the bug hidden
    row0_right: tuple[float, ...]  # the right mask: (1, 0, …, 0)
    output_gap_finite_fill: float  # max |O(triu 0, -1e9) − O(right)| over all rows


def triu_slip(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> TriuSlipReport:
    """q, k (..., T, d_k), v (..., T, d_v); row 0 of the first leading index is reported."""
    T = q.shape[-2]
    wrong = slips.triu_diagonal_mask(T)
    right = causal_mask(T, T)
    inf_fill = slips.finite_fill(q, k, v, wrong, fill=-math.inf)
    finite = slips.finite_fill(q, k, v, wrong, fill=-1e9)
    good = attention(q, k, v, right)

    def row0(w: torch.Tensor) -> tuple[float, ...]:
        return tuple(float(x) for x in w.reshape(-1, T, T)[0, 0])

    return TriuSlipReport(
        wrong_allowed=wrong,
        right_allowed=right,
        fully_masked_rows=tuple(int(i) for i in (~wrong.any(-1)).nonzero().flatten()),
        row0_inf_fill=row0(inf_fill.weights),
        row0_finite_fill=row0(finite.weights),
        row0_right=row0(good.weights),
        output_gap_finite_fill=max_abs_diff(finite.output, good.output),
    )


# ---------------------------------------------------------------------------------------------
# Masking the weights instead of the scores, side by side
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ZeroingSlipReport:
    """Card 6, step 6: the right weights, the zeroed-after-softmax weights, and the leak."""

    right_weights: torch.Tensor  # (T, T) softmax of the masked scores; rows sum to 1
    zeroed_weights: torch.Tensor  # (T, T) softmax over all keys, future entries set to 0
    zeroed_row_sums: torch.Tensor  # (T,) < 1 except the last row
    leak: MethodLeak  # change-the-future result for the zeroed version at t


def zeroing_slip(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, t: int) -> ZeroingSlipReport:
    """q, k (..., T, d_k), v (..., T, d_v); weights of the first leading index are returned."""
    T = q.shape[-2]
    allowed = causal_mask(T, T)
    right = attention(q, k, v, allowed).weights.reshape(-1, T, T)[0]
    zeroed = slips.zero_after_softmax(q, k, v, allowed).weights.reshape(-1, T, T)[0]
    leak = perturbation_experiment(q, k, v, t, methods=("zero weights after softmax",)).methods[0]
    return ZeroingSlipReport(right, zeroed, zeroed.sum(-1), leak)
