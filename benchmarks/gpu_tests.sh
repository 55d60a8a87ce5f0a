#!/usr/bin/env bash
# The GPU tests, one file at a time under its own time limit, so a slow or hanging file
# leaves the others' results: a line per file in OUTDIR/table.txt (exit code, seconds and
# pytest's summary), failures in OUTDIR/<file>.log.
# Usage: benchmarks/gpu_tests.sh OUTDIR SECONDS_PER_FILE tests/verify/test_a_gpu.py [tests/e2e/test_b.py ...]
set -uo pipefail
out=${1:?usage: gpu_tests.sh OUTDIR SECONDS_PER_FILE FILE...}; limit=${2:?}; shift 2
mkdir -p "$out"
source benchmarks/gpu_env.sh
[ -z "${PTXDS_CUDA_HOME:-}" ] && [ -x /usr/local/cuda-13.0/bin/nvcc ] && export PTXDS_CUDA_HOME=/usr/local/cuda-13.0
[ -d .gpu/mugraphs ] && export PTXDS_MIRAGE_DIR=$PWD/.gpu/mugraphs
for file in "$@"; do
  name=$(basename "$file" .py); t0=$(date +%s)
  timeout "$limit" python3 -m pytest -m gpu -q -rfEs -p no:cacheprovider "$file" > "$out/$name.log" 2>&1
  rc=$?
  printf "%-32s rc=%-3s %4ss  %s\n" "$name" "$rc" "$(( $(date +%s) - t0 ))" \
    "$(tail -n 1 "$out/$name.log" | cut -c1-120)" | tee -a "$out/table.txt"
done
