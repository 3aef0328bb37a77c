"""What a model_type implies, read from its build (`attn_core.cost.type_facts.TypeFacts`): the MLP's
kind, which attention projections carry biases, QK-norm, a gated attention output, norms per
layer, experts, learned positions, state mixers — each from the module tree of one decoder layer
(`parts`), never from a table. `scripts/derive_model_types.py` records them for every type
transformers builds (``assets/derived/model_types.json``); the check reads them from the build
of the config at hand, which overrides the record."""

from __future__ import annotations

from torch import nn

from attn_core.anatomy.parts import block_kind, decoder_layers, is_moe, mlp_kind_of
from attn_core.cost.type_facts import TypeFacts

_OUTPUT = ("o_proj", "out_proj", "dense", "c_proj", "o", "wo", "proj")  # the output projection's names


def _children(layer: nn.Module, kind: str) -> list[nn.Module]:
    return [m for _, m in layer.named_children() if block_kind(m) == kind]


def _first(stack: nn.ModuleList, kind: str) -> nn.Module | None:
    for layer in stack:
        found = _children(layer, kind)
        if found:
            return found[0]
    return None


def _projections(attn: nn.Module) -> dict[str, nn.Module]:
    """The attention's own projections (Linear, GPT-2's Conv1D, …): children with a 2-D weight."""
    return {n: m for n, m in attn.named_children() if getattr(getattr(m, "weight", None), "ndim", 0) == 2}


def attention_bias_of(attn: nn.Module | None) -> str:
    """'all' (every projection biased), 'qkv' (the input projections only), or 'none'."""
    if attn is None:
        return "none"
    biased = {n: getattr(m, "bias", None) is not None for n, m in _projections(attn).items()}
    inputs = [b for n, b in biased.items() if n not in _OUTPUT]
    output = [b for n, b in biased.items() if n in _OUTPUT]
    if inputs and all(inputs):
        return "all" if all(output) else "qkv"
    return "none"


def _qk_norm(attn: nn.Module | None, head_dim: int | None) -> bool:
    """A d_h-wide norm on every query and key head (a norm child as wide as one head)."""
    if attn is None or not head_dim:
        return False
    for name, m in attn.named_children():
        weight = getattr(m, "weight", None)
        is_norm = block_kind(m) == "norms" and name.startswith(("q", "k"))
        if is_norm and weight is not None and weight.numel() == head_dim:
            return True
    return False


def _output_gate(attn: nn.Module | None, cfg) -> bool:
    """The query map twice h·d_h wide (its second half gates the output, Qwen3-Next)."""
    q = None if attn is None else getattr(attn, "q_proj", None)
    heads, head_dim = _attr(cfg, "num_attention_heads"), _head_dim(cfg, attn)
    if not isinstance(q, nn.Linear) or not heads or not head_dim:
        return False
    return q.out_features == 2 * heads * head_dim


def _attr(cfg, name: str):
    """A config attribute, or None (Gemma 4 refuses to give a per-layer one globally)."""
    try:
        return getattr(cfg, name, None)
    except Exception:
        return None


def _head_dim(cfg, attn: nn.Module | None = None) -> int | None:
    """d_h: the attention module's own (Gemma 4's varies by layer), else the config's, else d / h."""
    head_dim = getattr(attn, "head_dim", None) if attn is not None else None
    head_dim = head_dim if isinstance(head_dim, int) else _attr(cfg, "head_dim")
    if isinstance(head_dim, int):
        return head_dim
    width, heads = getattr(cfg, "hidden_size", None), getattr(cfg, "num_attention_heads", None)
    return width // heads if isinstance(width, int) and isinstance(heads, int) and heads else None


def _mlp_of_experts(moe: nn.Module | None) -> str | None:
    """An expert's kind: a fused gate_up weight or a gate matrix means gated."""
    if moe is None:
        return None
    for name, m in moe.named_modules():
        if name.rsplit(".", 1)[-1] in ("experts", "local_experts") or type(m).__name__.endswith("Experts"):
            inner = m[0] if isinstance(m, nn.ModuleList) and len(m) else m
            return mlp_kind(inner)
    return None


def _learned_positions(model: nn.Module, stack: nn.ModuleList, cfg) -> bool:
    """An embedding table outside the stack, beside the tokens', with a row per position."""
    positions = getattr(cfg, "max_position_embeddings", None)
    if not isinstance(positions, int) or positions <= 0:
        return False
    inside = {id(m) for m in stack.modules()}
    tokens = model.get_input_embeddings()
    return any(
        isinstance(m, nn.Embedding)
        and m is not tokens
        and id(m) not in inside
        and positions <= m.num_embeddings <= positions + 2  # OPT keeps two rows more
        for m in model.modules()
    )


def mlp_kind(mlp: nn.Module | None) -> str | None:
    """Gated (a gate beside up and down, or a fused gate-up) or plain (two matrices), from the
    MLP's own projections (Linear, GPT-2's Conv1D: children with a 2-D weight); None otherwise."""
    if mlp is None:
        return None
    found = mlp_kind_of(mlp)
    if found is not None:
        return found
    matrices = _projections(mlp)
    return "gated" if len(matrices) == 3 else "plain" if len(matrices) == 2 else None


def facts_of(model: nn.Module, cfg) -> TypeFacts:
    """The facts of one built model (its first layers of each kind, at the config it was built with)."""
    _, stack = decoder_layers(model)
    attn, mlp = _first(stack, "attention"), _first(stack, "mlp")
    moe = _first(stack, "moe")
    layer = stack[0] if len(stack) else nn.Module()
    norms = sum(1 for n, m in layer.named_children() if block_kind(m) == "norms" and "per_layer" not in n)
    mixers = sorted({type(m).__name__ for layer in stack for m in _children(layer, "linear mixer")})
    if mlp is None and moe is None:  # OPT, Falcon: the MLP's matrices sit in the layer itself
        mlp = nn.ModuleDict({n: m for n, m in _projections(layer).items() if block_kind(m) == "other"})
    mlp_bias = mlp is not None and any(getattr(m, "bias", None) is not None for m in mlp.children())
    tie = getattr(cfg, "tie_word_embeddings", None)
    return TypeFacts(
        mlp=mlp_kind(mlp) if mlp is not None else _mlp_of_experts(moe),
        attention_bias=attention_bias_of(attn),
        mlp_bias=mlp_bias,
        qk_norm=_qk_norm(attn, _head_dim(cfg, attn)),
        output_gate=_output_gate(attn, cfg),
        norms_per_layer=norms,
        moe=any(is_moe(m) for layer in stack for _, m in layer.named_children()),
        learned_positions=_learned_positions(model, stack, cfg),
        state_mixers=tuple(mixers),
        tie_word_embeddings=tie if isinstance(tie, bool) else None,
    )
