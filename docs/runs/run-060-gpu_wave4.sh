#!/usr/bin/env bash
# GPU call: the ordering-probe and coverage GPU tests, then the mutant kill rate of the
# mixed suite (Triton, CUTLASS SM80 + SM90, Mirage, handhack; .gpu/mut-all), its sources
# verified at once; the verified folders are packed into OUTDIR/verified.tgz so the tables
# can be made again off the GPU.
# Usage: docs/runs/run-060-gpu_wave4.sh OUTDIR [MUTANT_ROOT]
set -uo pipefail
out=${1:?usage: docs/runs/run-060-gpu_wave4.sh OUTDIR [MUTANT_ROOT]}
root=${2:-.gpu/mut-all}
mkdir -p "$out"
bash benchmarks/gpu_tests.sh "$out/t" 150 tests/test_ordering_gpu.py tests/test_coverage_gpu.py > /dev/null 2>&1
MUTANTS_PARALLEL=1 MUTANTS_SOURCE_LIMIT=330 bash benchmarks/mutants_gpu.sh "$out/m" "$root" > /dev/null 2>&1
tar czf "$out/verified.tgz" -C "$out/m" verified 2>/dev/null
echo "===== tests"; cat "$out/t/table.txt"
for f in "$out"/t/*.log; do grep -q "passed\|skipped" "$f" && ! grep -q "failed\|error" "$f" || { echo "== $f"; tail -n 40 "$f"; }; done
echo "===== mutants"; cat "$out/m/table.txt"
grep -A40 "^| mutation operator" "$out/m/mutants.log" | head -60
grep -B1 -A3 "^surviving mutant" "$out/m/mutants.log" | head -c 6000
