#!/usr/bin/env bash
# GPU call: the GPU tests named on the command line, then `ptxds verify` (with timing) of
# the carried TileLang default build and TVM's large fp16 GEMM groups, and how far TVM's
# fastest members are from cuBLAS. Prints a short table last.
# Usage: docs/runs/run-050-gpu_wave2.sh OUTDIR TEST_FILE...
set -uo pipefail
out=${1:?usage: docs/runs/run-050-gpu_wave2.sh OUTDIR TEST_FILE...}; shift
mkdir -p "$out"
bash benchmarks/gpu_tests.sh "$out/t" 110 "$@" > /dev/null 2>&1
WAVE_LIMIT=200 WAVE_DATASETS=".gpu/tl-default/data .gpu/tvm-gap/data" bash docs/runs/run-036-gpu_wave.sh "$out/d" datasets > /dev/null 2>&1
timeout 90 python3 benchmarks/vendor_gap.py /tmp/ptxds-wave/tvm-gap_data --samples 100 > "$out/gap.txt" 2>&1
echo "===== tests"; cat "$out/t/table.txt"
echo "===== datasets"; cat "$out/d/table.txt"
echo "===== vendor gap"; cat "$out/gap.txt"
