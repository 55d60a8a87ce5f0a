#!/usr/bin/env bash
# Liger-Kernel 0.8.5's call descriptions (examples/liger/*.yaml, one kernel each; several
# files may fill one group) built on CPU, then verified and timed on a GPU in one call.
#   here (CPU, liger-kernel installed):    bash benchmarks/liger_gpu.sh build   -> .gpu/liger/built
#   on the GPU machine (carry .gpu/liger): bash benchmarks/liger_gpu.sh verify  -> table of groups, statuses, times
# PTXDS (default: ptxds, or python3 -m ptxds where no ptxds is on PATH), PYTHON (python3) and
# ARCHS (build targets, default sm_90a; sm_80,sm_90a for an A100 too) may be set.
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
    for call in examples/liger/*.yaml; do
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
from dataset_spec.dataset import Dataset
rows = sorted(Dataset.open(sys.argv[1]).records(), key=lambda r: (r.group_id, r.name, r.arch, r.time_us_median or 0))
print(f"{'group':58} {'kernel':34} {'arch':7} {'status':14} {'time_us':>9}  message")
for r in rows:
    t = f"{r.time_us_median:9.2f}" if r.time_us_median else " " * 9
    group = r.group_id.removeprefix("triton-jit/liger/")
    print(f"{group[:58]:58} {r.name[:34]:34} {r.arch:7} {r.status:14} {t}  {(r.status_message or '')[:80]}")
by_status = collections.Counter(r.status for r in rows)
groups = collections.defaultdict(set)
for r in rows:
    groups[r.group_id].add(r.status)
passed = sum(1 for s in groups.values() if s == {"passed"})
print(f"\n{len(rows)} rows in {len(groups)} groups: " + ", ".join(f"{n} {s}" for s, n in by_status.most_common())
      + f"; {passed} groups with every row passed")
PY
    ;;
  *) echo "usage: bash benchmarks/liger_gpu.sh build|verify" >&2; exit 2 ;;
esac
