"""Every contestant that runs on CPU against a float64 reference written here (einsum, explicit
bottom-right mask from index arithmetic), over awkward shapes: L ≠ S with a causal mask, GQA,
odd lengths. Tolerances follow flash-attention's rule, computed here independently of the bench:
error ≤ 2 × the error of plain PyTorch at the same precision + 2·u·max|v| (the two final roundings
of the output to the dtype; see attn_core.kernels.runner for the argument)."""

import os

import pytest
import torch
from kernel_reference import SHAPES, allowed_error, inputs

from attn_core.kernels.contestants import CONTESTANTS
from attn_core.kernels.records import Case
from attn_core.kernels.runner import SweepConfig, run_sweep

CPU_IMPLS = ["naive", "sdpa", "sdpa-math", "sdpa-flash", "flex-eager", "online"]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("impl", CPU_IMPLS)
def test_fp32_contestant_matches_float64(impl, shape):
    q, k, v = inputs(shape, torch.float32)
    ref, tol = allowed_error(q, k, v, shape[-1])
    out = CONTESTANTS[impl].fn(q, k, v, shape[-1])
    assert out.shape == q.shape and out.dtype == q.dtype
    torch.testing.assert_close(out.double(), ref, rtol=0, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("impl", ["naive", "sdpa", "online", "flex-eager"])
def test_half_precision_contestant_within_twice_plain_pytorch(impl, dtype):
    shape = SHAPES[0]
    q, k, v = inputs(shape, dtype, seed=1)
    ref, tol = allowed_error(q, k, v, shape[-1])
    torch.testing.assert_close(CONTESTANTS[impl].fn(q, k, v, True).double(), ref, rtol=0, atol=tol)


@pytest.mark.skipif(
    os.environ.get("ATTN_LAB_SLOW") != "1",
    reason="compiling FlexAttention on CPU takes ~25 s for the first shape (~4 s each after): set "
    "ATTN_LAB_SLOW=1 to run it; the eager tests above check the same mask and GQA logic",
)
@pytest.mark.parametrize("shape", SHAPES[:2], ids=str)
def test_compiled_flex_matches_float64(shape):
    q, k, v = inputs(shape, torch.float32)
    ref, tol = allowed_error(q, k, v, shape[-1])
    torch.testing.assert_close(CONTESTANTS["flex"].fn(q, k, v, shape[-1]).double(), ref, rtol=0, atol=tol)


def test_causal_is_bottom_right_not_top_left():
    """With L < S the two alignments differ; each contestant must pick bottom-right."""
    q, k, v = inputs(SHAPES[0], torch.float32)
    top_left = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double().repeat_interleave(2, 1), v.double().repeat_interleave(2, 1), is_causal=True
    )
    for impl in CPU_IMPLS:
        out = CONTESTANTS[impl].fn(q, k, v, True).double()
        assert (out - top_left).abs().max() > 0.1, impl  # a wrong alignment is O(1) off


def test_unsupported_backends_are_reported_not_raised():
    """CPU has only math and its flash kernel: forcing efficient or cuDNN raises in PyTorch; the
    sweep turns that into a record with PyTorch's message."""
    config = SweepConfig(
        seq_lens=(32,), heads=2, kv_heads=2, impls=("sdpa-efficient", "sdpa-cudnn", "sdpa"), rounds=1
    )
    with pytest.raises(RuntimeError, match="No viable backend"):
        CONTESTANTS["sdpa-efficient"].fn(*inputs((32, 32, 2, 2, 64, False), torch.float32), False)
    records = {r.impl: r for r in run_sweep(config).records}
    for impl in ("sdpa-efficient", "sdpa-cudnn"):
        assert records[impl].note.startswith("unsupported: No viable backend"), records[impl].note
        assert records[impl].ms is None and records[impl].ok is None
    assert records["sdpa"].ok and records["sdpa"].ms > 0


def test_backend_that_ran_is_read_from_the_profiler():
    config = SweepConfig(
        seq_lens=(48,), heads=2, kv_heads=1, causal=True, impls=("sdpa", "sdpa-math", "naive"), rounds=1
    )
    records = {r.impl: r for r in run_sweep(config).records}
    assert records["sdpa"].backend == "flash (CPU)"  # aten::_scaled_dot_product_flash_attention_for_cpu
    assert records["sdpa-math"].backend == "math"
    assert records["naive"].backend == "naive"


def test_peak_memory_separates_quadratic_from_linear():
    """naive keeps the (H, L, S) scores and weights: ≥ 2·H·L·S·4 bytes; SDPA's fused kernel and
    our online softmax never hold an L × S matrix: less than one of them."""
    H, L = 4, 512
    config = SweepConfig(seq_lens=(L,), heads=H, kv_heads=H, impls=("naive", "sdpa", "online"), rounds=1)
    mem = {r.impl: r.peak_mem_bytes for r in run_sweep(config).records}
    matrix = H * L * L * 4
    assert mem["naive"] >= 2 * matrix
    assert mem["sdpa"] < matrix and mem["online"] < matrix
    assert mem["sdpa"] >= H * L * 64 * 4  # the output alone


def test_causal_with_more_queries_than_keys_is_refused():
    with pytest.raises(ValueError, match="L ≤ S"):
        Case(seq_len=20, kv_len=10, causal=True).validate()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: GPU contestants need one")
@pytest.mark.parametrize("impl", ["sdpa", "sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "online", "triton"])
def test_cuda_contestant_matches_float64(impl):
    shape = (128, 256, 4, 2, 64, True)
    q, k, v = (t.cuda() for t in inputs(shape, torch.float16))
    ref, tol = allowed_error(q.cpu(), k.cpu(), v.cpu(), True)
    try:
        out = CONTESTANTS[impl].fn(q, k, v, True)
    except RuntimeError as exc:
        pytest.skip(f"{impl} refuses this case on this GPU: {exc}")
    torch.testing.assert_close(out.double().cpu(), ref, rtol=0, atol=tol)
