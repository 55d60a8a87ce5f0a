#!/usr/bin/env bash
# This session's GPU calls, one phase per call, from the repository root of the copy the
# machine gets. The checkout of the commit under test is a clean worktree in .gpucall/head; the
# datasets (built on the CPU machine) and the main of this session's start (.gpucall/data/main0,
# d5c5852) lie beside it in .gpucall/data.
#   liger   the 23 Liger/fla groups (67 rows) verified by d5c5852 and by the head, each with an
#           empty references cache and then again with the cache (and the functions' routes)
#           kept (issue 40's custom references)
#   liger2  the same groups by 93f8310 (the head of call 1) and by the head, after a warm-up run,
#           with the references cache and the routes kept (the draws ahead of the preparation)
#   v4      the adversarial v4 suite, the racecheck GPU tests and the custom-reference GPU tests
# Usage: bash docs/runs/run-103.sh PHASE OUTDIR
set -uo pipefail
phase=$1; out=$2
cd .gpucall/head
source benchmarks/gpu_call_prelude.sh

routes() {  # REFERENCES_CACHE LABEL
  python3 - "$1" "$2" <<'PY' | tee -a "$summary"
import collections, json, pathlib, sys
found = [json.loads(p.read_text()) for p in (pathlib.Path(sys.argv[1]) / "verdicts").glob("*.json")]
print(sys.argv[2], "functions by route:", dict(collections.Counter(v.get("route", "?") or "host" for v in found)))
for v in found:
    if not v.get("route"):
        print("  host:", v.get("reason", "")[:220])
PY
}

case "$phase" in
  liger)
    for round in fresh kept; do
      PTXDS_REFERENCES_CACHE=$work/refs-main0 verify_side .gpu/main0 "$PWD/.gpu/liger-rest" "$work/liger-main0-$round" 150 "liger main0 $round"
      PTXDS_REFERENCES_CACHE=$work/refs-head verify_side . "$PWD/.gpu/liger-rest" "$work/liger-head-$round" 150 "liger head $round"
    done
    statuses "$work/liger-main0-fresh" "liger+fla main0 fresh"
    statuses "$work/liger-head-fresh" "liger+fla head fresh"
    statuses "$work/liger-head-kept" "liger+fla head kept"
    routes "$work/refs-head" "head"
    python3 benchmarks/compare_verified.py "$work/liger-main0-kept" "$work/liger-head-kept" --label liger 2>&1 | tee -a "$summary" ;;
  liger2)
    # one warm-up run fills the references cache, the functions' routes and CuPy's kernel
    # cache; then 93f8310 (.gpucall/data/head0) and the head, both with them kept, in turn
    export PTXDS_REFERENCES_CACHE=$work/refs-shared
    verify_side . "$PWD/.gpu/liger-rest" "$work/liger-warm" 150 "liger head warm-up"
    verify_side .gpu/head0 "$PWD/.gpu/liger-rest" "$work/liger-head0" 130 "liger 93f8310 kept"
    verify_side . "$PWD/.gpu/liger-rest" "$work/liger-new1" 130 "liger head kept #1"
    verify_side . "$PWD/.gpu/liger-rest" "$work/liger-new2" 130 "liger head kept #2"
    statuses "$work/liger-new1" "liger+fla head kept"
    python3 benchmarks/compare_verified.py "$work/liger-head0" "$work/liger-new1" --label liger 2>&1 | tee -a "$summary" ;;
  v4)
    bash benchmarks/gpu_tests.sh "$work/tests" 330 tests/e2e/test_adversarial_v4_gpu.py
    bash benchmarks/gpu_tests.sh "$work/tests" 150 tests/verify/test_sanitize_gpu.py tests/verify/test_verify_v3_gpu.py \
      tests/verify/test_custom_on_device.py tests/verify/test_custom_reference.py
    cp "$work/tests/table.txt" "$summary"
    for log in "$work"/tests/*.log; do echo "==== $log"; grep -v CudaIPCTypes "$log" | tail -n 120; done > "$out/tests.log" ;;
esac
echo "== summary"; cat "$summary"
