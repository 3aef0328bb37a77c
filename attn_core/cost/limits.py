"""The cost model's input caps, shared by the Cost page and the CLI.

Every cost formula is O(1) in the sizes, so these caps guard integer ranges, not time: T up to
2²⁴ tokens (beyond any shipped model's context), batches and GPU counts large enough for any
cluster-scale what-if while products stay exact in float64 (below 2⁵³)."""

from __future__ import annotations

from attn_core.cost.shapes import MAX_INT

MAX_SEQ_LEN = MAX_INT  # 16,777,216 tokens
MAX_BATCH = 65_536
MAX_GPUS = 1_024
