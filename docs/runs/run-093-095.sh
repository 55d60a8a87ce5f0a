#!/usr/bin/env bash
# Runs 93-95, one phase per GPU call, from the repository root of the copy the machine gets.
# The checkout of the commit under test is a clean worktree in .gpucall/head; the datasets and
# the verifier before v4 (.gpucall/data/base, 9272e7d) lie beside it in .gpucall/data, all
# built on the CPU machine.
#   v4        the adversarial v4 suite and the racecheck GPU tests; then the Triton suite and a
#             CUTLASS llm slice verified by 9272e7d and by the head, side by side (issue 37's 1.3x,
#             with racecheck cubins assembled ahead and four racecheck processes per GPU)
#   networks  a seeded sample of the library-model Inductor groups, a seeded sample of the
#             merged Inductor + TVM network-kernel groups, and the Liger/fla kernels, uncapped
#   final     after run 93's missed race (a 256-block member timed out beside three other
#             racecheck processes): the adversarial v4 suite again; the network-kernel sample
#             rebuilt with running variances drawn as magnitudes; the 23 Liger/fla groups run 94
#             left in its cap (.gpucall/data/liger-rest), with each row's GPU seconds and racecheck note
# Usage: bash docs/runs/run-093-095.sh PHASE OUTDIR   (PHASE: v4, networks or final)
set -uo pipefail
phase=$1; out=$2; call_start=$(date +%s)
mkdir -p "$out"
cd .gpucall/head
ln -sfn ../data .gpu
ln -sfn ../../.whl .whl
source benchmarks/gpu_env.sh
[ -z "${PTXDS_CUDA_HOME:-}" ] && [ -x /usr/local/cuda-13.0/bin/nvcc ] && export PTXDS_CUDA_HOME=/usr/local/cuda-13.0
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
    "$(grep 'seconds per stage' "$dest.log" | cut -c1-300)" | tee -a "$summary"
  [ "$rc" = 0 ] || grep -v CudaIPCTypes "$dest.log" | tail -n 6 | tee -a "$summary"
}

statuses() {  # VERIFIED LABEL
  python3 - "$1" "$2" <<'PY' | tee -a "$summary"
import collections, sys
from dataset_spec.store.shards import read_records
rows = read_records(sys.argv[1])
groups = collections.defaultdict(set)
for r in rows:
    groups[r.group_id].add(r.status)
good = {"passed", "passed_nondeterministic"}
print(f"{sys.argv[2]}: {len(rows)} rows in {len(groups)} groups", dict(collections.Counter(r.status for r in rows)),
      f"rows passed {sum(r.status in good for r in rows) / max(1, len(rows)):.1%},",
      f"groups all passed {sum(s <= good for s in groups.values())}")
for r in sorted(rows, key=lambda r: r.group_id):
    if r.status not in good:
        print(f"  {r.group_id[:90]} {r.name[:28]} {r.arch} {r.status} {(r.status_message or '')[:150]}")
PY
}

case "$phase" in
  v4)
    bash benchmarks/gpu_tests.sh "$work/tests" 300 tests/e2e/test_adversarial_v4_gpu.py
    bash benchmarks/gpu_tests.sh "$work/tests" 90 tests/verify/test_sanitize_gpu.py tests/verify/test_verify_v3_gpu.py
    cp "$work/tests/table.txt" "$summary"
    for log in "$work"/tests/*.log; do echo "==== $log"; grep -v CudaIPCTypes "$log" | tail -n 120; done > "$out/tests.log"
    for name in triton cutlass-llm; do
      verify_side .gpu/base "$PWD/.gpu/$name" "$work/$name-base" 120 "$name pre-v4"
      verify_side . "$PWD/.gpu/$name" "$work/$name-new" 120 "$name head"
      python3 benchmarks/compare_verified.py "$work/$name-base" "$work/$name-new" --label "$name" 2>&1 | tee -a "$summary"
    done ;;
  networks)
    start=$(date +%s)
    verify_side . "$PWD/.gpu/indsample2" "$work/ind" 185 "inductor sample head"
    python3 benchmarks/inductor_groups.py "$work/ind" > "$out/inductor-groups.md" 2>&1
    statuses "$work/ind" "inductor library-model sample"
    verify_side . "$PWD/.gpu/netsample" "$work/net" 130 "network-kernels sample head"
    python3 benchmarks/inductor_groups.py "$work/net" > "$out/network-groups.md" 2>&1
    statuses "$work/net" "network-kernels sample"
    verify_side . "$PWD/.gpu/liger" "$work/liger" 220 "liger+fla head"
    python3 benchmarks/inductor_groups.py "$work/liger" > "$out/liger-groups.md" 2>&1
    statuses "$work/liger" "liger+fla"
    echo "networks phase: $(( $(date +%s) - start )) s" | tee -a "$summary" ;;
  final)
    bash benchmarks/gpu_tests.sh "$work/tests" 290 tests/e2e/test_adversarial_v4_gpu.py
    cp "$work/tests/table.txt" "$summary"
    for log in "$work"/tests/*.log; do echo "==== $log"; grep -v CudaIPCTypes "$log" | tail -n 70; done > "$out/tests.log"
    verify_side . "$PWD/.gpu/netsample2" "$work/net" 125 "network-kernels sample (rebuilt) head"
    python3 benchmarks/inductor_groups.py "$work/net" > "$out/network-groups.md" 2>&1
    statuses "$work/net" "network-kernels sample (rebuilt)"
    left=$(( 560 - $(date +%s) + call_start ))
    verify_side . "$PWD/.gpu/liger-rest" "$work/liger" "$(( left > 30 ? left : 30 ))" "liger+fla (not in run 94) head"
    python3 benchmarks/inductor_groups.py "$work/liger" > "$out/liger-groups.md" 2>&1
    statuses "$work/liger" "liger+fla"
    python3 - "$work/liger" <<'PY' | tee "$out/liger-rows.txt" | tail -n 40
import sys
from dataset_spec.store.shards import read_records
rows = sorted(read_records(sys.argv[1]), key=lambda r: -((r.provenance or {}).get("verify") or {}).get("gpu_seconds", 0))
print("slowest verified rows (GPU-thread seconds, racecheck note):")
for r in rows:
    v = (r.provenance or {}).get("verify") or {}
    print(f"  {v.get('gpu_seconds', 0):7.2f} s {r.group_id[:60]:60} {r.name[:30]:30} {r.status:12} {str(v.get('racecheck'))[:90]}")
PY
    ;;
esac
echo "== summary"; cat "$summary"
