"""The theory behind the scale and the expressiveness of one attention head (cards 3, 8, 10, 16–18).

Each module is one derivation turned into code that a page can run live: the closed form from the
card, and a seeded, vectorized simulation of the same quantity with a bounded size (caps in
``attn_core.limits.THEORY``), both returned as small dataclasses for a page to plot. Tolerances that
judge a simulation against its closed form live in ``attn_core.oracle`` with their argument.

- ``scaling``: Var(q·k) = d_k σ_q² σ_k², row entropy ≈ ln T − σ²/2, the exact two-key tail (card 3).
- ``alignment``: aligned keys k = ρq + √(1−ρ²)z and μP's 1/d_k (card 16).
- ``sinks``: the logit a sink needs, the QK-norm cap, and a cache-eviction experiment (card 18).
- ``kernel_smoothing``: Gaussian Nadaraya–Watson as attention with a key-length bias (card 8).
- ``rank``: rank(QKᵀ) ≤ d_k, full-rank P, and which keys a d_k = 1 head can select (card 10).
- ``collapse``: uniform heads and rank collapse in pure attention stacks (card 17).
- ``circuits``: the QK and OV circuits, change of basis, and the heads sum (lesson; card 9's reading).

Imports torch and the math modules (attention, masks, jacobian, stats), caps from ``limits`` and
tolerances from ``oracle`` only.
"""
