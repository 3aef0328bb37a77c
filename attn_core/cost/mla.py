"""Multi-head latent attention (DeepSeek-V2/V3, Kimi K2, Kimi Linear) read from a Hugging Face config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from attn_core.cost.config_keys import read_int, whole


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): K and V come from one cached latent
    of kv_lora_rank numbers per token, plus a shared rotary key of qk_rope_head_dim numbers."""

    kv_lora_rank: int  # r_kv, the cached latent
    qk_rope_head_dim: int  # rotary part of each query/key head (its key part is shared and cached)
    qk_nope_head_dim: int  # non-rotary part of each query/key head
    v_head_dim: int
    q_lora_rank: int | None = None  # None: queries projected straight from d

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def cache_width(self) -> int:
        """Numbers cached per token per layer: r_kv + d_rope (576 for DeepSeek-V3)."""
        return self.kv_lora_rank + self.qk_rope_head_dim


def read_mla(config: Mapping[str, Any]) -> MLA | None:
    """MLA's ranks and head widths when the config has ``kv_lora_rank``."""
    if config.get("kv_lora_rank") is None:
        return None
    q_rank = config.get("q_lora_rank")
    return MLA(
        kv_lora_rank=read_int(config, ("kv_lora_rank",), "latent rank"),
        qk_rope_head_dim=read_int(config, ("qk_rope_head_dim",), "rotary head width"),
        qk_nope_head_dim=read_int(config, ("qk_nope_head_dim",), "non-rotary head width"),
        v_head_dim=read_int(config, ("v_head_dim",), "value head width"),
        q_lora_rank=None if q_rank is None else whole("q_lora_rank", q_rank),
    )
