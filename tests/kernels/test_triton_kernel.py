"""Our Triton kernel on CPU tensors under Triton's interpreter (TRITON_INTERPRET=1, set by
attn_core.kernels.triton_kernel before triton is imported), against the float64 reference of
test_bench_contestants. Tolerance: flash-attention's rule (≤ 2 × plain PyTorch's error at the same
precision + 2·u·max|v|). bf16: the interpreter's bf16 tl.dot is broken (triton#11584); the kernel
upcasts to fp32 before each dot when interpreted, so bf16 inputs are tested too (more accurate
than plain bf16 PyTorch, hence within the rule)."""

import pytest
import torch
from kernel_reference import SHAPES, allowed_error, inputs

from attn_core.kernels import triton_kernel

pytestmark = pytest.mark.skipif(
    not triton_kernel.AVAILABLE, reason=f"triton unavailable: {triton_kernel.UNAVAILABLE_REASON}"
)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_interpreted_kernel_matches_float64(shape, dtype):
    q, k, v = inputs(shape, dtype, seed=2)
    ref, tol = allowed_error(q, k, v, shape[-1])
    out = triton_kernel.triton_attention(q, k, v, causal=shape[-1])
    assert out.shape == q.shape and out.dtype == dtype
    torch.testing.assert_close(out.double(), ref, rtol=0, atol=tol)


def test_ragged_length_across_many_query_blocks():
    """L = 50 spans four 16-row programs, the last one three rows long (masked loads/stores)."""
    shape = (50, 50, 2, 2, 16, True)
    q, k, v = inputs(shape, torch.float32, seed=3)
    ref, tol = allowed_error(q, k, v, True)
    torch.testing.assert_close(triton_kernel.triton_attention(q, k, v, True).double(), ref, rtol=0, atol=tol)


def test_kernel_refuses_what_it_does_not_support():
    q, k, v = inputs((8, 4, 2, 2, 16, True), torch.float32)
    with pytest.raises(ValueError, match="no key"):
        triton_kernel.triton_attention(q, k, v, causal=True)  # L > S bottom-right: empty rows
    with pytest.raises(ValueError, match="fp32/fp16/bf16"):
        triton_kernel.triton_attention(q.double(), k.double(), v.double())
    with pytest.raises(ValueError, match="Hq % Hkv"):  # 3 query heads cannot share 2 KV heads
        triton_kernel.triton_attention(
            torch.randn(1, 3, 4, 16), torch.randn(1, 2, 4, 16), torch.randn(1, 2, 4, 16)
        )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the compiled kernel needs one")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_compiled_kernel_matches_float64_on_gpu(dtype):
    shape = (300, 517, 8, 2, 128, True)
    q, k, v = inputs(shape, dtype, seed=4)
    ref, tol = allowed_error(q, k, v, True)
    out = triton_kernel.triton_attention(q.cuda(), k.cuda(), v.cuda(), True)
    torch.testing.assert_close(out.double().cpu(), ref, rtol=0, atol=tol)
