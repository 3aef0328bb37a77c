"""Parameters by part, read from the module tree (never from a table of model types).

A parameter's part is decided by the modules above it: inside the decoder layers, the layer's
child that holds it (an attention, a linear-attention or state-space mixer, an MLP, a mixture of
experts, a norm, a per-layer embedding); outside, the token embeddings, the output head, the
final norm. A module's kind comes from its structure (a Conv1d or an ``A_log`` makes a state
mixer; an ``experts`` child makes a mixture of experts; nn.Embedding an embedding) and, where
structure alone is silent, from its class name (…Attention, …MLP, …Norm)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from torch import nn

PARTS = (
    "embeddings", "attention", "linear mixer", "mlp", "routed experts", "shared experts", "router",
    "norms", "head", "other",
)  # fmt: skip
_MIXER = re.compile(r"Mamba|Mixer|DeltaNet|Lightning|ShortConv|Recurrent|Rglru|SSM|Rwkv")
_ATTN = re.compile(r"Attention|Attn", re.I)
_MLP = re.compile(r"MLP|FeedForward|FFN|Dense", re.I)
_NORM = re.compile(r"Norm", re.I)


@dataclass
class LayerParts:
    """One decoder layer: parameters by part, and the classes of its mixers."""

    params: Counter = field(default_factory=Counter)
    mixers: tuple[str, ...] = ()  # class names of its attention / linear mixers, in order

    @property
    def kind(self) -> str:
        return " + ".join(self.mixers) or "feed-forward only"


@dataclass
class ParamParts:
    total: int
    by_part: Counter
    layers: list[LayerParts]
    routed_total: int  # parameters of routed experts, all layers
    routed_active: int  # the same at k of E per layer
    experts: tuple[int, int] | None  # (k, E) of the first MoE layer
    buffers: int  # persistent buffers (in the state dict, so in a checkpoint): DeepSeek's router bias
    mlp_kind: str | None = None  # the first dense MLP's: "gated" (a gate beside up and down) or "plain"

    @property
    def active(self) -> int:
        return self.total - self.routed_total + self.routed_active


def decoder_layers(model: nn.Module) -> tuple[str, nn.ModuleList]:
    """The longest ModuleList of modules with parameters: the decoder stack, with its path."""
    best = ("", nn.ModuleList())
    for name, mod in model.named_modules():
        if isinstance(mod, nn.ModuleList) and len(mod) > len(best[1]):
            if "vision" in name or "audio" in name:
                continue
            if all(any(True for _ in m.parameters()) for m in mod) and not _is_experts_list(name):
                best = (name, mod)
    return best


def _is_experts_list(name: str) -> bool:
    return name.rsplit(".", 1)[-1] in ("experts", "local_experts")


def is_state_mixer(mod: nn.Module) -> bool:
    """A linear-attention or state-space mixer: a causal convolution, a decay ``A_log``, or a
    class named for one (Mamba, DeltaNet, lightning attention, short convolution, …)."""
    if _MIXER.search(type(mod).__name__):
        return True
    names = {n.rsplit(".", 1)[-1] for n, _ in mod.named_parameters()}
    return "A_log" in names or any(isinstance(m, nn.Conv1d) for m in mod.modules())


def is_moe(mod: nn.Module) -> bool:
    return any(_is_experts_list(n) or type(m).__name__.endswith("Experts") for n, m in mod.named_modules())


def block_kind(mod: nn.Module) -> str:
    """The part a direct child of a decoder layer is (its parameters' part, experts aside)."""
    cls = type(mod).__name__
    if isinstance(mod, nn.Embedding):
        return "embeddings"
    if _NORM.search(cls) and not any(True for _ in mod.children()):
        return "norms"
    if is_moe(mod):
        return "moe"
    if _ATTN.search(cls) and not is_state_mixer(mod):
        return "attention"
    if is_state_mixer(mod):
        return "linear mixer"
    if _MLP.search(cls):
        return "mlp"
    if _ATTN.search(cls):
        return "attention"
    return "other"


def _moe_part(path: str, mod: nn.Module) -> str:
    """Within a mixture of experts: routed experts, shared experts or the router."""
    for piece in path.split("."):
        if piece in ("experts", "local_experts"):
            return "routed experts"
        if piece.startswith("shared"):
            return "shared experts"
    return "router"


def _experts_of(moe: nn.Module) -> tuple[int, int, int] | None:
    """(k, E, routed parameters) of one mixture-of-experts block, read from its modules."""
    E = routed = 0
    for name, m in moe.named_modules():
        if _is_experts_list(name.rsplit(".", 1)[-1]) or type(m).__name__.endswith("Experts"):
            if "shared" in name:
                continue
            routed = sum(p.numel() for p in m.parameters())
            E = len(m) if isinstance(m, nn.ModuleList) else int(getattr(m, "num_experts", 0))
            break
    k = 0
    for m in moe.modules():
        for attr in ("top_k", "num_experts_per_tok", "topk", "k"):
            v = getattr(m, attr, None)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                k = v
                break
        if k:
            break
    return (k, E, routed) if E and k else None


def mlp_kind_of(mlp: nn.Module) -> str | None:
    """Gated (a gate matrix beside up and down, or a fused gate-up twice d_ff wide) or plain
    (two matrices), read from the MLP's own linear maps; None when it is neither shape."""
    linears = {n: m for n, m in mlp.named_children() if isinstance(m, nn.Linear)}
    params = {n for n, _ in mlp.named_parameters(recurse=False)}
    if any("gate" in n for n in (*linears, *params)):
        return "gated"
    if len(linears) == 3:
        return "gated"
    if len(linears) == 2:
        return "plain"
    return None


def param_parts(model: nn.Module, cfg) -> ParamParts:
    """Every parameter (each shared tensor once) assigned to a part, per layer and outside."""
    stack_path, stack = decoder_layers(model)
    out_emb = model.get_output_embeddings()
    head_ids = {id(p) for p in out_emb.parameters()} if out_emb is not None else set()
    seen: set[int] = set()
    by_part: Counter = Counter()
    layers = []
    routed_total = routed_active = 0
    experts = mlp_kind = None
    for layer in stack:
        lp = LayerParts()
        mixers = []
        for _, child in layer.named_children():
            kind = block_kind(child)
            if kind == "mlp" and mlp_kind is None:
                mlp_kind = mlp_kind_of(child)
            if kind in ("attention", "linear mixer"):
                mixers.append(type(child).__name__)
            elif kind == "moe":
                info = _experts_of(child)
                if info is not None:
                    k, E, _ = info
                    experts = experts or (k, E)
                    routed_fresh = sum(p.numel() for n, p in child.named_parameters() if id(p) not in seen
                                       and _moe_part(n, child) == "routed experts")  # fmt: skip
                    routed_total += routed_fresh
                    routed_active += routed_fresh // E * k  # E equal experts, k of them per token
            for name, p in child.named_parameters():
                if id(p) in seen:
                    continue
                seen.add(id(p))
                part = _moe_part(name, child) if kind == "moe" else kind
                lp.params[part] += p.numel()
        for p in layer.parameters(recurse=False):
            if id(p) not in seen:
                seen.add(id(p))
                lp.params["other"] += p.numel()
        lp.mixers = tuple(mixers)
        layers.append(lp)
        by_part.update(lp.params)
    stack_ids = seen.copy()
    for name, p in model.named_parameters():
        if id(p) in stack_ids or id(p) in seen:
            continue
        seen.add(id(p))
        owner = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
        if isinstance(owner, nn.Embedding) or ("embed" in name and id(p) not in head_ids):
            part = "embeddings"  # a tied head is the embedding table, counted once, here
        elif id(p) in head_ids:
            part = "head"
        elif _NORM.search(type(owner).__name__):
            part = "norms"
        else:
            part = "other"
        by_part[part] += p.numel()
    total = sum(p.numel() for p in model.parameters())
    assert total == sum(by_part.values()), (total, by_part)
    del stack_path
    state = model.state_dict(keep_vars=True)
    param_ids = {id(p) for p in model.parameters()}
    buffers = sum(t.numel() for t in {id(t): t for t in state.values() if id(t) not in param_ids}.values())
    return ParamParts(total, by_part, layers, routed_total, routed_active, experts, buffers, mlp_kind)


def parameter_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())
