"""attn_core.cost.dtypes: bytes per number and bits per weight.

Oracle: torch's own element sizes for the whole-byte dtypes; the group arithmetic (bits of the
values plus the scale shared by a group) written out for the quantized weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_core.cost.dtypes import DTYPE_BYTES, WEIGHT_BITS, bytes_per_value, weight_bytes_per_param

TORCH = {
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "fp32": torch.float32,
    "fp8": torch.float8_e4m3fn,
    "int8": torch.int8,
}


@pytest.mark.parametrize("name", sorted(DTYPE_BYTES))
def test_whole_byte_dtypes_take_torchs_element_size(name):
    assert bytes_per_value(name) == TORCH[name].itemsize
    assert weight_bytes_per_param(name) == TORCH[name].itemsize


@pytest.mark.parametrize(
    ("name", "value_bits", "scale_bits", "group"),
    [("int4-g64", 4, 16, 64), ("int4-g128", 4, 16, 128), ("mxfp4", 4, 8, 32)],
)
def test_grouped_weights_carry_their_scale(name, value_bits, scale_bits, group):
    bits = (value_bits * group + scale_bits) / group  # one group: its values and one scale
    assert WEIGHT_BITS[name] == bits
    assert weight_bytes_per_param(name) == bits / 8
    one_billion = 10**9 * weight_bytes_per_param(name)  # int4-g64: 531,250,000 bytes
    assert one_billion == pytest.approx(10**9 * (value_bits + scale_bits / group) / 8, rel=1e-15)


def test_unknown_dtypes_are_refused_with_the_choices():
    with pytest.raises(ValueError, match="fp16"):
        bytes_per_value("fp4")
    with pytest.raises(ValueError, match="int4-g64"):
        weight_bytes_per_param("int3")
    assert "int4-g64" not in DTYPE_BYTES  # activations and caches take whole bytes only
    assert np.isclose(WEIGHT_BITS["fp16"], 16.0)
