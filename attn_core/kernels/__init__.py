"""kernels/: the kernel bench — every way to compute attention's forward pass, timed and judged on
this machine's hardware (CPU always, a CUDA GPU when present).

- ``records``: a case (shapes, dtype, causal), FLOPs by FlashAttention's convention, the record.
- ``device``: what the device is and its peak (datasheets on GPU; measured on CPU).
- ``contestants``: naive, SDPA (auto and each backend forced), FlexAttention, our online softmax
  and our Triton kernel, one signature ``(q, k, v, causal) -> O``.
- ``triton_kernel``: the Triton kernel (Triton optional: guarded import; interpreted without GPU).
- ``timing``: interleaved CPU medians, GPU do_bench, and the untimed profiled call (which SDPA
  kernel ran, peak memory).
- ``runner``: the sweep within a wall-clock budget, each output judged against float64.
- ``cli``: ``python -m attn_core bench …``.

The cost model's check against a run here is its own room, ``attn_core/verify/``.

Imports torch (and triton when installed); never streamlit or plotly.
"""
