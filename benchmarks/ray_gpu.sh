#!/usr/bin/env bash
# Verify on every GPU of one host three ways -- the local executor on GPU 0 alone, the local
# executor on all GPUs, Ray actors on all GPUs (a cluster started with ray start --head and
# joined with --address auto) -- then compare statuses row by row and print a table.
# Needs Ray: an offline wheel folder (benchmarks/ray_wheels.py) is installed first.
# Usage: benchmarks/ray_gpu.sh [WHEEL_DIR] [DATASET...]  (default: .whl-ray .gpu/triton .gpu/cutlass)
set -uo pipefail
wheels=${1:-.whl-ray}
shift || true
datasets=${*:-.gpu/triton .gpu/cutlass}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
work=/tmp/ptxds-ray-gpu; rm -rf "$work"; mkdir -p "$work"
if ! python3 -c "import ray" 2>/dev/null; then
  bash benchmarks/ray_install.sh "$wheels" /tmp/ray-site || exit 1
  export PYTHONPATH=/tmp/ray-site:$PYTHONPATH
fi
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader
git rev-parse --short HEAD 2>/dev/null || true
echo "== GPU tests of the executors"
timeout 150 python3 -m pytest -q -rs -p no:cacheprovider -m gpu tests/test_ray_executor.py 2>&1 | tail -n 8
python3 benchmarks/ray_gpu.py --work "$work" $datasets
