#!/usr/bin/env bash
# One GPU call for the verifier-v3 wave: the GPU tests, then `ptxds verify` of the carried
# default Triton suite with this checkout and with an earlier checkout carried in
# .gpu/old (alternating, two rounds each) for the speed comparison, then the carried
# Triton dump dataset. Prints a short table last.
# Usage: docs/runs/run-036-gpu_wave.sh OUTDIR [tests|speed|mirage|datasets|all]
#   datasets: ptxds verify of each other carried dataset folder given in $WAVE_DATASETS
#   mirage: the mutant kill rate of .gpu/triton-mut (ptxds rewrite of the Triton suite), then
#           ptxds verify of the carried Mirage datasets (.gpu/mirage*, muGraphs in .gpu/mugraphs)
set -uo pipefail
out=${1:?usage: docs/runs/run-036-gpu_wave.sh OUTDIR [tests|speed|mirage|datasets|all]}
phase=${2:-all}
mkdir -p "$out"
source benchmarks/gpu_env.sh
[ -z "${PTXDS_CUDA_HOME:-}" ] && [ -x /usr/local/cuda-13.0/bin/nvcc ] && export PTXDS_CUDA_HOME=/usr/local/cuda-13.0
work=/tmp/ptxds-wave; rm -rf "$work"; mkdir -p "$work"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
[ -d .gpu/mugraphs ] && export PTXDS_MIRAGE_DIR=$PWD/.gpu/mugraphs
if [ "$phase" = tests ] || [ "$phase" = all ]; then
  start=$(date +%s)
  timeout 400 python3 -m pytest -m gpu -q -rs -p no:cacheprovider tests 2>&1 | tee "$out/pytest-gpu.log" | tail -n 60
  echo "gpu tests: $(( $(date +%s) - start )) s" | tee -a "$out/table.txt"
  grep -E "^(FAILED|ERROR)|passed|failed" "$out/pytest-gpu.log" | tail -n 25 >> "$out/table.txt"
fi
[ "$phase" = tests ] && { cat "$out/table.txt"; exit 0; }
if [ "$phase" = datasets ]; then
  for ds in ${WAVE_DATASETS:-}; do
    [ -d "$ds" ] || continue
    name=$(echo "${ds#.gpu/}" | tr '/' '_'); t0=$(date +%s)
    timeout ${WAVE_LIMIT:-200} python3 -m ptxds verify "$ds" --out "$work/$name" --silent > "$out/verify-$name.log" 2>&1
    echo "$name: $(( $(date +%s) - t0 )) s, $(grep -m1 'status counts' "$out/verify-$name.log")" | tee -a "$out/table.txt"
    grep -E "^  " "$out/verify-$name.log" | cut -c1-220 >> "$out/table.txt"
    grep -A${WAVE_ACROSS_LINES:-12} "### Across sources" "$work/$name/README.md" 2>/dev/null >> "$out/table.txt"
    python3 benchmarks/failed_rows.py "$work/$name" 2>/dev/null | head -n 20 | cut -c1-400 >> "$out/table.txt"
  done
  echo "===== table"; cat "$out/table.txt"; exit 0
fi
if [ "$phase" = mirage ] && [ -d .gpu/triton-mut ]; then
  t0=$(date +%s)
  timeout 300 python3 benchmarks/mutant_kill_rate.py .gpu/triton-mut --work "$work/mut" > "$out/mutants.log" 2>&1
  echo "mutant kill rate: $(( $(date +%s) - t0 )) s" | tee -a "$out/table.txt"
  tail -n 30 "$out/mutants.log" >> "$out/table.txt"
fi
if [ "$phase" = mirage ]; then
  for ds in .gpu/mirage*; do
    [ -d "$ds" ] || continue
    name=$(basename "$ds")
    t0=$(date +%s)
    python3 -m ptxds verify "$ds" --out "$work/$name" --silent > "$out/verify-$name.log" 2>&1
    echo "$name: $(( $(date +%s) - t0 )) s, $(grep -m1 'status counts' "$out/verify-$name.log")" | tee -a "$out/table.txt"
    grep -E "^  mirage" "$out/verify-$name.log" | cut -c1-220 >> "$out/table.txt"
  done
  echo "===== table"; cat "$out/table.txt"; exit 0
fi
verify_once() {  # label, checkout folder to run from, dataset (absolute)
  # `python -m ptxds` puts the working folder first on sys.path: run each checkout from its own folder
  local t0=$(date +%s%N)
  (cd "$2" && PYTHONPATH=$2:/tmp/ptxds-site python3 -m ptxds verify "$3" --out "$work/$1" --silent) > "$out/verify-$1.log" 2>&1
  local t1=$(date +%s%N)
  printf "%-14s %6.1f s  %s\n" "$1" "$(( (t1 - t0) / 1000000 ))e-3" "$(grep -m1 'status counts' "$out/verify-$1.log")" | tee -a "$out/table.txt"
}
if [ -d .gpu/triton ] && [ -d .gpu/old ]; then
  for round in 1 2; do
    verify_once "old-$round" "$PWD/.gpu/old" "$PWD/.gpu/triton"
    verify_once "new-$round" "$PWD" "$PWD/.gpu/triton"
  done
  grep -m1 "seconds per stage" "$out/verify-new-2.log" >> "$out/table.txt"
  grep -m1 "seconds per stage" "$out/verify-old-2.log" | sed 's/^/old: /' >> "$out/table.txt"
fi
[ -d .gpu/triton-dump ] && verify_once "triton-dump" "$PWD" "$PWD/.gpu/triton-dump"
[ -d .gpu/triton-dump ] && cat "$out/verify-triton-dump.log" | tail -n 8 >> "$out/table.txt"
echo "===== table"; cat "$out/table.txt"
