"""The standard probe of a model's heads: random tokens repeated twice (TransformerLens's test).

TransformerLens's induction test (``generate_repeated_tokens`` in its tutorials): a BOS token, then
n random token ids, then the same n again. On the second copy a head that reads the token *after*
the current token's earlier occurrence is an induction head (Olsson et al. 2022). Random tokens
carry no meaning, so only the repetition can be used. Every head gets, averaged over the batch:

- induction score: mean P[t, t − n + 1] over the second copy's queries t = n + 1 … 2n
  (``heads.induction_score`` with period n; TransformerLens's tutorial averages the same stripe
  and also its two first-copy entries, which no head can use);
- previous-token score: mean P[t, t − 1] over t ≥ 1 (``heads.previous_token_score``);
- sink score: mean P[t, 0] over t ≥ 1, the weight parked on the BOS position (``heads.sink_share``).

The maps are recomputed by ``attention_maps.recompute_weights`` (attn_core, float64) from the
captured q and k, as on the rest of the page.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_core.heads import induction_score, previous_token_score, sink_share
from attn_core.hf.attention_maps import recompute_weights
from attn_core.hf.capture import capture
from attn_core.hf.token_ids import model_positions

PROBE_TOKENS = 50  # n random tokens per copy, as in TransformerLens's tutorials
PROBE_BATCH = 1  # sequences averaged (each a forward of 2n + 1 tokens; ~5 s for SmolLM2 on 2 cores)
PROBE_SEED = 0
SCORES = ("induction", "previous token", "sink")


@dataclass(frozen=True)
class ProbeScores:
    layers: list[int]  # the decoder layer of each row
    induction: torch.Tensor  # (n_layers, Hq)
    previous: torch.Tensor  # (n_layers, Hq)
    sink: torch.Tensor  # (n_layers, Hq)
    ids: torch.Tensor  # (batch, 2n + 1): the probe's token ids
    period: int  # n

    def by_name(self) -> dict[str, torch.Tensor]:
        return dict(zip(SCORES, (self.induction, self.previous, self.sink), strict=True))

    def rows(self) -> list[dict]:
        """One row per (layer, head): the CSV behind the heatmaps."""
        return [
            {"layer": layer, "head": h} | {name: float(s[i, h]) for name, s in self.by_name().items()}
            for i, layer in enumerate(self.layers)
            for h in range(self.induction.shape[1])
        ]

    def top(self, score: str, k: int = 3) -> list[tuple[str, float]]:
        """The k heads with the highest ``score``, named L<layer>H<head>, best first."""
        s = self.by_name()[score]
        best = s.flatten().argsort(descending=True)[:k].tolist()
        H = s.shape[1]
        return [(f"L{self.layers[i // H]}H{i % H}", float(s.flatten()[i])) for i in best]


def probe_ids(
    vocab_size: int, bos: int | None, n: int = PROBE_TOKENS, batch: int = PROBE_BATCH
) -> torch.Tensor:
    """(batch, 2n + 1) [BOS, r₁…r_n, r₁…r_n] with r uniform over the vocabulary (seeded); without
    a BOS id the first random token takes its place (2n tokens, still period n after it)."""
    g = torch.Generator().manual_seed(PROBE_SEED)
    r = torch.randint(0, vocab_size, (batch, n), generator=g)
    first = torch.full((batch, 1), bos if bos is not None else 0, dtype=torch.long)
    seq = torch.cat([first, r, r], 1)
    return seq if bos is not None else seq[:, 1:]


def probe(
    model: torch.nn.Module, bos: int | None, n: int = PROBE_TOKENS, batch: int = PROBE_BATCH
) -> ProbeScores:
    """Every attention layer's head scores on the probe, averaged over ``batch`` sequences; n is
    cut to fit the model's positions (2n + 1 ≤ positions)."""
    vocab = model.config.vocab_size
    if bos is not None and not 0 <= bos < vocab:
        bos = None
    positions = model_positions(model.config)
    if positions is not None:  # a model with few positions gets a shorter probe
        n = min(n, (positions - 1) // 2)
    if n < 2:
        raise ValueError(f"the model's {positions} positions leave no room for a repeated sequence")
    ids = probe_ids(vocab, bos, n, batch)
    ind, prev, sink, layers = [], [], [], []
    for seq in ids:
        records, _ = capture(model, seq[None])
        layers = [c.layer for c in records]
        P = torch.stack([recompute_weights(c) for c in records])  # (n_layers, Hq, T, T)
        ind.append(induction_score(P, n) if bos is not None else _induction_no_bos(P, n))
        prev.append(previous_token_score(P))
        sink.append(sink_share(P))
    mean = lambda xs: torch.stack(xs).mean(0)  # noqa: E731 - over the batch
    return ProbeScores(layers, mean(ind), mean(prev), mean(sink), ids, n)


def _induction_no_bos(P: torch.Tensor, n: int) -> torch.Tensor:
    """Without BOS the copies start at 0 and n: mean P[t, t − n + 1] over t = n … 2n − 1 (the last
    query has no next token to read in the first copy only when n = 1, excluded by n ≥ 2)."""
    return P.diagonal(offset=-(n - 1), dim1=-2, dim2=-1)[..., 1:].mean(-1)
