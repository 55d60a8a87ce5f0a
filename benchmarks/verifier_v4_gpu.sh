#!/usr/bin/env bash
# Verifier v4 on a GPU machine, in one command: the adversarial suites and the GPU tests of
# the checks it changed, then the default Triton suite and a CUTLASS `llm` slice verified by
# the verifier before v4 (a worktree of that commit in .gpu/base) and by this checkout, side
# by side (wall seconds, statuses row by row, time ratios, sol_ratio). Datasets are built on a
# CPU machine into .gpu/triton and .gpu/cutlass-llm (docs/runs/ has the commands).
# Usage: benchmarks/verifier_v4_gpu.sh OUTDIR [tests|compare|all] [TEST_FILE...]
set -uo pipefail
out=${1:?usage: verifier_v4_gpu.sh OUTDIR [tests|compare|all] [TEST_FILE...]}
phase=${2:-all}; shift 2 || shift $#
mkdir -p "$out"
source benchmarks/gpu_env.sh
[ -z "${PTXDS_CUDA_HOME:-}" ] && [ -x /usr/local/cuda-13.0/bin/nvcc ] && export PTXDS_CUDA_HOME=/usr/local/cuda-13.0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
work=/tmp/ptxds-v4; rm -rf "$work"; mkdir -p "$work"
summary="$out/summary.txt"; : > "$summary"

if [ "$phase" != compare ]; then
  files=("$@")
  [ ${#files[@]} -eq 0 ] && files=(tests/e2e/test_adversarial_v4_gpu.py tests/e2e/test_adversarial_v3_gpu.py
                                   tests/e2e/test_adversarial_gpu.py tests/verify/test_timing.py)
  bash benchmarks/gpu_tests.sh "$work/tests" "${TEST_LIMIT:-300}" "${files[@]}"
  cat "$work/tests/table.txt" >> "$summary"
  for log in "$work"/tests/*.log; do echo "==== $log"; grep -v CudaIPCTypes "$log" | tail -n 150; done > "$out/tests.log"
fi

if [ "$phase" != tests ]; then
  for name in triton cutlass-llm; do
    ds=.gpu/$name
    [ -d "$ds" ] || continue
    for side in base new; do
      if [ "$side" = base ]; then root=.gpu/base; else root=.; fi
      t0=$(date +%s%N)
      (cd "$root" && PYTHONPATH=$PWD:/tmp/ptxds-site timeout "${VERIFY_LIMIT:-200}" python3 -m ptxds verify \
        "$OLDPWD/$ds" --out "$work/$name-$side" --silent) > "$work/verify-$name-$side.log" 2>&1
      rc=$?
      t1=$(date +%s%N)
      printf "verify %-12s %-4s rc=%s wall %5d ms  %s\n" "$name" "$side" "$rc" "$(( (t1 - t0) / 1000000 ))" \
        "$(grep 'seconds per stage' "$work/verify-$name-$side.log" | cut -c1-220)" | tee -a "$summary"
      [ "$rc" = 0 ] || grep -v CudaIPCTypes "$work/verify-$name-$side.log" | tail -n 20 >> "$summary"
    done
    python3 benchmarks/compare_verified.py "$work/$name-base" "$work/$name-new" --label "$name" 2>&1 \
      | tee -a "$summary"
  done
fi
echo "== summary"; cat "$summary"
