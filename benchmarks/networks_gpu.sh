#!/usr/bin/env bash
# Verify a merged dataset of functions of networks (Inductor kernels and TVM tasks of the same
# model blocks, docs/tvm-models.md) on the GPU and print its statuses per group
# (benchmarks/inductor_groups.py) and how the groups with members of both sources did. Built on a
# CPU machine first and carried as .gpu/networks:
#   ptxds capture --source inductor --models gpt2_block,llama_layer,vit_block,bert_block --out .gpu/networks-capture
#   ptxds build --source inductor --captured .gpu/networks-capture --out .gpu/networks-inductor
#   ptxds build --source tvm-models --models gpt2_block,llama_layer,vit_block,bert_block --out .gpu/networks-tvm
#   ptxds merge .gpu/networks-inductor .gpu/networks-tvm --out .gpu/networks
# or, TVM members of each captured kernel's own function (docs/tvm-models.md, --inductor-capture):
#   ptxds build --source inductor --captured CAPTURE --arch sm_90a --out .gpu/kernels-inductor
#   ptxds build --source tvm-models --inductor-capture CAPTURE --schedules 2 --arch sm_90a --out .gpu/kernels-tvm
#   ptxds merge .gpu/kernels-inductor .gpu/kernels-tvm --out .gpu/networks-kernels
# Usage: benchmarks/networks_gpu.sh [DATASET] [OUTDIR]   (defaults .gpu/networks, /tmp/ptxds-networks)
#   env: VERIFY_TIMEOUT (s, default 540)
set -uo pipefail
dataset=${1:-.gpu/networks}; out=${2:-/tmp/ptxds-networks}
[ -f "$dataset/README.md" ] || { echo "no built dataset at $dataset (build it as this script's header says)"; exit 2; }
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p "$out"
start=$(date +%s)
# verify resumes: a second call with the same OUTDIR on a warm machine goes on where it stopped
timeout "${VERIFY_TIMEOUT:-540}" python3 -m ptxds verify "$dataset" --out "$out/verified" --silent 2>&1 \
  | grep -v "^  " | tail -n 20
echo "verify: $(( $(date +%s) - start )) s wall"
python3 benchmarks/inductor_groups.py "$out/verified" > "$out/groups.md"; tail -n 1 "$out/groups.md"
python3 - "$out/verified" <<'PY'
import sys
from collections import Counter, defaultdict
from dataset_spec.store.shards import read_records
groups = defaultdict(list)
for r in read_records(sys.argv[1]):
    groups[r.group_id].append(r)
both = {g: rs for g, rs in groups.items() if len({r.source for r in rs}) > 1}
print(f"{len(groups)} groups, {len(both)} with members of several sources")
for g, rs in sorted(both.items()):
    by = Counter((r.source, r.status) for r in rs)
    print(f"  {g}: " + ", ".join(f"{s} {st} {n}" for (s, st), n in sorted(by.items())))
PY
sed -n '/^## Functions from networks/,/^## Columns/p' "$out/verified/README.md" | head -n 30
