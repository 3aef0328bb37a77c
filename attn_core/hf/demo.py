"""The seeded demo model of the Hugging Face pages: a tiny random Mistral-style causal LM.

2 layers, 4 query heads sharing 2 KV heads, rotary positions, a sliding window of 8 tokens,
vocabulary 0…99, weights N(0, 0.3²) so that its maps are not flat. Rotary positions have no
weights, so the same seed gives the same model at any ``max_positions``: the long-sequence
views build it with 4,096 positions and see the very heads the 256-token page shows.
"""

from __future__ import annotations

import threading

import torch

from attn_core.hf.capture import use_capture
from attn_core.hf.loading import Loaded

DEMO_SEED = 0
_LOCK = threading.Lock()


def build_demo(max_positions: int, label: str) -> Loaded:
    """The demo model with ``max_positions`` rotary positions, eager attention, eval mode."""
    import transformers

    config = transformers.MistralConfig(
        vocab_size=100,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        sliding_window=8,
        initializer_range=0.3,
        max_position_embeddings=max_positions,
        attn_implementation="eager",
    )
    # transformers draws from the global generator: seed a private fork, one builder at a time
    with _LOCK, torch.random.fork_rng():
        torch.manual_seed(DEMO_SEED)
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()
    use_capture(model)
    return Loaded(model, None, label, sum(p.numel() for p in model.parameters()), 0.0, False)
