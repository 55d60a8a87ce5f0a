#!/usr/bin/env bash
# This session's GPU calls, one phase per call, from the repository root of the copy the
# machine gets. The checkout of the commit under test is a clean worktree in .gpucall/head; the
# datasets (built on the CPU machine) and the verifier before v4 (.gpucall/data/base, 9272e7d)
# lie beside it in .gpucall/data.
#   probe   fla's chunk_local_cumsum_vector group (issue 39's last 6 rows); what racecheck's
#           cost scales with (sampled blocks, processes) on the CUTLASS llm slice and the Triton
#           suite (benchmarks/racecheck_cost.py)
#   v4      the adversarial v4 suite and the racecheck GPU tests
#   wall    the Triton suite and a CUTLASS llm slice verified by 9272e7d and by the head, side
#           by side, each twice in turn (issue 37's 1.3x)
#   liger   custom references on the device (CuPy route test), then the 23 Liger/fla groups of
#           run 95 with each stage's seconds (issue 40's custom references)
# Usage: bash docs/runs/run-096.sh PHASE OUTDIR
set -uo pipefail
phase=$1; out=$2
cd .gpucall/head
source benchmarks/gpu_call_prelude.sh

case "$phase" in
  probe)
    verify_side . "$PWD/.gpu/fla-vector" "$work/fla" 120 "fla cumsum_vector head"
    statuses "$work/fla" "fla chunk_local_cumsum_vector"
    timeout 300 python3 benchmarks/racecheck_cost.py "$PWD/.gpu/cutlass-llm" --settings 8x4,8x1,2x1,1x1,2x4 \
      2>&1 | grep -v CudaIPCTypes | tee "$out/racecheck-cutlass.txt" | tail -n 8 | tee -a "$summary"
    timeout 120 python3 benchmarks/racecheck_cost.py "$PWD/.gpu/triton" --settings 8x4,2x4 \
      2>&1 | grep -v CudaIPCTypes | tee "$out/racecheck-triton.txt" | tail -n 5 | tee -a "$summary" ;;
  v4)
    bash benchmarks/gpu_tests.sh "$work/tests" 330 tests/e2e/test_adversarial_v4_gpu.py
    bash benchmarks/gpu_tests.sh "$work/tests" 120 tests/verify/test_sanitize_gpu.py tests/verify/test_verify_v3_gpu.py
    cp "$work/tests/table.txt" "$summary"
    for log in "$work"/tests/*.log; do echo "==== $log"; grep -v CudaIPCTypes "$log" | tail -n 120; done > "$out/tests.log" ;;
  wall)
    # each side twice, alternating, so neither gets the other's warm caches alone
    for name in triton cutlass-llm; do
      for round in 1 2; do
        verify_side .gpu/base "$PWD/.gpu/$name" "$work/$name-base$round" 120 "$name pre-v4 #$round"
        verify_side . "$PWD/.gpu/$name" "$work/$name-new$round" 120 "$name head #$round"
      done
      python3 benchmarks/compare_verified.py "$work/$name-base2" "$work/$name-new2" --label "$name" 2>&1 | tee -a "$summary"
    done ;;
  liger)
    bash benchmarks/gpu_tests.sh "$work/tests" 120 tests/verify/test_custom_on_device.py tests/verify/test_custom_reference.py
    cp "$work/tests/table.txt" "$summary"
    for log in "$work"/tests/*.log; do echo "==== $log"; grep -v CudaIPCTypes "$log" | tail -n 60; done > "$out/tests.log"
    verify_side . "$PWD/.gpu/liger-rest" "$work/liger" 330 "liger+fla (23 groups) head"
    statuses "$work/liger" "liger+fla"
    python3 - <<'PY' | tee -a "$summary"
import collections, json
from ptx_tools.ptx_cache import cache_folder
from verify.trials import reference_cache
found = [json.loads(p.read_text()) for p in (cache_folder(reference_cache.CACHE_NAME) / "verdicts").glob("*.json")]
print("custom functions by route:", dict(collections.Counter(v.get("route", "?") or "host" for v in found)))
for v in found:
    if not v.get("route"):
        print("  host:", v.get("reason", "")[:220])
PY
    ;;
esac
echo "== summary"; cat "$summary"
