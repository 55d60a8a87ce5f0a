# Sourced by a GPU call's script (docs/runs/run-*.sh) after benchmarks/gpu_env.sh: verify one
# dataset with a given checkout and say how long it took and where the time went
# (verify_side), and print a verified dataset's statuses with every row that did not pass
# (statuses), and how busy the GPU's kernels kept it (gpu_busy). All append to "$summary",
# which the calling script sets; verify_side leaves its wall milliseconds in $last_wall_ms.

verify_side() {  # ROOT DATASET OUTDIR LIMIT LABEL [VERIFY FLAGS...]
  local root=$1 ds=$2 dest=$3 limit=$4 label=$5 t0 t1 rc
  shift 5
  t0=$(date +%s%N)
  (cd "$root" && PYTHONPATH=$PWD:/tmp/ptxds-site timeout "$limit" python3 -m ptxds verify "$ds" --out "$dest" --silent "$@") \
    > "$dest.log" 2>&1
  rc=$?; t1=$(date +%s%N); last_wall_ms=$(( (t1 - t0) / 1000000 ))
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

gpu_busy() {  # VERIFIED WALL_MS LABEL: kernel seconds (timed samples, median x samples, and the
  # checks' kernels from the log's run.kernel stage) over the wall
  python3 - "$1" "$2" "$3" "$1.log" <<'PY' | tee -a "$summary"
import re, sys
from pathlib import Path
from dataset_spec.store.shards import read_records
rows = read_records(sys.argv[1])
timed = sum((r.time_us_median or 0) * (r.time_samples or 0) for r in rows) / 1e6
log = Path(sys.argv[4]).read_text() if Path(sys.argv[4]).exists() else ""
found = re.search(r"run\.kernel ([0-9.]+)", log)
checks = float(found.group(1)) if found else 0.0
wall = int(sys.argv[2]) / 1000
print(f"{sys.argv[3]}: kernels {timed:.1f} s timed + {checks:.1f} s checks over {wall:.1f} s wall: "
      f"GPU busy {(timed + checks) / wall:.1%}")
PY
}
