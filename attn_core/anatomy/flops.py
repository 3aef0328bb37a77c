"""Each layer's forward FLOPs counted from the model itself: torch's `FlopCounterMode` over a
forward of transformers' build (on the meta device; where that forward cannot run, a reduced copy
on the CPU, `reduced`), attributed to the parts of each layer by the module that ran them.

Convention, the cost model's (`attn_core.cost.flops`): matrix products only, 2 FLOPs per
multiply-add. `FlopCounterMode` already counts mm, addmm, bmm and baddbmm as 2·m·k·n, and an SDPA
call as its two products, 2·B·h·L·S·d_qk + 2·B·h·L·S·d_v, for the whole L × S rectangle whatever
``is_causal`` or the mask says: so the attention core here is every query against every key it
is handed (a prefill of T tokens: T², compared with the formulas' non-causal count). Convolutions,
which it also counts, are left out (a causal conv is no matrix product; the cost model leaves it
out too).

A mixture of experts: transformers' fused expert modules run grouped_mm by default, which the
counter does not count (0 FLOPs, silently) and whose routing on meta data means nothing. So every
config's ``_experts_implementation`` is set to "batched_mm" for the count: each of the T·k routed
(token, expert) pairs gathers its expert's weights and runs a matrix–vector product, so the
experts count at exactly k of E per token, one expert's products T·k times, whatever the router
picked. Where the experts are a list of modules (no fused kernel), the meta forward fails on its
routing and the reduced copy runs on the CPU: each token still runs through k experts there.

The parts of a layer: the direct children of a decoder layer by `parts.block_kind`; inside an
attention or a linear mixer, the products of its nn.Linear maps ("projections") and the rest
("core": QKᵀ and PV, a delta rule's chunked products, a scan's); inside a mixture of experts the
routed experts, the shared experts and the router (`parts._moe_part`). The output head is counted
apart, on its own module."""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter
from dataclasses import dataclass

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from attn_core.anatomy.build import BuildRefused, _one_line, build_model, quiet
from attn_core.anatomy.cache import CACHE_FIELDS, _NoMasks
from attn_core.anatomy.parts import _moe_part, block_kind, decoder_layers

FLOP_PARTS = (
    "attention projections",
    "attention core",
    "mixer projections",
    "mixer core",
    "mlp",
    "routed experts",
    "shared experts",
    "router",
    "other",
)
FLOPS_PROMPT = 16  # T of the anatomy's prefill count, and P cached at its decode step
EXPERTS_IMPLEMENTATION = "batched_mm"  # see the module docstring


@dataclass(frozen=True)
class ModelFlops:
    """Forward FLOPs counted from the model: a prefill of ``prompt`` tokens and one decode step
    with ``context`` tokens cached, batch 1, per layer by part (2 FLOPs per multiply-add; the
    attention core over the whole L × S rectangle, see the module docstring)."""

    prompt: int  # T
    context: int  # P
    prefill: tuple[dict[str, int], ...]  # per layer, by part
    decode: tuple[dict[str, int], ...] | None  # None: the decode step could not be run (``decode_unread``)
    head_prefill: int  # the output head over T tokens
    head_decode: int
    counted_by: str  # "the meta forward" or the reduced copy's cut
    decode_unread: str | None = None
    outside: tuple[int, int] = (0, 0)  # (prefill, decode): the base model's own maps, outside its layers

    def total(self, phase: str = "prefill") -> dict[str, int]:
        """Every layer's FLOPs by part, and the head."""
        out: Counter = Counter()
        for layer in self.prefill if phase == "prefill" else self.decode or ():
            out.update(layer)
        out["head"] = self.head_prefill if phase == "prefill" else self.head_decode
        out["other"] += self.outside[0] if phase == "prefill" else self.outside[1]
        return {p: n for p, n in out.items() if n}

    def layers_total(self, phase: str, layers) -> int:
        """FLOPs of the layers ``layers`` (indices), head left out."""
        rows = self.prefill if phase == "prefill" else self.decode or ()
        return sum(sum(rows[i].values()) for i in layers)

    def to_json(self) -> dict:
        return {
            "prompt_tokens": self.prompt,
            "decode_context": self.context,
            "counted_by": self.counted_by,
            "convention": "matrix products only, 2 FLOPs per multiply-add; attention core over the whole "
            "L x S rectangle; routed experts at k of E per token",
            "prefill_by_part": self.total("prefill"),
            "decode_by_part": self.total("decode") if self.decode is not None else None,
            "decode_unread": self.decode_unread,
            "prefill_per_layer": [dict(r) for r in self.prefill],
            "decode_per_layer": [dict(r) for r in self.decode] if self.decode is not None else None,
        }


