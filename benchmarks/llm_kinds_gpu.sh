#!/usr/bin/env bash
# A few CUTLASS families of each new GEMM problem kind (grouped, blockwise-scaled, 2:4 sparse,
# scaled mixed-input, sub-byte, complex) at the `llm` shape set, built on this GPU machine's
# cores and verified; prints the statuses per problem kind and each row that did not pass.
# Usage: benchmarks/llm_kinds_gpu.sh OUTDIR [NAMES_FILE] (default benchmarks/llm_kinds.txt)
set -uo pipefail
out=${1:?usage: llm_kinds_gpu.sh OUTDIR [NAMES_FILE]}; names=${2:-benchmarks/llm_kinds.txt}
mkdir -p "$out"
source benchmarks/gpu_env.sh
python3 -m pip install -q --no-index --no-deps --target /tmp/ptxds-site .whl/nvidia_cutlass-*.whl 2>/dev/null
export PYTHONPATH=/tmp/ptxds-site:$PYTHONPATH
work=/tmp/ptxds-llm-kinds; mkdir -p "$work"
start=$(date +%s)
timeout -s INT -k 20 "${BUILD_BUDGET:-300}" python3 -m ptxds build --source cutlass --family "$(paste -sd, "$names")" \
  --shapes llm --option batch_size=1 --jobs "$(nproc)" --cache "$work/cache" --out "$work/built" --silent 2>&1 | tail -n 4
echo "build: $(( $(date +%s) - start )) s wall on $(nproc) cores"
start=$(date +%s)
timeout "${VERIFY_BUDGET:-280}" python3 -m ptxds verify "$work/built" --out "$work/verified" --silent 2>&1 | grep "status counts"
[ "${PIPESTATUS[0]}" = 124 ] && echo "verify stopped at VERIFY_BUDGET: the table holds the groups finished (a call with the same WORK resumes)"
echo "verify: $(( $(date +%s) - start )) s wall"
python3 - "$work/verified" <<'PY' | tee "$out/llm-kinds.md"
import collections, sys
from dataset_spec.store.shards import read_records
rows = read_records(sys.argv[1])
by_kind = collections.defaultdict(collections.Counter)
families = collections.defaultdict(set)
for r in rows:
    by_kind[r.problem.op][r.status] += 1
    families[r.problem.op].add(r.name)
print("| problem kind | kernels | rows | statuses |\n|---|---|---|---|")
for op in sorted(by_kind):
    counts = ", ".join(f"{k} {v}" for k, v in sorted(by_kind[op].items()))
    print(f"| {op} | {len(families[op])} | {sum(by_kind[op].values())} | {counts} |")
for name in sorted({r.name for r in rows}):
    mine = collections.Counter(r.status for r in rows if r.name == name)
    print(f"  {name[:110]}: " + ", ".join(f"{k} {v}" for k, v in sorted(mine.items())))
for r in rows:
    if r.status not in ("passed", "not_applicable"):
        print(f"  {r.status}: {r.name} {r.group_id}: {r.status_message[:300]}")
PY
