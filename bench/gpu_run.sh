#!/bin/bash
# The GPU checks in one run on the device machine (an H100/H200 image with torch, triton and
# transformers; the project's database packages travel as wheels in .whl, see
# bench/results/generation-gpu-*.md): the shared-prefix kernels' tests on CUDA (compiled
# flex_attention against a float64 reference, and that the compiled kernel really ran), then
# bench_generation.py's gpu-8b preset with the math path side by side. Writes under $OUT.
set -o pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ uptime; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch, transformers, triton; print('torch', torch.__version__, 'transformers', transformers.__version__, 'triton', triton.__version__, 'cuda', torch.cuda.is_available())"
} 2>&1 | tee "$OUT/machine.txt"
timeout 180 python3 -m pytest --noconftest -p no:cacheprovider -v -rs \
    tests/elitr_core/backends/test_shared_prefix.py tests/elitr_core/backends/test_lse_attention.py \
    2>&1 | tee "$OUT/pytest-cuda.log"
timeout "${BENCH_LIMIT:-420}" python3 bench/bench_generation.py --preset gpu-8b --scratch /tmp \
    --out "$OUT/generation-gpu.md" 2>&1 | grep -v "it/s\]$" | tee "$OUT/bench.log"
uptime | tee -a "$OUT/machine.txt"
