#!/usr/bin/env bash
# Verify on 1, 2 and 4 GPUs of one host, local workers and Ray actors, with a group's members
# split over the GPUs, and compare every run with the one-GPU run row by row (statuses, times)
# and with a second one-GPU run (the run-to-run noise): benchmarks/ray_gpu.py. First the GPU
# tests of the split (tests/verify/test_split_gpu.py). Ray is installed from an offline wheel folder
# (benchmarks/ray_wheels.py) when the machine lacks it; without it the Ray runs say so.
# Usage: benchmarks/multi_gpu.sh [WHEEL_DIR] [DATASET[=GROUP_GLOB]...]
#   default: .whl-ray .gpu/cutlass-llm-32 '.gpu/triton-llm=triton/gemm/*'
# Environment: MULTI_GPU_BUDGET (seconds for the verify runs, default 420), MULTI_GPU_COUNTS (1,2,4),
# MULTI_GPU_FLAGS (more ray_gpu.py options, e.g. --no-racecheck).
set -uo pipefail
wheels=${1:-.whl-ray}
shift || true
datasets=("$@")
[ ${#datasets[@]} -gt 0 ] || datasets=(.gpu/cutlass-llm-32 '.gpu/triton-llm=triton/gemm/*')
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
if ! python3 -c "import ray" 2>/dev/null; then
  if [ -d "$wheels" ]; then
    bash benchmarks/ray_install.sh "$wheels" /tmp/ray-site && export PYTHONPATH=/tmp/ray-site:$PYTHONPATH
  else
    echo "no ray and no wheel folder $wheels: the Ray runs will be skipped"
  fi
fi
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=index,name,pci.bus_id,clocks.max.sm --format=csv,noheader
git rev-parse --short HEAD 2>/dev/null || true
echo "== GPU tests of the split"
timeout 120 python3 -m pytest -q -rs -p no:cacheprovider -m gpu tests/verify/test_split_gpu.py 2>&1 | tail -n 6
python3 benchmarks/ray_gpu.py --work /tmp/ptxds-multi-gpu --budget "${MULTI_GPU_BUDGET:-420}" \
  --gpus "${MULTI_GPU_COUNTS:-1,2,4}" ${MULTI_GPU_FLAGS:-} "${datasets[@]}"
