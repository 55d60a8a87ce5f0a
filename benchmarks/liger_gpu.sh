#!/usr/bin/env bash
# The call descriptions of outside libraries' Triton kernels (examples/liger: Liger-Kernel
# 0.8.5; examples/fla: flash-linear-attention's fla-core 0.6.0; one kernel a file, several
# files may fill one group) built on CPU, then verified and timed on a GPU in one call.
#   here (CPU, pip install 'ptxds[examples]'):  bash benchmarks/liger_gpu.sh build   -> .gpu/liger/built
#   on the GPU machine (carry .gpu/liger):       bash benchmarks/liger_gpu.sh verify  -> table of groups, statuses, times
# The GPU machine needs neither library: rows carry their PTX, launches and references.
# PTXDS (default: ptxds, or python3 -m ptxds where no ptxds is on PATH), PYTHON (python3),
# ARCHS (build targets, default sm_90a; sm_80,sm_90a for an A100 too) and EXAMPLES (the
# description folders, default "examples/liger examples/fla") may be set.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.gpu/liger
if [ -z "${PTXDS:-}" ]; then
  if command -v ptxds >/dev/null 2>&1; then PTXDS=ptxds; else PTXDS="python3 -m ptxds"; fi
fi
PYTHON=${PYTHON:-python3}
case "${1:-}" in
  build)
    rm -rf "$OUT/built"
    for call in $(for folder in ${EXAMPLES:-examples/liger examples/fla}; do ls "$folder"/*.yaml; done); do
      echo "== $call"
      $PTXDS build --source triton-jit --call "$call" --arch "${ARCHS:-sm_90a}" --out "$OUT/built" --silent
    done
    $PTXDS info "$OUT/built" ;;
  verify)
    rm -rf "$OUT/verified"
    start=$(date +%s)
    $PTXDS verify "$OUT/built" --out "$OUT/verified"
    echo "verify took $(( $(date +%s) - start )) s"
    $PYTHON - "$OUT/verified" <<'PY'
import collections
import sys
from dataset_spec.store.dataset import Dataset
rows = sorted(Dataset.open(sys.argv[1]).records(), key=lambda r: (r.group_id, r.name, r.arch, r.time_us_median or 0))
print(f"{'group':62} {'kernel':34} {'arch':7} {'status':14} {'time_us':>9}  message")
for r in rows:
    t = f"{r.time_us_median:9.2f}" if r.time_us_median else " " * 9
    group = r.group_id.removeprefix("triton-jit/")
    print(f"{group[:62]:62} {r.name[:34]:34} {r.arch:7} {r.status:14} {t}  {(r.status_message or '')[:80]}")
for library in sorted({r.group_id.split("/")[1] for r in rows}):
    mine = [r for r in rows if r.group_id.split("/")[1] == library]
    by_status = collections.Counter(r.status for r in mine)
    groups = collections.defaultdict(set)
    for r in mine:
        groups[r.group_id].add(r.status)
    # a kernel that does not compile under the pinned Triton stays build_failed (KERNELS.md)
    ran = [s - {"build_failed"} for s in groups.values()]
    passed = sum(1 for s in ran if s and s <= {"passed", "passed_nondeterministic"})
    print(f"\n{library}: {len(mine)} rows in {len(groups)} groups, {len({r.name for r in mine})} kernels: "
          + ", ".join(f"{n} {s}" for s, n in by_status.most_common())
          + f"; {passed} of {sum(1 for s in ran if s)} groups with rows to run passed in every row")
PY
    ;;
  *) echo "usage: bash benchmarks/liger_gpu.sh build|verify" >&2; exit 2 ;;
esac
