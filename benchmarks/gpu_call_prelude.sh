# Sourced by a GPU call's script (docs/runs/run-*.sh) from the worktree of the commit under
# test (.gpucall/head), with $out set: links the carried datasets (.gpu) and wheels (.whl),
# sets up the environment (gpu_env.sh) and the shared functions (gpu_call_helpers.sh), names
# the commit and the GPU, and sets $work (scratch) and $summary (the table the call returns).
mkdir -p "$out"
ln -sfn ../data .gpu
ln -sfn ../../.whl .whl
source benchmarks/gpu_env.sh
source benchmarks/gpu_call_helpers.sh
[ -z "${PTXDS_CUDA_HOME:-}" ] && [ -x /usr/local/cuda-13.0/bin/nvcc ] && export PTXDS_CUDA_HOME=/usr/local/cuda-13.0
echo "head $(cat ../HEAD_COMMIT 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
work=/tmp/ptxds-calls; mkdir -p "$work"
summary=$out/summary.txt
