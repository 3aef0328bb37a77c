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
    "embeddings",
    "attention",
    "linear mixer",
    "mlp",
    "routed experts",
    "shared experts",
    "router",
    "norms",
    "head",
    "other",
)
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
    """Within a mixture of experts, by path: routed experts (an ``experts`` piece), shared experts
    (a piece starting "shared") or the router. `param_parts` finds routed experts by structure
    first (`routed_experts`); this names the rest, and a FLOPs count's children."""
    del mod
    for piece in path.split("."):
        if piece in ("experts", "local_experts"):
            return "routed experts"
        if piece.startswith("shared"):
            return "shared experts"
    return "router"


# the config keys transformers' config classes name the expert count and top-k with
EXPERT_COUNT_ATTRS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
TOP_K_ATTRS = (
    "num_experts_per_tok",
    "top_k_experts",
    "num_experts_per_token",
    "experts_per_token",
    "moe_top_k",
    "moe_k",
    "top_k",
)


def _config_int(cfg, names: tuple[str, ...]) -> int:
    """The first whole number > 0 the config holds under one of ``names`` (0: none)."""
    for name in names:
        v = getattr(cfg, name, None)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return 0


def routed_experts(layer: nn.Module, n_experts: int) -> list[tuple[str, nn.Module, int]]:
    """The routed experts inside one decoder layer, read from its structure: a ModuleList of E
    experts (``experts``, ``local_experts``), or a module whose own parameters all carry a leading
    dimension of E, one of them a stack of matrices (fused experts: gate_up (E, 2·f, d), down
    (E, d, f), biases (E, f)); a router's (E, d) Linear is not one. Shared experts (a path
    piece starting "shared") are not routed. Returns (path, module, E) for each."""
    found: list[tuple[str, nn.Module, int]] = []
    for name, m in layer.named_modules():
        if any(piece.startswith("shared") for piece in name.split(".")):
            continue
        if any(name.startswith(f + ".") for f, _, _ in found):
            continue  # inside experts already found
        if isinstance(m, nn.ModuleList):
            if (_is_experts_list(name) and len(m) > 1) or (n_experts > 1 and len(m) == n_experts):
                found.append((name, m, len(m)))
            continue
        own = list(m.parameters(recurse=False))
        leading = {p.shape[0] for p in own if p.dim() >= 2}
        stacked = any(p.dim() >= 3 for p in own)  # a stack of matrices, not one Linear's (E, d) router
        if stacked and len(leading) == 1 and all(p.dim() >= 2 for p in own):
            E = leading.pop()
            fused_name = type(m).__name__.endswith("Experts") or _is_experts_list(name)
            if E > 1 and (n_experts == E or fused_name):
                found.append((name, m, E))
    return found


def experts_k(cfg, moe_modules: list[nn.Module]) -> int:
    """k, the routed experts a token runs: the config's top-k key as its class names it, else an
    attribute of the router module that holds it."""
    k = _config_int(cfg, TOP_K_ATTRS)
    if k:
        return k
    for mod in moe_modules:
        for m in mod.modules():
            k = _config_int(m, ("top_k", "num_experts_per_tok", "topk", "k"))
            if k:
                return k
    return 0


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


@dataclass
class _Tally:
    """What the walk over the decoder layers has counted so far."""

    seen: set = field(default_factory=set)
    routed_total: int = 0
    routed_active: int = 0
    experts: tuple[int, int] | None = None
    mlp_kind: str | None = None


def _child_part(kind: str, name: str, child: nn.Module, has_experts: bool) -> str:
    """The part of a layer child's parameter that is not a routed expert's."""
    if kind == "moe":
        return _moe_part(name, child)
    if has_experts and kind == "other" and re.search(r"Router|Gate", type(child).__name__):
        return "router"  # a router beside the experts, not inside an MoE block (Gemma 4)
    return kind


def _layer_parts(layer: nn.Module, cfg, t: _Tally) -> LayerParts:
    """One decoder layer's parameters by part; routed experts found by structure, k from the config."""
    lp, mixers = LayerParts(), []
    found = routed_experts(layer, _config_int(cfg, EXPERT_COUNT_ATTRS))
    routed_ids = {id(p) for _, m, _ in found for p in m.parameters()}
    for path, m, E in found:
        fresh = sum(p.numel() for p in m.parameters() if id(p) not in t.seen)
        k = experts_k(cfg, [layer])
        if not k:
            raise ValueError(f"routed experts at {path!r} but no top-k in the config or the router")
        t.experts = t.experts or (k, E)
        t.routed_total += fresh
        t.routed_active += fresh // E * k  # E equal experts, k of them per token
    for _, child in layer.named_children():
        kind = block_kind(child)
        if kind == "mlp" and t.mlp_kind is None:
            t.mlp_kind = mlp_kind_of(child)
        if kind in ("attention", "linear mixer"):
            mixers.append(type(child).__name__)
        for name, p in child.named_parameters():
            if id(p) in t.seen:
                continue
            t.seen.add(id(p))
            part = "routed experts" if id(p) in routed_ids else _child_part(kind, name, child, bool(found))
            lp.params[part] += p.numel()
    for p in layer.parameters(recurse=False):
        if id(p) not in t.seen:
            t.seen.add(id(p))
            lp.params["other"] += p.numel()
    lp.mixers = tuple(mixers)
    return lp


def param_parts(model: nn.Module, cfg) -> ParamParts:
    """Every parameter (each shared tensor once) assigned to a part, per layer and outside."""
    _, stack = decoder_layers(model)
    out_emb = model.get_output_embeddings()
    head_ids = {id(p) for p in out_emb.parameters()} if out_emb is not None else set()
    t = _Tally()
    by_part: Counter = Counter()
    layers = []
    for layer in stack:
        lp = _layer_parts(layer, cfg, t)
        layers.append(lp)
        by_part.update(lp.params)
    seen = t.seen
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
    state = model.state_dict(keep_vars=True)
    param_ids = {id(p) for p in model.parameters()}
    buffers = sum(t.numel() for t in {id(t): t for t in state.values() if id(t) not in param_ids}.values())
    return ParamParts(total, by_part, layers, t.routed_total, t.routed_active, t.experts, buffers, t.mlp_kind)


def parameter_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())
