#!/usr/bin/env bash
# The kernel bench on a GPU machine: run once from the repo root; installs nothing
# (that machine has torch 2.11 and Triton 3.6). Writes $OUT/gpu-results.json ({"meta", "records"})
# within ~5 minutes and prints one line per record; then the cost model's check (`verify`) on a
# dense GQA model and a mixture of experts at their real layer shapes, $OUT/verify-<model>.json.
# Then commit $OUT/gpu-results.json as assets/bench/gpu-results-<device>-<date>.json: the Kernels
# page shows it beside the live CPU run, and the Cost page's time table uses its measured rates
# (meta.attained: matmul by rows, bandwidth) and attention kernels as its calibrated column.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/gpu-bench}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"
# every record carries its own correctness verdict (ok, max_abs_err vs float64, tol): no pytest
# needed there (the test suite's conftest imports streamlit, which that machine may lack)
timeout 330 python benchmarks/kernel_bench.py gpu --out "$OUT" --budget-s "${BUDGET_S:-270}" 2>&1 | grep -v '^USDT'
# the cost model against real runs on this GPU (one dense GQA model, one MoE), each within ~1 minute
for model in llama-3-8b qwen3-30b-a3b; do
  timeout 120 python -m attn_core verify --model "$model" --device cuda --dtype bf16 --memory-gib 100 \
    --seq-len 4096 --decode-steps 32 --json "$OUT/verify-$model.json" || echo "verify $model: exit $?"
done
