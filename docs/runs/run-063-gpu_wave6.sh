#!/usr/bin/env bash
# GPU call: the probe GPU tests (coverage, divergence, ordering, rewrite) and the mutant kill
# rate of the mixed suite, its sources verified at once (benchmarks/mutants_gpu.sh).
# Usage: docs/runs/run-063-gpu_wave6.sh OUTDIR [MUTANT_ROOT]
set -uo pipefail
out=${1:?usage: docs/runs/run-063-gpu_wave6.sh OUTDIR [MUTANT_ROOT]}
root=${2:-.gpu/mut-all}
mkdir -p "$out"
bash benchmarks/gpu_tests.sh "$out/t" 150 tests/test_coverage_gpu.py tests/test_ordering_gpu.py \
  tests/test_rewrite_gpu.py > /dev/null 2>&1
MUTANTS_PARALLEL=1 MUTANTS_SOURCE_LIMIT=330 bash benchmarks/mutants_gpu.sh "$out/m" "$root" > /dev/null 2>&1
tar czf "$out/verified.tgz" -C "$out/m" verified 2>/dev/null
echo "===== tests"; cat "$out/t/table.txt"
for f in "$out"/t/*.log; do grep -q " failed\| error" "$f" && { echo "== $f"; tail -n 40 "$f"; }; done
echo "===== mutants"; cat "$out/m/table.txt"
grep -A12 "^| mutation operator" "$out/m/mutants.log"
grep -A9 "^| source" "$out/m/mutants.log"
grep -A2 "^surviving mutant" "$out/m/mutants.log" | cut -c1-700
