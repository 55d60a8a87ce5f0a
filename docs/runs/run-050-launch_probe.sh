#!/bin/bash
# Probe every row of the given datasets alone (benchmarks/launch_probe.py), then rerun the
# first rows that fail under compute-sanitizer memcheck to name the faulting access.
# Usage: bash docs/runs/run-050-launch_probe.sh OUTDIR MODES DATASET [DATASET ...]
set -u
out=$1; modes=$2; shift 2
mkdir -p "$out"
export PYTHONPATH=${PYTHONPATH:-.}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for dataset in "$@"; do
  name=$(basename "$dataset")
  timeout 280 python3 benchmarks/launch_probe.py "$dataset" --modes "$modes" --timeout 40 | tee "$out/probe_$name.txt"
  for row in $(grep -E '"error"|no result|timed out' "$out/probe_$name.txt" | awk '{print $2}' | sort -u | head -2); do
    echo "== memcheck $row"
    timeout 150 python3 benchmarks/launch_probe.py "$dataset" --match "$row" --modes plain --memcheck --timeout 120 \
      | tee -a "$out/memcheck_$name.txt"
  done
done
