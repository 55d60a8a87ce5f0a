#!/usr/bin/env bash
# This session's GPU calls, one phase per call, from the repository root of the copy the
# machine gets. The commit under test is a clean worktree in .gpucall/head; the datasets
# (built on the CPU machine) and the verifier of 7dadb14 (.gpucall/data/head7, the last
# commit that ran on a GPU before the row ops were prepared there) lie in .gpucall/data.
#   triton  the device-prepare GPU tests; the Triton suite (59 rows) and the Triton `llm` set
#           (290 rows), each verified by 7dadb14 and by the head in turn (issue 40)
#   liger   the 23 Liger/fla groups after a warm-up run, by 7dadb14 and by the head with the
#           references cache and the routes kept; the Triton `llm` set by the head without
#           racecheck (what the rest of the verifier takes)
#   v4      the adversarial v4 suite, the racecheck and custom-reference GPU tests; the Triton
#           suite with 2 rewrites and 10 mutants a group (167 rows) and the CUTLASS `llm` slice
#           (32 rows) by the head, with how busy the kernels kept the GPU
#   mutants the mutant set again by the head (the worker started ahead after a crash)
# Usage: bash docs/runs/run-107.sh PHASE OUTDIR
set -uo pipefail
phase=$1; out=$2
cd .gpucall/head
source benchmarks/gpu_call_prelude.sh

case "$phase" in
  triton)
    bash benchmarks/gpu_tests.sh "$work/tests" 150 tests/verify/test_device_prepare_gpu.py
    cat "$work/tests/table.txt" >> "$summary"
    verify_side .gpu/head7 "$PWD/.gpu/triton" "$work/suite-old" 90 "suite 7dadb14"
    verify_side . "$PWD/.gpu/triton" "$work/suite-new" 90 "suite head"
    verify_side .gpu/head7 "$PWD/.gpu/triton-llm" "$work/llm-old" 170 "llm 7dadb14"
    verify_side . "$PWD/.gpu/triton-llm" "$work/llm-new" 170 "llm head"
    statuses "$work/suite-new" "suite head"
    statuses "$work/llm-new" "llm head"
    python3 benchmarks/compare_verified.py "$work/suite-old" "$work/suite-new" --label suite 2>&1 | tee -a "$summary"
    python3 benchmarks/compare_verified.py "$work/llm-old" "$work/llm-new" --label llm 2>&1 | tee -a "$summary"
    for log in "$work"/tests/*.log; do echo "==== $log"; grep -v CudaIPCTypes "$log" | tail -n 80; done > "$out/tests.log" ;;
  liger)
    export PTXDS_REFERENCES_CACHE=$work/refs-shared
    verify_side . "$PWD/.gpu/liger-rest" "$work/liger-warm" 150 "liger head warm-up"
    verify_side .gpu/head7 "$PWD/.gpu/liger-rest" "$work/liger-old" 120 "liger 7dadb14 kept"
    verify_side . "$PWD/.gpu/liger-rest" "$work/liger-new" 120 "liger head kept"
    statuses "$work/liger-new" "liger+fla head kept"
    python3 benchmarks/compare_verified.py "$work/liger-old" "$work/liger-new" --label liger 2>&1 | tee -a "$summary"
    verify_side . "$PWD/.gpu/triton-llm" "$work/llm-norace" 130 "llm head --no-racecheck" --no-racecheck
    statuses "$work/llm-norace" "llm head --no-racecheck" ;;
  v4)
    bash benchmarks/gpu_tests.sh "$work/tests" 330 tests/e2e/test_adversarial_v4_gpu.py
    bash benchmarks/gpu_tests.sh "$work/tests" 150 tests/verify/test_sanitize_gpu.py tests/verify/test_verify_v3_gpu.py \
      tests/verify/test_custom_on_device.py
    cp "$work/tests/table.txt" "$summary"
    for log in "$work"/tests/*.log; do echo "==== $log"; grep -v CudaIPCTypes "$log" | tail -n 120; done > "$out/tests.log"
    verify_side . "$PWD/.gpu/triton-mut" "$work/mutants" 120 "mutants head"
    gpu_busy "$work/mutants" "$last_wall_ms" "mutants head"
    summary=$out/mutants.txt statuses "$work/mutants" "mutants head" > /dev/null
    head -n 1 "$out/mutants.txt" >> "$summary"
    verify_side . "$PWD/.gpu/cutlass-llm" "$work/cutlass" 75 "cutlass llm head"
    gpu_busy "$work/cutlass" "$last_wall_ms" "cutlass llm head"
    statuses "$work/cutlass" "cutlass llm head" ;;
  mutants)
    verify_side . "$PWD/.gpu/triton-mut" "$work/mutants" 140 "mutants head"
    gpu_busy "$work/mutants" "$last_wall_ms" "mutants head"
    summary=$out/mutants.txt statuses "$work/mutants" "mutants head" > /dev/null
    head -n 1 "$out/mutants.txt" >> "$summary" ;;
esac
echo "== summary"; cat "$summary"