def _matrix_flops(counts: dict) -> int:
    """The counter's FLOPs of one module, convolutions left out."""
    return sum(n for op, n in counts.items() if "conv" not in str(op))


def use_batched_experts(model: nn.Module) -> None:
    """Every config the model's modules hold runs its fused experts as batched_mm (see above)."""
    for mod in model.modules():
        cfg = getattr(mod, "config", None)
        if cfg is not None and hasattr(cfg, "_experts_implementation"):
            with contextlib.suppress(Exception):
                cfg._experts_implementation = EXPERTS_IMPLEMENTATION


def _names(model: nn.Module) -> dict[int, str]:
    """id(module) → the name the counter gives it: the root's class, then the attribute path."""
    root = type(model).__name__
    return {id(m): f"{root}.{n}" if n else root for n, m in model.named_modules(remove_duplicate=False)}


def _is_map(module: nn.Module) -> bool:
    """A weight matrix applied to the tokens: nn.Linear, or any leaf that owns a 2-D weight
    (GPT-2's Conv1D, which runs addmm with its weight transposed)."""
    weight = getattr(module, "weight", None)
    leaf = next(module.children(), None) is None
    return isinstance(module, nn.Linear) or (leaf and isinstance(weight, torch.Tensor) and weight.dim() == 2)


def _child_parts(kind: str, child: nn.Module, flops, tokens: int) -> Counter:
    """One direct child of a decoder layer, its FLOPs by part (``flops(module)``: the counter's)
    over ``tokens`` tokens. A map its parent applies through its weight (Jamba's
    ``dt_proj.weight @ x``) is counted on the parent by the counter: its 2·tokens·weights move from
    the core to the projections, as far as the core holds them."""
    out: Counter = Counter()
    total = flops(child)
    if kind in ("attention", "linear mixer"):
        maps = sum(flops(m) for m in child.modules() if _is_map(m))
        unseen = sum(2 * tokens * m.weight.numel() for m in child.modules() if _is_map(m) and not flops(m))
        maps += unseen if total - maps >= unseen else 0
        prefix = "attention" if kind == "attention" else "mixer"
        out[f"{prefix} projections"] += maps
        out[f"{prefix} core"] += total - maps
    elif kind == "moe" and not any(True for _ in child.children()):
        out["routed experts"] += total  # fused experts beside the router, not in a block (Gemma 4)
    elif kind == "moe":
        seen = 0
        for path, sub in child.named_children():
            part = _moe_part(path, sub)
            n = flops(sub)
            out[part] += n
            seen += n
        out["router"] += total - seen  # products the block runs itself (a router written inline)
    elif kind == "mlp":
        out["mlp"] += total
    else:
        out["other"] += total
    return out


def _per_module(model: nn.Module, counts: dict):
    """``flops(module)``: the counter's matrix FLOPs of one module of ``model`` (by its path)."""
    names = _names(model)
    return lambda mod: _matrix_flops(counts.get(names.get(id(mod), ""), {}))


def _outside(model: nn.Module, flops) -> int:
    """The base model's own products, outside its decoder layers (Gemma 4's d → L·p projection of
    the per-layer inputs); the output head is the model's, not the base's, so it is not here."""
    path, stack = decoder_layers(model)
    base = model.get_submodule(path.rsplit(".", 1)[0]) if "." in path else model
    if base is model:
        return 0
    return max(0, flops(base) - sum(flops(layer) for layer in stack))


def _layer_rows(model: nn.Module, flops, n_layers: int, tokens: int) -> list[dict[str, int]]:
    _, stack = decoder_layers(model)
    rows = []
    for layer in list(stack)[:n_layers]:
        row: Counter = Counter()
        for child in layer.children():
            row.update(_child_parts(block_kind(child), child, flops, tokens))
        row["other"] += flops(layer) - sum(row.values())  # products the layer runs outside its children
        rows.append({p: row[p] for p in FLOP_PARTS if row[p]})
    return rows


