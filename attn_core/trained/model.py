"""A small decoder-only transformer whose attention is ``attn_core.attention`` itself.

nanoGPT's layout without LayerNorm (so the QK and OV circuits over the vocabulary are exact
products of weight matrices, as in Elhage et al. 2021): token and learned position embeddings,
``n_layer`` blocks of causal multi-head self-attention (an MLP optional), each added to the
residual stream, and an untied unembedding. By default attention-only, 2 layers, 4 heads,
d_model 64.

Mask convention: True = may attend; the causal mask lets query t read keys 0…t.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from attn_core.attention import attention
from attn_core.masks import causal_mask

MAX_LAYERS = 4  # the page's model sizes; a deeper stack does not train within a demo's time cap
MAX_HEADS = 8
MAX_EMBD = 128
MAX_BLOCK = 128  # positions: a 128 × 128 map is the largest that stays readable in a head grid


@dataclass(frozen=True)
class ModelConfig:
    """The shape of the model; ``head_size`` = n_embd / n_head is derived."""

    vocab_size: int = 28
    block_size: int = 64  # learned positions 0…block_size-1
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    mlp: bool = False  # attention-only by default: every head writes straight to the logits

    def __post_init__(self) -> None:
        for name, value, cap in [
            ("n_layer", self.n_layer, MAX_LAYERS),
            ("n_head", self.n_head, MAX_HEADS),
            ("n_embd", self.n_embd, MAX_EMBD),
            ("block_size", self.block_size, MAX_BLOCK),
        ]:
            if not 1 <= value <= cap:
                raise ValueError(f"{name} = {value} is outside the allowed range 1…{cap}")
        if self.vocab_size < 2:
            raise ValueError(f"vocab_size = {self.vocab_size}: a vocabulary needs at least two tokens")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd = {self.n_embd} is not a multiple of n_head = {self.n_head}")

    @property
    def head_size(self) -> int:
        return self.n_embd // self.n_head

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class LayerTrace:
    """What one attention layer computed; every tensor is (B, nh, T, ·)."""

    q: torch.Tensor  # (B, nh, T, hs)
    k: torch.Tensor  # (B, nh, T, hs)
    v: torch.Tensor  # (B, nh, T, hs)
    weights: torch.Tensor  # (B, nh, T, T) softmax(q kᵀ / √hs, causal); rows sum to 1
    output: torch.Tensor  # (B, nh, T, hs) weights @ v, before the output projection


@dataclass
class Trace:
    """Every layer's attention and the residual stream before and after each layer."""

    layers: list[LayerTrace] = field(default_factory=list)
    residuals: list[torch.Tensor] = field(default_factory=list)  # n_layer + 1 tensors (B, T, C)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=False)  # W_Q | W_K | W_V
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=False)  # W_O

    def forward(
        self, x: torch.Tensor, head_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, LayerTrace]:
        """x (B, T, C) → (B, T, C). head_mask (nh,): multiplies each head's output (0 ablates)."""
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        res = attention(q, k, v, causal_mask(T, T, "top_left"))  # the lab's own function
        y = res.output  # (B, nh, T, hs)
        if head_mask is not None:
            y = y * head_mask.view(1, self.n_head, 1, 1).to(y.dtype)
        trace = LayerTrace(q=q, k=k, v=v, weights=res.weights, output=y)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # heads side by side again
        return self.c_proj(y), trace


class MLP(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=False)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.attn = CausalSelfAttention(config)
        self.mlp = MLP(config) if config.mlp else None

    def forward(
        self, x: torch.Tensor, head_mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, LayerTrace]:
        a, trace = self.attn(x, head_mask)
        x = x + a
        if self.mlp is not None:
            x = x + self.mlp(x)
        return x, trace


class TinyTransformer(nn.Module):
    """logits = W_U (Σ layers) (W_E[idx] + W_pos[t]); see the module docstring."""

    def __init__(self, config: ModelConfig, seed: int = 0) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)  # W_E
        self.wpe = nn.Embedding(config.block_size, config.n_embd)  # learned positions
        self.h = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)  # W_U, untied
        # GPT-2's initialization, from a private generator: the same seed gives the same model
        # whatever other threads of the server draw from torch's global generator meanwhile.
        g = torch.Generator().manual_seed(seed)
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=0.02, generator=g)

    def forward(
        self,
        idx: torch.Tensor,
        head_mask: torch.Tensor | None = None,
        trace: bool = False,
    ) -> tuple[torch.Tensor, Trace | None]:
        """idx (B, T) token ids → logits (B, T, vocab_size), and the Trace when ``trace``.

        head_mask (n_layer, n_head): 1 keeps a head, 0 zeroes its output (ablation)."""
        length = idx.size(1)
        if length > self.config.block_size:
            raise ValueError(
                f"sequence of {length} tokens is longer than block_size {self.config.block_size}"
            )
        pos = torch.arange(length, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)  # (B, T, C)
        record = Trace(residuals=[x]) if trace else None
        for layer, block in enumerate(self.h):
            x, layer_trace = block(x, None if head_mask is None else head_mask[layer])
            if record is not None:
                record.layers.append(layer_trace)
                record.residuals.append(x)
        return self.lm_head(x), record


def masked_loss(logits: torch.Tensor, targets: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats) over the positions where loss_mask is True.

    logits (B, T, V), targets (B, T) ids, loss_mask (B, T) bool."""
    per_token = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")  # (B·T,)
    keep = loss_mask.flatten()
    return per_token[keep].mean()
