#!/usr/bin/env bash
# One GPU call for the verifier-v3 wave: the GPU tests, then `ptxds verify` of the carried
# default Triton suite with this checkout and with an earlier checkout carried in
# .gpu/old (alternating, two rounds each) for the speed comparison, then the carried
# Triton dump dataset. Prints a short table last.
# Usage: benchmarks/gpu_wave.sh OUTDIR [tests|speed|all]
set -uo pipefail
out=${1:?usage: gpu_wave.sh OUTDIR [tests|speed|all]}
phase=${2:-all}
mkdir -p "$out"
source benchmarks/gpu_env.sh
[ -z "${PTXDS_CUDA_HOME:-}" ] && [ -x /usr/local/cuda-13.0/bin/nvcc ] && export PTXDS_CUDA_HOME=/usr/local/cuda-13.0
work=/tmp/ptxds-wave; rm -rf "$work"; mkdir -p "$work"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
if [ "$phase" != speed ]; then
  start=$(date +%s)
  timeout 400 python3 -m pytest -m gpu -q -rs -p no:cacheprovider tests 2>&1 | tee "$out/pytest-gpu.log" | tail -n 60
  echo "gpu tests: $(( $(date +%s) - start )) s" | tee -a "$out/table.txt"
  grep -E "^(FAILED|ERROR)|passed|failed" "$out/pytest-gpu.log" | tail -n 25 >> "$out/table.txt"
fi
[ "$phase" = tests ] && { cat "$out/table.txt"; exit 0; }
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
