#!/usr/bin/env bash
# Verify a built inductor dataset on the GPU and print its statuses per group
# (benchmarks/inductor_groups.py). The dataset is captured and built on a CPU machine first
# and carried as .gpu/inductor (docs/inductor.md, "On a GPU"):
#   ptxds capture --source inductor --models gpt2_block,vit_block,llama_layer,llama_layer:float32,moe_block,bert_block,t5_block --out .gpu/inductor-capture
#   ptxds build --source inductor --captured .gpu/inductor-capture --out .gpu/inductor --arch sm_90a,sm_80
# Usage: benchmarks/inductor_gpu.sh [DATASET] [OUTDIR]   (defaults .gpu/inductor, /tmp/ptxds-inductor)
#   env: VERIFY_TIMEOUT (s, default 540)
set -uo pipefail
dataset=${1:-.gpu/inductor}; out=${2:-/tmp/ptxds-inductor}
[ -f "$dataset/README.md" ] || { echo "no built dataset at $dataset (build it as this script's header says)"; exit 2; }
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
mkdir -p "$out"
start=$(date +%s)
# verify resumes: a second call with the same OUTDIR on a warm machine goes on where it stopped
timeout "${VERIFY_TIMEOUT:-540}" python3 -m ptxds verify "$dataset" --out "$out/verified" --silent 2>&1 \
  | grep -v "^  " | tail -n 20
echo "verify: $(( $(date +%s) - start )) s wall"
python3 benchmarks/inductor_groups.py "$out/verified" | tee "$out/groups.md"
