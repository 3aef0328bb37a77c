"""The cost model's input caps, one home for each, shared by the Cost page (through its view) and the CLI.

Every cost formula is O(1) in the sizes, so these caps guard integer ranges, not time: any width,
count or length read from a config and T up to 2²⁴ (beyond any shipped model's context), batches and
GPU counts large enough for any cluster-scale what-if while products stay exact in float64 (below 2⁵³)."""

from __future__ import annotations

MAX_INT = 1 << 24  # 16,777,216: the sanity cap on any width, count or length read from a config
MAX_SEQ_LEN = MAX_INT  # T: 16,777,216 tokens
MAX_BATCH = 65_536
MAX_GPUS = 1_024
MAX_GEN_LEN = 1 << 20  # generated tokens summed step by step: 1,048,576 steps at most
# A pasted config.json's length: the text travels in the page address (co_paste), so a shared link
# stays a link; a Llama-style config is ~700 characters. Other pages that open the Cost page with a
# config (the Hugging Face heads page) check against this same number.
MAX_CONFIG_CHARS = 4000
