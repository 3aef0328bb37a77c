"""A Hugging Face causal LM's attention, recomputed by ``attn_core``.

- ``folders``: which local folders a visitor may load a model from (the model roots), and how a
  name is read as a folder or a hub id.
- ``loading``: load a model (a local folder, or a hub id where the hub is reachable) within caps;
  ``token_ids``: typed token ids checked against the vocabulary, positions and the page's cap.
- ``capture``: every layer's queries and keys after rotary embedding as the model's own eager
  attention receives them (a function registered with transformers' attention interface).
- ``attention_maps``: recompute the weights with ``attn_core.attention`` (the model's scale,
  causal mask, GQA grouping and sliding window) and compare them with the model's own
  probabilities; per layer: sink share, entropy, the residual stream's distance from rank 1
  (the head metrics of ``attn_core.heads``, shared with the trained model's page).
- ``qk_capture``: for long inputs, every layer's q and k (after rotary, KV heads not repeated,
  scale, sliding window) while the layers run fused SDPA: no L × L per layer is kept, for the
  tile maps of ``attn_core.tile_maps``.
- ``demo``: the seeded random Mistral-style demo model, at any number of rotary positions.

``transformers`` is imported only inside the functions that need it, so importing this package
costs nothing. Mask convention: True = may attend.
"""
