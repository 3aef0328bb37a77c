"""bench/: the kernel bench — every way to compute attention's forward pass, timed and judged on
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
- ``verify/``: the cost model checked against a run here (a model's layers at true shape, random
  weights, a prefill and decode steps beside the bound and a probe-calibrated estimate), by job:
  ``plan`` (the request, and the layers and experts that fit the memory cap), ``counts`` (the cost
  model's FLOPs, bytes and matrix products of what was built), ``layers`` (the torch attention,
  MLP and MoE modules), ``probe`` (matmul rates at those shapes, bandwidth, the attention kernel;
  the bound and the estimate), ``run`` (the timed run, the result and its JSON, ``verify``);
  ``verify_cli``: ``python -m attn_core verify …``.

Imports torch (and triton when installed); never streamlit or plotly.
"""
