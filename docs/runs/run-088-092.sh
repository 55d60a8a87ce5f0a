#!/usr/bin/env bash
# Runs 88-92, one phase per GPU call, from the repository root of the copy the machine gets.
# The checkout of the commit under test is a clean worktree in .gpucall/head; the datasets,
# the verifier before v4 (.gpucall/data/base, 9272e7d) and before the architecture step
# (.gpucall/data/arch, 36115e5) lie beside it in .gpucall/data, all built on the CPU machine.
#   v4        the verifier-v4 GPU tests, then the Triton suite and a CUTLASS llm slice
#             verified by 9272e7d and by the head, side by side (issue 37's 1.3x)
#   networks  Liger/fla kernels and a seeded sample of the library-model Inductor groups
#   identity  one built set each of Triton, mutants, CUTLASS, Mirage and handhack, verified
#             by 36115e5 and by the head; statuses compared row by row
#   tests     the other GPU test files, one time limit each
#   recheck   after the fixes of runs 88-89: the two GPU tests that failed, the Inductor
#             sample again, and the Liger groups that were trivial_reference or wrong_result
# Usage: bash docs/runs/run-088-090.sh PHASE OUTDIR
set -uo pipefail
phase=$1; out=$2
mkdir -p "$out"
cd .gpucall/head
ln -sfn ../data .gpu
ln -sfn ../../.whl .whl
source benchmarks/gpu_env.sh
[ -z "${PTXDS_CUDA_HOME:-}" ] && [ -x /usr/local/cuda-13.0/bin/nvcc ] && export PTXDS_CUDA_HOME=/usr/local/cuda-13.0
export PTXDS_MIRAGE_DIR=$PWD/.gpu/mugraphs
echo "head $(cat ../HEAD_COMMIT 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
work=/tmp/ptxds-calls; mkdir -p "$work"
summary=$out/summary.txt

verify_side() {  # ROOT DATASET OUTDIR LIMIT LABEL
  local root=$1 ds=$2 dest=$3 limit=$4 label=$5 t0 t1 rc
  t0=$(date +%s%N)
  (cd "$root" && PYTHONPATH=$PWD:/tmp/ptxds-site timeout "$limit" python3 -m ptxds verify "$ds" --out "$dest" --silent) \
    > "$dest.log" 2>&1
  rc=$?; t1=$(date +%s%N)
  printf "%-22s rc=%-3s wall %6d ms  %s\n" "$label" "$rc" "$(( (t1 - t0) / 1000000 ))" \
    "$(grep 'seconds per stage' "$dest.log" | cut -c1-200)" | tee -a "$summary"
  [ "$rc" = 0 ] || grep -v CudaIPCTypes "$dest.log" | tail -n 6 | tee -a "$summary"
}

case "$phase" in
  v4)
    bash benchmarks/gpu_tests.sh "$work/tests" 330 tests/e2e/test_adversarial_v4_gpu.py
    bash benchmarks/gpu_tests.sh "$work/tests" 100 tests/verify/test_timing.py tests/verify/test_sanitize_gpu.py \
      tests/verify/test_racecheck_server.py
    cp "$work/tests/table.txt" "$summary"
    for log in "$work"/tests/*.log; do echo "==== $log"; grep -v CudaIPCTypes "$log" | tail -n 120; done > "$out/tests.log"
    for name in triton cutlass-llm; do
      verify_side .gpu/base "$PWD/.gpu/$name" "$work/$name-base" 150 "$name pre-v4"
      verify_side . "$PWD/.gpu/$name" "$work/$name-new" 150 "$name head"
      python3 benchmarks/compare_verified.py "$work/$name-base" "$work/$name-new" --label "$name" 2>&1 | tee -a "$summary"
    done ;;
  networks)
    start=$(date +%s)
    verify_side . "$PWD/.gpu/liger/built" "$work/liger" 230 "liger+fla head"
    python3 benchmarks/inductor_groups.py "$work/liger" > "$out/liger-groups.md" 2>&1
    python3 - "$work/liger" <<'PY' | tee -a "$summary"
import collections, sys
from dataset_spec.store.shards import read_records
rows = read_records(sys.argv[1])
print("liger/fla rows verified:", len(rows), dict(collections.Counter(r.status for r in rows)))
for r in sorted(rows, key=lambda r: r.group_id):
    if r.status not in ("passed", "passed_nondeterministic"):
        print(f"  {r.group_id[:70]} {r.name[:30]} {r.status} {(r.status_message or '')[:150]}")
PY
    verify_side . "$PWD/.gpu/indsample" "$work/ind" 230 "inductor sample head"
    python3 benchmarks/inductor_groups.py "$work/ind" > "$out/inductor-groups.md" 2>&1
    python3 - "$work/ind" <<'PY' | tee -a "$summary"
import collections, sys
from dataset_spec.store.shards import read_records
rows = read_records(sys.argv[1])
print("inductor rows verified:", len(rows), "in", len({r.group_id for r in rows}), "groups",
      dict(collections.Counter(r.status for r in rows)))
for r in sorted(rows, key=lambda r: r.group_id):
    if r.status not in ("passed", "passed_nondeterministic"):
        print(f"  {r.group_id[9:90]} {r.arch} {r.status} {(r.status_message or '')[:150]}")
PY
    echo "networks phase: $(( $(date +%s) - start )) s" | tee -a "$summary" ;;
  identity)
    for set in triton:70 cutlass:40 mirage:45 handhack:45 mutants:45; do
      name=${set%%:*}; limit=${set##*:}
      verify_side .gpu/arch "$PWD/.gpu/ident-base/$name" "$work/id-$name-base" "$limit" "$name 36115e5"
      verify_side . "$PWD/.gpu/ident-head/$name" "$work/id-$name-head" "$limit" "$name head"
      python3 benchmarks/compare_verified.py "$work/id-$name-base" "$work/id-$name-head" --label "$name" 2>&1 \
        | tee -a "$summary"
    done ;;
  recheck)
    bash benchmarks/gpu_tests.sh "$work/re" 60 tests/verify/test_sanitize_gpu.py tests/verify/test_verify_v3_gpu.py
    cp "$work/re/table.txt" "$summary"
    for log in "$work"/re/*.log; do echo "==== $log"; grep -v CudaIPCTypes "$log" | tail -n 40; done > "$out/tests.log"
    verify_side . "$PWD/.gpu/indsample" "$work/ind" 120 "inductor sample head"
    python3 benchmarks/inductor_groups.py "$work/ind" > "$out/inductor-groups.md" 2>&1; tail -n 1 "$out/inductor-groups.md" | tee -a "$summary"
    verify_side . "$PWD/.gpu/lg2" "$work/lg2" 75 "liger rechecked"
    python3 benchmarks/inductor_groups.py "$work/lg2" > "$out/liger-groups.md" 2>&1; tail -n 8 "$out/liger-groups.md" | tee -a "$summary" ;;
  tests)
    shift 2
    bash benchmarks/gpu_tests.sh "$work/more" "${TEST_LIMIT:-90}" "$@"
    cp "$work/more/table.txt" "$summary"
    for log in "$work"/more/*.log; do echo "==== $log"; grep -v CudaIPCTypes "$log" | tail -n 60; done > "$out/tests.log" ;;
esac
echo "== summary"; cat "$summary"