def _call(model, ids, position: int, **kwargs):
    """A forward of ``ids`` (positions from ``position``), retried with every mask None (`cache`)."""
    with quiet(), torch.no_grad():
        try:
            return model(input_ids=ids, use_cache=True, **kwargs)
        except Exception as exc:
            positions = torch.arange(position, position + ids.shape[1], device=ids.device)[None]
            try:
                return model(
                    input_ids=ids, use_cache=True, attention_mask=_NoMasks(), position_ids=positions, **kwargs
                )
            except Exception:
                raise BuildRefused(f"transformers' forward fails on it: {_one_line(exc)}") from None


def _counted(fn) -> tuple[dict, object]:
    counter = FlopCounterMode(display=False)
    with counter:
        out = fn()
    return counter.get_flop_counts(), out


def _head_flops(model: nn.Module, T: int, device: str) -> int:
    head = model.get_output_embeddings()
    if head is None or not hasattr(head, "weight"):
        return 0
    x = torch.zeros(1, T, head.weight.shape[1], dtype=head.weight.dtype, device=device)
    with torch.no_grad(), quiet():
        counts, _ = _counted(lambda: head(x))
    return _matrix_flops(counts.get("Global", {}))


def count_flops(model: nn.Module, n_layers: int, T: int, P: int, device: str = "meta"):
    """(prefill rows, decode rows or None, why the decode is unread, the base model's products
    outside its layers in each phase): per layer by part, from a
    forward of T tokens and one of 1 token after a forward of P tokens. BuildRefused where the
    prefill's forward fails."""
    use_batched_experts(model)
    model.config.use_cache = True
    ids = torch.zeros(1, T, dtype=torch.long, device=device)
    counts, _ = _counted(lambda: _call(model, ids, 0))
    flops = _per_module(model, counts)
    prefill = _layer_rows(model, flops, n_layers, T)
    outside = [_outside(model, flops), 0]
    try:
        out = _call(model, torch.zeros(1, P, dtype=torch.long, device=device), 0)
        cache = next((c for c in (getattr(out, f, None) for f in CACHE_FIELDS) if c is not None), None)
        if cache is None:
            return prefill, None, "its forward returns no cache to decode from", tuple(outside)
        one = torch.zeros(1, 1, dtype=torch.long, device=device)
        counts, _ = _counted(lambda: _call(model, one, P, past_key_values=cache))
    except BuildRefused as exc:
        return prefill, None, str(exc), tuple(outside)
    flops = _per_module(model, counts)
    outside[1] = _outside(model, flops)
    return prefill, _layer_rows(model, flops, n_layers, 1), None, tuple(outside)


def model_flops(cfg, model: nn.Module, experts, T: int = FLOPS_PROMPT, P: int = FLOPS_PROMPT) -> ModelFlops:
    """The model's FLOPs (see `ModelFlops`): on the meta device, or where that forward fails, on
    a reduced copy on the CPU (`reduced.reduced_copy_configs`; each layer read from the copy's
    layer that stands for it). BuildRefused with both reasons where neither runs."""
    from attn_core.anatomy.reduced import MAX_TRIES, reduced_copy_configs

    _, stack = decoder_layers(model)
    n = len(stack)
    head = (_head_flops(model, T, "meta"), _head_flops(model, 1, "meta"))
    try:
        pre, dec, why, outside = count_flops(model, n, T, P)
        return ModelFlops(T, P, tuple(pre), _tuple(dec), *head, "the meta forward", why, outside)
    except BuildRefused as exc:
        on_meta = str(exc)
    failures = []
    for small, what, standing in itertools.islice(reduced_copy_configs(cfg, model, experts), MAX_TRIES):
        copy = build_model(small, "cpu", initialize=False)
        try:
            # the copy's own maps outside its layers are sized for its fewer layers: left out
            pre, dec, why, _ = count_flops(copy, max(standing) + 1, T, P, device="cpu")
        except BuildRefused as exc:
            failures.append(f"{exc} (on a reduced copy on the CPU: {what})")
            continue
        finally:
            del copy
        dec = [dec[j] for j in standing] if dec is not None else None
        return ModelFlops(
            T,
            P,
            tuple(pre[j] for j in standing),
            _tuple(dec),
            *head,
            f"a reduced copy on the CPU: {what}",
            why,
        )
    raise BuildRefused(f"on meta: {on_meta}; {failures[0] if failures else 'no reduced copy runs'}")


def _tuple(rows):
    return tuple(rows) if rows is not None else None
