"""The Masks & leakage page: the mask gallery (`attn_core.views.mask_gallery`, re-exported here)
and the page's other sections — change the future, fully masked rows, cached decoding, conventions,
permutations and the masking slips — each computed in one call (cards 6 and 7).

Every mask is boolean (L, S) with **True = may attend**.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import StrEnum

import torch

from attn_core.experiments import decoding, equivariance
from attn_core.experiments.conventions import ConventionsReport, compare_conventions, from_allowed
from attn_core.experiments.decoding import cached_block
from attn_core.experiments.equivariance import (
    PermutationReport,
    embed_words,
    parse_permutation,
    permutation_test,
)
from attn_core.experiments.fully_masked import fully_masked_table, measure_fully_masked_apis
from attn_core.experiments.mask_slips import TriuSlipReport, triu_slip, zeroing_slip
from attn_core.experiments.perturbation import PerturbationReport, perturbation_experiment
from attn_core.limits import LIMITS
from attn_core.masks import MaskKind, build_mask
from attn_core.oracle import AGREE_TOL, MATCH_TOL, ROUNDING_TOL
from attn_core.slips.masking import SLIPS
from attn_core.views.inputs import QKV, random_qkv
from attn_core.views.mask_gallery import PAINTED  # the page reads the gallery's names through here

__all__ = [  # what the page and its charts (lab_ui/mask_charts.py) read
    "MATCH_TOL",
    "MAX_D",
    "MAX_T",
    "PAINTED",
    "PATTERNS",
    "PATTERN_IDS",
    "ROUNDING_TOL",
    "SLIPS",
    "SLIP_ALIASES",
    "TORCH_VERSION",
    "TOY_NOTE",
    "Change",
    "FutureView",
    "MasksView",
    "Section",
    "SlipView",
    "note",
    "view",
]

# ---------------------------------------------------------------------- the page's other sections
# Each returns what one section of the Masks & leakage page draws: tables as {column: values}.


# The Conventions section's masks (a link carries `causal` or `window`).
PATTERNS, PATTERN_IDS = ("causal", "sliding window (3)"), {"sliding window (3)": "window"}


class Change(StrEnum):
    """Change the future: which tokens are changed (the values are the labels shown; the URL keeps
    the member's name, ``future`` or ``past``)."""

    FUTURE = "tokens after t"
    PAST = "tokens up to t (control)"


@dataclass(frozen=True)
class FutureView:
    report: PerturbationReport
    table: dict[str, list]
    leaks: list[tuple[int, float, str]]  # (row, change, method) of every row that moved and must not have


def change_the_future(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, t: int, kind: str, magnitude: float, seed: int
) -> FutureView:
    """Card 6's test: change the tokens after t (or up to t, the control) and see which rows move."""
    report = perturbation_experiment(q, k, v, t, kind=kind, magnitude=magnitude, seed=seed)
    future = kind == "future"
    methods = report.methods
    table = {
        "method": [m.method for m in methods],
        "verdict": [m.verdict if future else "—" for m in methods],
        f"max change, rows 0…{t}": [m.max_leak if future else "—" for m in methods],
        "leaking rows": [", ".join(map(str, m.leaking_rows)) or "none" for m in methods],
        "smallest change of a row that may see it": [m.min_visible_change for m in methods],
        "row sum furthest from 1": [m.worst_row_sum for m in methods],
    }
    leaks = [
        (i, float(m.row_change[i]), m.method)
        for m in methods
        if future and m.verdict == "leaks"
        for i in m.leaking_rows
    ]
    return FutureView(report, table, leaks)


def fully_masked_view(S: int, spread: float, seed: int) -> dict[str, list]:
    """Every (dtype, fill, how) cell of card 6, step 5, as a table."""
    cases = fully_masked_table(S, spread, seed)
    return {
        "dtype": [c.dtype for c in cases],
        "fill": [c.fill for c in cases],
        "applied by": [c.how for c in cases],
        "fill stored as": [c.fill_in_dtype for c in cases],
        "fully masked row becomes": [c.empty_row for c in cases],
        "its weights": [", ".join(f"{p:.4g}" for p in c.empty_row_weights) for c in cases],
        "partial row: Σ p": [c.partial_row_sum for c in cases],
        "partial row: largest blocked weight": [c.partial_blocked_weight for c in cases],
    }


@functools.cache
def api_view() -> dict[str, list]:
    """What this installation's PyTorch APIs return for a fully masked row, measured once per process."""
    rows = measure_fully_masked_apis()
    return {
        "API": [r.api for r in rows],
        "dtype": [r.dtype for r in rows],
        "backend": [r.backend for r in rows],
        "returned for the fully masked row": [r.result for r in rows],
    }


@dataclass(frozen=True)
class ConventionsView:
    report: ConventionsReport
    worst_correct: float  # largest |Δ| among the four correct spellings
    tol: float
    table: dict[str, list]
    masks: dict[str, torch.Tensor]  # the one mask in each convention: allowed, blocked, additive


def conventions_view(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, pattern: str, pad: int
) -> ConventionsView:
    """One mask (causal, or a 3-key sliding window) plus ``pad`` padding keys, through every API's spelling."""
    T = q.shape[-2]
    kind = MaskKind.CAUSAL_TOP_LEFT if pattern == "causal" else MaskKind.SLIDING_WINDOW
    attn_allowed = build_mask(kind, T, T, window=3)
    valid = build_mask(MaskKind.PADDING, 1, T, valid_keys=T - pad)[0]
    r = compare_conventions(q, k, v, attn_allowed, valid)
    table = {
        "API": [row.api for row in r.rows],
        "argument": [row.argument for row in r.rows],
        "True / value means": [row.meaning_of_true for row in r.rows],
        "max |Δ| vs attn_core": [row.max_abs_diff for row in r.rows],
        "same output": ["✓" if row.agrees else "✗" for row in r.rows],
    }
    masks = {c: from_allowed(r.allowed, c) for c in ("allowed", "blocked", "additive")}
    worst = max(row.max_abs_diff for row in r.rows if not row.is_slip)
    return ConventionsView(r, worst, AGREE_TOL, table, masks)


@dataclass(frozen=True)
class PermutationView:
    report: PermutationReport
    permuted_words: list[str]
    equivariant: bool  # Attn(ΠX) = Π Attn(X) to float64 rounding
    broken_by: str  # what breaks it, in words ("the causal mask and positions"), or ""


def permutations_view(
    words: list[str], perm_text: str, causal: bool, positions: bool, seed: int
) -> PermutationView:
    """Card 7 on the user's words: permute, attend, compare with the permuted outputs."""
    if not 1 <= len(words) <= LIMITS.permutation_tokens:
        raise ValueError(f"Type 1…{LIMITS.permutation_tokens} words separated by spaces.")
    perm = parse_permutation(perm_text, len(words))
    r = permutation_test(embed_words(words, 8, seed), perm, causal=causal, positions=positions, seed=seed)
    broken = " and ".join(x for x, on in (("the causal mask", causal), ("positions", positions)) if on)
    return PermutationView(r, [words[p] for p in perm], r.equivariance_error <= MATCH_TOL, broken)


def triu_table(r: TriuSlipReport) -> dict[str, list]:
    """Row 0 of the off-by-one mask under each fill, beside the right mask."""
    T = len(r.row0_right)
    return {
        "key": [f"k{j}" for j in range(T)],
        "triu 0, fill −∞": list(r.row0_inf_fill),
        "triu 0, fill −1e9": list(r.row0_finite_fill),
        "right mask": list(r.row0_right),
    }


TOY_NOTE = (
    "On the spec's toy sentence (*the river bank was steep*), card 6 reports that changing *steep* moves bank's "
    "unmasked output by 0.217 and its zeroed-after-softmax output by 0.162, and that bank's zeroed weights sum to "
    "0.583. Those numbers depend on the vectors of *was* and *steep*, which the spec does not give, so this page "
    "runs the same experiment on the seeded tokens in the sidebar instead of pretending to reproduce them."
)


@dataclass(frozen=True)
class Panel:
    """One side of a right-vs-slip comparison: a weight matrix or a mask, and its title."""

    values: torch.Tensor  # (L, S)
    title: str
    is_mask: bool
    offset: int = 0  # the first query's absolute position


@dataclass(frozen=True)
class SlipView:
    right: Panel
    wrong: Panel
    text: str  # what the slip does to these tokens, with the measured numbers (markdown)
    table: dict[str, list] | None = None


def _zeroing_view(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> SlipView:
    T = q.shape[-2]
    t = min(2, T - 2)
    r = zeroing_slip(q, k, v, t)
    sums = ", ".join(f"{s:.3f}" for s in r.zeroed_row_sums.tolist()[:8]) + (" …" if T > 8 else "")
    text = (
        f"Zeroed rows sum to {sums} instead of 1, and changing tokens after t = {t} moves rows 0…{t} "
        f"by up to **{r.leak.max_leak:.3g}**: the future leaks through the normalizer."
    )
    right = Panel(r.right_weights, "✓ −∞ before the softmax", False)
    return SlipView(right, Panel(r.zeroed_weights, "✗ zeroed after the softmax", False), text)


def _triu_view(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> SlipView:
    T = q.shape[-2]
    r = triu_slip(q, k, v)
    text = (
        f"Row 0 is fully masked. With −∞ it is NaN — loud. With −1e9 it is a uniform 1/T = {1 / T:.4g} "
        "over keys it should never read — quiet, and every output moves (max |Δ| = "
        f"{r.output_gap_finite_fill:.3g} against the right mask)."
    )
    right = Panel(r.right_allowed, "✓ blocked = triu(ones, 1)", True)
    wrong = Panel(r.wrong_allowed, "✗ blocked = triu(ones, 0): the diagonal too", True)
    return SlipView(right, wrong, text, triu_table(r))


def _top_left_view(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> SlipView:
    P = q.shape[-2] // 2
    r = cached_block(q, k, v, P)
    text = (
        f"With P = {P} cached keys the top-left mask drops {r.discarded_pairs} valid (query, key) pairs "
        f"and the outputs differ from the full pass by up to **{r.diff_top_left:.3g}**."
    )
    return SlipView(
        Panel(r.bottom_right, "✓ bottom-right", True, P), Panel(r.top_left, "✗ top-left", True, P), text
    )


# How the page shows each masking slip (attn_core.slips.masking): one builder per id.
_SLIP_VIEWS = {
    "zero_after_softmax": _zeroing_view,
    "triu_diagonal": _triu_view,
    "finite_fill": _triu_view,
    "top_left": _top_left_view,
}
# The masking slips' labels were their ids in links made before the registry: they still open.
SLIP_ALIASES = {slip.label: slip_id for slip_id, slip in SLIPS.items()}


def slip_view(slip: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> SlipView:
    """The masking slip ``slip`` (an id of `SLIPS`) on the page's tokens q, k (1, 1, T, d),
    v (1, 1, T, d), beside the right mask."""
    if slip not in _SLIP_VIEWS:
        raise ValueError(f"unknown slip {slip!r}; choose one of {', '.join(SLIPS)}")
    return _SLIP_VIEWS[slip](q, k, v)


# -- what the page reads ------------------------------------------------------------------------
class Section(StrEnum):
    """The page's sections; the value is the label shown, a link keeps the member's name, lower-cased."""

    GALLERY = "Mask gallery"
    FUTURE = "Change the future"
    FULLY_MASKED = "Fully masked rows"
    DECODING = "Cached decoding"
    CONVENTIONS = "Conventions"
    PERMUTATIONS = "Permutations"
    SLIPS = "Slips"


MAX_T, MAX_D = LIMITS.experiment_tokens, LIMITS.experiment_width  # the sidebar's T and d caps
TORCH_VERSION = torch.__version__
tokens = random_qkv  # the experiments' seeded tokens: q, k, v (1, 1, T, d)
causal_pair_count = decoding.causal_pair_count
decode_with_kv_cache = decoding.decode_with_kv_cache
bos_share = equivariance.bos_share


# The page's longer captions: str.format templates filled with the page's numbers.
NOTES = {
    "future_right": (
        "The right mask leaves rows 0…t unchanged to the last bit (0, not 1e-16): their arithmetic never "
        "touches a changed number. Zeroing after the softmax keeps the future's scores in the normalizer, so "
        "they leak. Renormalizing cancels that normalizer algebraically; what is left is rounding (≤ "
        "{tol:.0e}), after computing and discarding every future exponential."
    ),
    "future_control": (
        "Control: changing token 0 must move every row (all of them may see it). If this showed zeros, the "
        "experiment could not detect anything."
    ),
    "fully_masked": (
        "Row 0 blocks every key; row 1 blocks all but the first two. −∞ turns the empty row into 0/0 = NaN. "
        "A finite fill hides it: every score equals the fill, so the row becomes uniform (1/S = "
        "{uniform:.4g}). In float16 −1e9 cannot even be stored (masked_fill refuses; a cast makes it −∞), "
        "and added to float64 scores it keeps their differences, so the 'masked' row attends as if unmasked. "
        "The safe recipe: fill with the dtype's most negative finite number and zero those rows' outputs."
    ),
    "measured_here": (
        "torch {torch} on CPU. The spec records PyTorch 2.14.1's CPU SDPA returning zeros and "
        "nn.MultiheadAttention with need_weights=True returning NaN, and warns that this has varied by "
        "version and backend — which is why the table is measured on this server."
    ),
    "kv_decoding": (
        "{steps} decode step(s), cache growing {first}→{T} keys; each step computes only the new token's q, "
        "k, v and attends without any mask. Bitwise equal to the full pass: {bitwise}. Keys and values at "
        "positions ≤ t never change when later tokens arrive — the same fact the mask proves."
    ),
    "conventions_slip": (
        "The last table row is the slip: SDPA's mask handed to nn.MultiheadAttention unchanged. It is the "
        "right shape and dtype, so nothing complains — the module blocks exactly the keys you meant to keep."
    ),
    "card7": (
        "Card 7 reverses its toy sentence and measures 1.1 × 10⁻¹⁶ unmasked and up to 0.426 causal; that "
        "second number needs toy vectors the spec does not give."
    ),
}


def note(name: str, **numbers) -> str:
    """One of `NOTES` with its numbers filled in."""
    return NOTES[name].format(**numbers)


@dataclass(frozen=True)
class MasksView:
    """The page's one view call: the sidebar's seeded tokens; each section's part is computed on
    demand from them and that section's own controls (the page caches each part by its inputs)."""

    qkv: QKV  # q, k, v (1, 1, T, d)
    T: int
    seed: int

    def pair_counts(self, n: int) -> tuple[decoding.PairCount, decoding.PairCount]:
        """Causal n × n pair counts, and at n = 4096 for comparison."""
        return causal_pair_count(n), causal_pair_count(4096)

    def future(self, t: int, kind: str, magnitude: float) -> FutureView:
        return change_the_future(self.qkv.q, self.qkv.k, self.qkv.v, t, kind, magnitude, self.seed + 1)

    def fully_masked(self, S: int, spread: float) -> dict[str, list]:
        return fully_masked_view(S, spread, self.seed)

    def apis(self) -> dict[str, list]:
        return api_view()

    def block(self, P: int) -> decoding.CachedBlockReport:
        return cached_block(self.qkv.q, self.qkv.k, self.qkv.v, P)

    def decode(self, prefill: int) -> decoding.DecodeReport:
        return decode_with_kv_cache(self.qkv.q, self.qkv.k, self.qkv.v, prefill)

    def conventions(self, pattern: str, pad: int) -> ConventionsView:
        return conventions_view(self.qkv.q[0, 0], self.qkv.k[0, 0], self.qkv.v[0, 0], pattern, pad)

    def permutations(
        self, words: list[str], perm_text: str, causal: bool, positions: bool
    ) -> PermutationView:
        return permutations_view(words, perm_text, causal, positions, self.seed)

    def bos(self, n: int) -> equivariance.BosShare:
        return bos_share(n)

    def slip(self, slip: str) -> SlipView:
        return slip_view(slip, self.qkv.q, self.qkv.k, self.qkv.v)


def view(T: int, d: int, seed: int) -> MasksView:
    """The sidebar's T tokens of width d (seeded, float64, one head)."""
    return MasksView(tokens(T, T, d, d, 1, 1, seed), T, seed)
