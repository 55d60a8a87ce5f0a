#!/usr/bin/env bash
# GPU call: the mutant and race tests, the TileLang fp8 GEMMs verified again, then the
# mutant kill rate of the carried CUTLASS and handhack mutants (benchmarks/mutants_gpu.sh).
# Usage: docs/runs/run-050-gpu_wave3.sh OUTDIR
set -uo pipefail
out=${1:?usage: docs/runs/run-050-gpu_wave3.sh OUTDIR}
mkdir -p "$out"
bash benchmarks/gpu_tests.sh "$out/t" 100 tests/test_race_delays_gpu.py tests/test_coverage_gpu.py tests/test_rewrite_gpu.py > /dev/null 2>&1
WAVE_LIMIT=90 WAVE_DATASETS=".gpu/tl-fp8" bash docs/runs/run-036-gpu_wave.sh "$out/d" datasets > /dev/null 2>&1
MUTANTS_SOURCE_LIMIT=170 bash benchmarks/mutants_gpu.sh "$out/m" .gpu/mut-ch > /dev/null 2>&1
echo "===== tests"; cat "$out/t/table.txt"
echo "===== datasets"; cat "$out/d/table.txt"
echo "===== mutants"; cat "$out/m/table.txt"; head -c 9000 "$out/m/mutants.log"
