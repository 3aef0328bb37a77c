"""Capture: every transformers model hands its queries and keys to one registered attention function.

Every transformers model hands q, k, v to ``ALL_ATTENTION_FUNCTIONS[config._attn_implementation]``
(q, k after rotary and QK-norm, the KV heads not repeated, with its ``scaling`` and, where it has
them, ``softcap``, ``sliding_window`` and learned sinks ``s_aux``). We register one function
there by name: it runs the model's own eager attention (its modeling file's
``eager_attention_forward``) and, in a thread that is recording, hands the call to the recorder
first. A model is switched to it once (``use_capture``); other threads' forwards pass straight
through, so one loaded model serves every visitor. No table of model types: any model whose
attention goes through the interface is read the same way (a hybrid's attention layers included).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

CAPTURE = "attn_lab_capture"
EXPRESSED = ("scaling", "softcap", "sliding_window", "s_aux")  # what the recomputation reproduces
# what the interface also passes that does not change the weights at inference
BOOKKEEPING = frozenset(
    {
        "dropout",
        "position_ids",
        "cache_position",
        "cu_seq_lens_q",
        "cu_seq_lens_k",
        "max_length_q",
        "max_length_k",
        "is_causal",
        "use_cache",
        "output_attentions",
        "past_key_values",
        "layer_idx",
        "position_embeddings",
        "output_hidden_states",
        "return_dict",
        "token_type_ids",
        "head_mask",
        "output_router_logits",
    }
)
_RECORDING = threading.local()  # .recorder: the current thread's, or absent


def _eager_of(module: torch.nn.Module) -> Callable:
    """The module's own eager attention: ``eager_attention_forward`` of its modeling file."""
    eager = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if eager is None:
        raise ValueError(f"{type(module).__name__} has no eager attention to run: not readable here")
    return eager


def _attend(module, query, key, value, attention_mask, *args, **kwargs):
    eager = _eager_of(module)
    recorder = getattr(_RECORDING, "recorder", None)
    if recorder is None:
        return eager(module, query, key, value, attention_mask, *args, **kwargs)
    return recorder(eager, module, query, key, value, attention_mask, *args, **kwargs)


def use_capture(model: torch.nn.Module) -> None:
    """Register the capture function (and eager's mask for it) and switch ``model`` to it. The
    model computes exactly as with ``attn_implementation="eager"`` when nothing records."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(CAPTURE, _attend)
    AttentionMaskInterface.register(CAPTURE, eager_mask)
    if getattr(model.config, "_attn_implementation", None) != CAPTURE:
        model.set_attn_implementation(CAPTURE)


@contextmanager
def recording(recorder: Callable) -> Iterator[None]:
    """While inside, this thread's attention calls go to ``recorder(eager, module, query, key,
    value, attention_mask, **kwargs)``, which returns what eager would."""
    previous = getattr(_RECORDING, "recorder", None)
    _RECORDING.recorder = recorder
    try:
        yield
    finally:
        _RECORDING.recorder = previous


@dataclass(frozen=True)
class LayerCapture:
    layer: int  # the decoder layer (a hybrid's attention layers are not every layer)
    q: torch.Tensor  # (1, Hq, T, d) after rotary
    k: torch.Tensor  # (1, Hkv, T, d) after rotary, KV heads not repeated
    scale: float
    sliding_window: int | None
    softcap: float | None  # scores become softcap · tanh(S / softcap) before the mask
    sinks: torch.Tensor | None  # (Hq,) learned sink logits: a column in the softmax, then dropped
    own_allowed: torch.Tensor | None  # (T, T) where the model's own mask lets query i read key j
    unexpressed: tuple[str, ...]  # what the model added that the recomputation does not reproduce
    weights: torch.Tensor  # (1, Hq, T, T): the model's own eager probabilities


def _allowed_of(mask: torch.Tensor | None) -> torch.Tensor | None:
    """The model's own mask as (T, T) bool, True = may attend (an additive float mask or a bool one)."""
    if mask is None or not isinstance(mask, torch.Tensor) or mask.ndim != 4:
        return None
    m = mask[0, 0]
    return m if m.dtype == torch.bool else m > torch.finfo(m.dtype).min / 2


def _unexpressed(module: torch.nn.Module, kwargs: dict) -> tuple[str, ...]:
    odd = [
        name
        for name, value in kwargs.items()
        if value is not None and name not in EXPRESSED and name not in BOOKKEEPING
    ]
    if module.training and kwargs.get("dropout"):
        odd.append("dropout")
    return tuple(odd)


def _record(module, query, key, attention_mask, kwargs, weights, order: int) -> LayerCapture:
    """What one call received; ``order``: how many calls came before (the layer, for a module
    that does not carry its ``layer_idx``)."""
    scale = kwargs.get("scaling")
    layer = getattr(module, "layer_idx", None)
    sinks = kwargs.get("s_aux")
    softcap = kwargs.get("softcap")
    return LayerCapture(
        layer=layer if isinstance(layer, int) else order,
        q=query.detach(),
        k=key.detach(),
        scale=float(scale if scale is not None else query.shape[-1] ** -0.5),
        sliding_window=int(kwargs["sliding_window"]) if kwargs.get("sliding_window") else None,
        softcap=float(softcap) if softcap else None,
        sinks=None if sinks is None else sinks.detach().reshape(-1),
        own_allowed=_allowed_of(attention_mask),
        unexpressed=_unexpressed(module, kwargs),
        weights=weights.detach(),
    )


def capture(model: torch.nn.Module, idx: torch.Tensor) -> tuple[list[LayerCapture], list[torch.Tensor]]:
    """One forward with every attention layer's inputs and eager probabilities recorded; also the
    hidden states (the residual stream before layer 0 and after every layer). ValueError when no
    layer's attention went through the interface."""
    use_capture(model)
    records: list[LayerCapture] = []

    def recorder(eager, module, query, key, value, attention_mask, *args, **kwargs):
        out, weights = eager(module, query, key, value, attention_mask, *args, **kwargs)
        records.append(_record(module, query, key, attention_mask, kwargs, weights, len(records)))
        return out, weights

    with recording(recorder), torch.no_grad():
        out = model(idx, output_hidden_states=True, use_cache=False)
    if not records:
        raise ValueError(
            f"{type(model).__name__}'s attention does not go through transformers' attention interface: "
            "not readable here"
        )
    return records, list(out.hidden_states)
