#!/bin/bash
# bench/gpu_probe.py on the device machine (see bench/gpu_run.sh for the wheels).
export PYTHONUNBUFFERED=1 TORCH_LOGS=recompiles
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout "${PROBE_LIMIT:-270}" python3 bench/gpu_probe.py "${1:-8}" 2>&1 | grep -v "it/s\]$" \
    | tee "$OUT/probe.log"
uptime | tee -a "$OUT/probe.log"
