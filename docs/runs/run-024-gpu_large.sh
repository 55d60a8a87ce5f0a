#!/usr/bin/env bash
# Verify large groups within a wall-clock allowance, resuming where an earlier call stopped,
# and print each result's per-group table with the stage seconds of every verify call.
# Usage: docs/runs/run-024-gpu_large.sh OUTDIR SECONDS DATASET[=GROUP_GLOB] ...
#   The verified rows end in OUTDIR/verified.tar.gz; unpacked into .gpu-v/ and carried,
#   a later call resumes from them (rows already in .gpu-v/<name> are skipped).
set -uo pipefail
out=${1:?usage: docs/runs/run-024-gpu_large.sh OUTDIR SECONDS DATASET[=GROUP_GLOB] ...}; shift
allowance=${1:?seconds}; shift
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
deadline=$(( $(date +%s) + allowance ))
mkdir -p "$out/verified"
for spec in "$@"; do
  ds=${spec%%=*}; glob=""; [ "$spec" != "$ds" ] && glob=${spec#*=}
  name=$(echo "$ds" | sed 's#^\.gpu/##; s#/#-#g')
  dest="$out/verified/$name"
  [ -d ".gpu-v/$name" ] && [ ! -d "$dest" ] && cp -r ".gpu-v/$name" "$dest"
  left=$(( deadline - $(date +%s) ))
  if [ "$left" -lt 30 ]; then echo "== $ds ${glob:+($glob) }skipped: allowance spent"; continue; fi
  echo "== ptxds verify $ds ${glob:+--groups '$glob' }(up to $left s)"
  start=$(date +%s)
  timeout "$left" python3 -m ptxds verify "$ds" --out "$dest" ${glob:+--groups "$glob"} --silent 2>&1 \
    | grep -v "^  " | tee -a "$out/verify.log"
  echo "$name ${glob}: $(( $(date +%s) - start )) s wall" | tee -a "$out/verify.log"
done
for v in "$out"/verified/*/; do
  echo "== $(basename "$v")"
  python3 benchmarks/tvm_groups.py "$v"
done 2>&1 | tee "$out/tables.md"
tar -czf "$out/verified.tar.gz" -C "$out" verified && rm -rf "$out/verified"
