"""Independent references: torch's own SDPA, and the max-abs-difference every badge reports."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def sdpa_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    allowed: torch.Tensor | None = None,
    *,
    scale: float | None = None,
) -> torch.Tensor:
    """torch.nn.functional.scaled_dot_product_attention with an explicit boolean mask
    (True = may attend), GQA enabled, dropout off. Shapes as `attn_core.attention`."""
    gqa = q.ndim >= 3 and k.ndim >= 3 and q.shape[-3] != k.shape[-3]
    return F.scaled_dot_product_attention(
        q, k, v, attn_mask=allowed, dropout_p=0.0, scale=scale, enable_gqa=gqa
    )


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| over all entries; inf when either side has a NaN where the other does not."""
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
    if torch.isnan(a).ne(torch.isnan(b)).any():
        return float("inf")
    d = (a - b).abs()
    d = d[~torch.isnan(d)]
    return float(d.max()) if d.numel() else 0.0
