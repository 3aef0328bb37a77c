#!/usr/bin/env bash
# The kernel bench on a GPU machine: run once from the repo root; installs nothing
# (that machine has torch 2.11 and Triton 3.6). Writes $OUT/gpu-results.json ({"meta", "records"})
# within ~6 minutes and prints one line per record. Then commit $OUT/gpu-results.json as
# assets/bench/gpu-results-<device>-<date>.json: the Kernels page shows it beside the live CPU run.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/gpu-bench}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"
# every record carries its own correctness verdict (ok, max_abs_err vs float64, tol): no pytest
# needed there (the test suite's conftest imports streamlit, which that machine may lack)
timeout 400 python benchmarks/kernel_bench.py gpu --out "$OUT" --budget-s "${BUDGET_S:-330}" 2>&1 | grep -v '^USDT'
