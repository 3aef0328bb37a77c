"""Which layer is which, counted without visiting every layer.

A config names its special layers by a rule ("every 6th layer is global", "MoE from layer 3 on",
"MoE on every 2nd layer except those listed") or by a list. A rule is an arithmetic progression of
layer indices; a list is no longer than the config text that holds it. Counting by rule costs the
same at 60 layers and at 16 million, so no config can make the cost model slow by declaring more
layers than it lists: every count here takes time in proportion to the lists, never to L.

Layers are numbered from 0. ``kind_counts`` and ``census`` are what the cost formulas sum over:
a model's FLOPs, cache and parameters are Σ over (layer kind, MoE or dense) groups of
count × the per-layer formula. A kind is an attention pattern (full, sliding, chunked), a
linear-attention or state-space mixer (gdn, kda, mamba, mamba2) or, in Nemotron-H's pattern, a
feed-forward-only block (mlp, moe).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Every:
    """Layers i ≥ ``start`` with i ≡ ``residue`` (mod ``period``): "every period-th layer"."""

    period: int
    residue: int = 0
    start: int = 0

    def __post_init__(self) -> None:
        if self.period < 1 or not 0 <= self.residue < self.period or self.start < 0:
            raise ValueError(f"not a layer progression: {self}")

    def __contains__(self, i: int) -> bool:
        return i >= self.start and i % self.period == self.residue

    def first(self) -> int:
        """The smallest member."""
        return self.start + (self.residue - self.start) % self.period

    def count(self, n_layers: int) -> int:
        """Members below ``n_layers``, in O(1)."""
        f = self.first()
        return 0 if f >= n_layers else (n_layers - 1 - f) // self.period + 1

    def __and__(self, other: Every) -> Every | None:
        """Layers in both, by the Chinese remainder theorem (None when no layer is in both)."""
        p, q = self.period, other.period
        g = math.gcd(p, q)
        if (other.residue - self.residue) % g:
            return None
        lcm = p // g * q
        t = (other.residue - self.residue) // g * pow(p // g, -1, q // g) % (q // g)
        return Every(lcm, (self.residue + p * t) % lcm, max(self.start, other.start))


@dataclass(frozen=True)
class LayerSet:
    """The layers of ``rule`` (none if None), plus ``added``, minus ``removed``.

    Membership is O(1); counts and overlaps cost O(|added| + |removed|), whatever L is."""

    rule: Every | None = None
    added: frozenset[int] = field(default_factory=frozenset)
    removed: frozenset[int] = field(default_factory=frozenset)

    @classmethod
    def listed(cls, layers: Iterable[int]) -> LayerSet:
        return cls(added=frozenset(layers))

    def __contains__(self, i: int) -> bool:
        if i in self.removed:
            return False
        return i in self.added or (self.rule is not None and i in self.rule)

    def _in_rule(self, i: int) -> bool:
        return self.rule is not None and i in self.rule

    def exceptions(self) -> frozenset[int]:
        return self.added | self.removed

    def count(self, n_layers: int) -> int:
        """|set ∩ [0, L)|: the rule's count, corrected at each listed exception."""
        total = self.rule.count(n_layers) if self.rule is not None else 0
        for i in self.exceptions():
            if i < n_layers:
                total += (i in self) - self._in_rule(i)
        return total

    def overlap(self, other: LayerSet, n_layers: int) -> int:
        """|self ∩ other ∩ [0, L)|: the rules' intersection, corrected at every exception of either."""
        both = None if self.rule is None or other.rule is None else self.rule & other.rule
        total = both.count(n_layers) if both is not None else 0
        for i in self.exceptions() | other.exceptions():
            if i < n_layers:
                total += (i in self and i in other) - (self._in_rule(i) and other._in_rule(i))
        return total


ALL = LayerSet(Every(1))  # every layer
NONE = LayerSet()  # no layer


@dataclass(frozen=True)
class LayerKinds:
    """Each layer's kind: ``listed`` (one per layer, from a config's list) or, by rule,
    ``marked`` on the layers of ``marks`` and ``base`` everywhere else."""

    n_layers: int
    base: str = "full"
    marked: str = "full"
    marks: LayerSet = NONE
    listed: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.listed is not None and len(self.listed) != self.n_layers:
            raise ValueError(f"{len(self.listed)} layer kinds listed for {self.n_layers} layers")

    @classmethod
    def uniform(cls, n_layers: int, kind: str) -> LayerKinds:
        return cls(n_layers, base=kind, marked=kind)

    def __getitem__(self, i: int) -> str:
        if not 0 <= i < self.n_layers:
            raise IndexError(f"layer {i} of {self.n_layers}")
        if self.listed is not None:
            return self.listed[i]
        return self.marked if i in self.marks else self.base

    def counts(self) -> Counter[str]:
        """Layers per kind."""
        if self.listed is not None:
            return Counter(self.listed)
        n_marked = self.marks.count(self.n_layers)
        out = Counter({self.base: self.n_layers - n_marked})
        out[self.marked] += n_marked
        return +out

    def counts_from(self, start: int) -> Counter[str]:
        """Layers per kind among layers ``start`` … L − 1 (Gemma 4's KV-sharing tail)."""
        start = max(0, min(start, self.n_layers))
        if self.listed is not None:
            return Counter(self.listed[start:])
        tail = LayerSet(Every(1, 0, start))
        n_marked = self.marks.overlap(tail, self.n_layers)
        out = Counter({self.base: self.n_layers - start - n_marked})
        out[self.marked] += n_marked
        return +out

    def census(self, moe: LayerSet) -> Counter[tuple[str, bool]]:
        """Layers per (kind, is an MoE layer) group: what the whole-model sums run over."""
        L = self.n_layers
        if self.listed is not None:  # as long as the config's own list
            return Counter((kind, i in moe) for i, kind in enumerate(self.listed))
        n_moe, n_marked = moe.count(L), self.marks.count(L)
        both = self.marks.overlap(moe, L)
        out: Counter[tuple[str, bool]] = Counter()
        out[(self.marked, True)] += both
        out[(self.marked, False)] += n_marked - both
        out[(self.base, True)] += n_moe - both
        out[(self.base, False)] += L - n_marked - n_moe + both
        return +out

    def each(self, limit: int) -> tuple[str, ...] | None:
        """Every layer's kind in order, or None when there are more than ``limit`` layers (a
        per-layer strip or table then shows the counts instead)."""
        if self.n_layers > limit:
            return None
        return self.listed or tuple(self[i] for i in range(self.n_layers))
