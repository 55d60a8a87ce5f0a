#!/usr/bin/env bash
# TVM on tensor cores and tuning round 0 on the GPU: verify the mma.sync members (fp16/bf16
# matmul, fp16 batch matmul, NHWC fp16 conv) and the first tuning candidates, compare the
# fastest members with cuBLAS / cuDNN, and bring the verified candidates back for
# `ptxds tune-tvm commit`.
# Usage: docs/runs/run-067-gpu_wave7.sh OUTDIR [TUNING_ROUND_DATASET ...]
set -uo pipefail
out=${1:?usage: docs/runs/run-067-gpu_wave7.sh OUTDIR [ROUND ...]}; shift
mkdir -p "$out"
source benchmarks/gpu_env.sh
work=/tmp/ptxds-wave7; mkdir -p "$work"
for ds in .gpu/tvmmma/data .gpu/tvmmma/conv "$@"; do
  name=$(echo "$ds" | sed 's#^\.gpu/##; s#/#-#g')
  start=$(date +%s)
  timeout 200 python3 -m ptxds verify "$ds" --out "$work/$name" --kernel-timeout 5 --silent 2>&1 | grep -v "^  " | tail -n 3
  echo "$name: $(( $(date +%s) - start )) s wall"
done
for d in tvmmma-data tvmmma-conv; do python3 benchmarks/tvm_groups.py "$work/$d" 2>&1 | tail -n 30; done
python3 benchmarks/vendor_gap.py "$work/tvmmma-data" "$work/tvmmma-conv" 2>&1 | tail -n 20
for ds in "$@"; do
  name=$(echo "$ds" | sed 's#^\.gpu/##; s#/#-#g')
  python3 benchmarks/tvm_groups.py "$work/$name" 2>&1 | tail -n 8
  tar -czf "$out/$name-verified.tar.gz" -C "$work" "$name"
done
