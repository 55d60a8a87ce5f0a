#!/usr/bin/env bash
# GPU call: the ordering-probe and coverage GPU tests, the mutant kill rate of the mixed
# suite (docs/runs/run-060-gpu_wave4.sh), and the cross-source dataset verified again without
# timing for its pairs across sources (benchmarks/cross_pairs.py), packed into OUTDIR.
# Usage: docs/runs/run-060-gpu_wave5.sh OUTDIR CROSS_SOURCE_DATASET
set -uo pipefail
out=${1:?usage: docs/runs/run-060-gpu_wave5.sh OUTDIR CROSS_SOURCE_DATASET}; cross=${2:?}
mkdir -p "$out"
bash docs/runs/run-060-gpu_wave4.sh "$out/a"
t0=$(date +%s)
timeout 200 python3 -m ptxds verify "$cross" --out "$out/cross" --no-timing --silent > "$out/cross.log" 2>&1
echo "===== cross-source pairs ($(( $(date +%s) - t0 )) s, $(grep -m1 'status counts' "$out/cross.log"))"
python3 benchmarks/cross_pairs.py "$out/cross"
tar czf "$out/cross.tgz" -C "$out" cross && rm -rf "$out/cross"
