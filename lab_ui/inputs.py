"""The shared input picker: where Q, K, V come from, the scale and the mask.

Pages that show "the current attention" call these with the same key prefix, so a choice made on
one page is the choice on the next (values are kept per session and mirrored to the URL).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st
import torch

from attn_core.limits import LIMITS
from attn_core.masks import MaskKind, build_mask
from attn_core.views import inputs
from attn_core.views.inputs import PICKER_MASKS, QKV, InputKind, ScaleKind
from lab_ui import widgets
from lab_ui.badges import attempt


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def qkv_picker(prefix: str = "in") -> QKV | None:
    """Widgets for the input source; returns the QKV, or None after showing what is wrong."""
    source = widgets.radio("Q, K, V from", InputKind, key=f"{prefix}_src")  # the URL keeps `random`
    if source is InputKind.TOY:
        st.caption("q_bank = (2, −1); keys and values of *the*, *river*, *bank* (d_k = 2).")
        return inputs.toy_bank()
    if source is InputKind.HAND_TRACE:
        st.caption("X = [[1, 0], [0, 1], [1, 1]], identity projections.")
        return inputs.toy_hand_trace()
    if source is InputKind.RANDOM:
        cap = LIMITS.max_len
        st.caption(
            f"Caps keep every rerun fast: L, S ≤ {cap}, d ≤ {LIMITS.max_width}, heads ≤ {LIMITS.max_heads}."
        )
        c1, c2 = st.columns(2)
        with c1:
            L = widgets.slider("L (queries)", 1, cap, 6, key=f"{prefix}_L")
            d_k = widgets.slider("d_k", 1, LIMITS.max_width, 4, key=f"{prefix}_dk")
            heads = widgets.slider("query heads", 1, LIMITS.max_heads, 1, key=f"{prefix}_H")
        with c2:
            S = widgets.slider("S (keys)", 1, cap, 6, key=f"{prefix}_S")
            d_v = widgets.slider("d_v", 1, LIMITS.max_width, 3, key=f"{prefix}_dv")
            kv_heads = widgets.selectbox(
                "KV heads",
                _divisors(heads),
                key=f"{prefix}_Hkv",
                default=heads,
                help="GQA: query head h reads KV head h // (Hq / Hkv).",
            )
        seed = widgets.number("seed", 0, 2**31 - 1, 0, key=f"{prefix}_seed", step=1)
        return attempt(inputs.random_qkv, L, S, d_k, d_v, heads, kv_heads, int(seed))
    toy = inputs.toy_bank()
    st.caption(
        "One row per line, numbers separated by commas or spaces. Q is L × d_k, K is S × d_k, V is S × d_v."
    )
    q_text = widgets.text_area("Q", key=f"{prefix}_Q", default=inputs.format_matrix(toy.q[0, 0]), height=90)
    k_text = widgets.text_area("K", key=f"{prefix}_K", default=inputs.format_matrix(toy.k[0, 0]), height=110)
    v_text = widgets.text_area("V", key=f"{prefix}_V", default=inputs.format_matrix(toy.v[0, 0]), height=110)
    return attempt(inputs.custom_qkv, q_text, k_text, v_text)


def scale_picker(d_k: int, prefix: str = "in") -> float | None:
    """The factor multiplying Q Kᵀ; returns None after an error message."""
    kind = widgets.selectbox("scale", ScaleKind, key=f"{prefix}_scale")
    temperature = 1.0
    if kind is ScaleKind.TEMPERATURE:
        temperature = widgets.slider(
            "temperature τ (scale = 1/(τ√d_k))", 0.05, 20.0, 1.0, key=f"{prefix}_tau", step=0.05
        )
    return attempt(inputs.build_scale, kind, d_k, temperature)


@dataclass(frozen=True)
class MaskChoice:
    kind: str
    allowed: torch.Tensor | None  # True = may attend; None = no mask


def mask_picker(L: int, S: int, prefix: str = "in") -> MaskChoice | None:
    """Mask kind plus its parameter; returns None after an error message."""
    kind = widgets.selectbox("mask", PICKER_MASKS, key=f"{prefix}_mask")
    window, valid = 1, S
    if kind is MaskKind.CAUSAL_BOTTOM_RIGHT:
        st.caption(f"The first P = S − L = {S - L} keys are a cached prefix; query i sits at position P + i.")
    elif kind is MaskKind.CAUSAL_TOP_LEFT:
        st.caption("SDPA's is_causal=True: query i sees keys 0…i, whatever S − L is.")
    elif kind is MaskKind.SLIDING_WINDOW:
        window = widgets.slider("window (keys each query sees)", 1, max(S, 2), min(3, S), key=f"{prefix}_win")
    elif kind is MaskKind.PADDING:
        valid = widgets.slider("real (non-padding) keys", 1, max(S, 2), S, key=f"{prefix}_valid")
    allowed = attempt(build_mask, kind, L, S, window=window, valid_keys=valid)
    if kind is not MaskKind.NONE and allowed is None:
        return None
    return MaskChoice(kind, allowed)
