"""A tiny transformer trained here, and what its heads learned.

The job of this subpackage: train a small decoder whose attention *is* ``attn_core.attention``
(autograd runs through it), on seeded synthetic tasks, and read its heads — previous-token,
induction and sink scores, entropy, ablation, and the QK / OV circuits over the vocabulary.

- ``model``: the decoder (nanoGPT names: ``wte``, ``wpe``, ``c_attn``, ``c_proj``), its config
  and a forward pass that returns every layer's q, k, weights on request.
- ``tasks``: seeded batch generators (induction, copying, associative recall, sorting).
- ``training``: the training loop with a progress callback, stop and resume, a fixed seed.
- ``analysis``: head scores (the metrics of ``attn_core.heads``) on a probe, ablation and the
  two circuits.
- ``checkpoint``: save and load a trained model (safetensors: tensors and a JSON header, no code).

torch only; never streamlit or plotly. Mask convention: True = may attend.
"""
