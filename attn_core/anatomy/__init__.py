"""A model's shape read from the model itself: transformers builds it from its config on torch's
meta device (no weights allocated), the module tree is walked into parts per layer, and a meta
forward with the model's own cache object shows what each layer keeps. Torch and transformers
are imported here only, never by `attn_core.cost` (numpy only), which stays the explanation:
`check` holds its closed forms against these figures.

- `build`: the config as transformers reads it (text config inside a multimodal one), the class
  that builds it, the build on meta; `BuildRefused` names transformers' own reason.
- `parts`: parameters by part (embeddings, attention, linear-attention / state-space mixers,
  MLP, routed and shared experts, router, norms, head) and by layer; active at k of E experts.
- `cache`: bytes each layer keeps, growing per token and fixed per sequence, from two forwards;
  "no cache" where the forward keeps none (an encoder).
- `reduced`: where the meta forward cannot run (a step needs a value), the same figures from a
  real CPU forward of a reduced copy: a prefix holding every distinct layer, a small vocabulary,
  k of E experts, under a stated memory cap.
- `derive`: one call, `derive(config)`, cached by config content; `Anatomy.to_json()`.
- `check`: the analytic figures beside these, part by part.
"""
