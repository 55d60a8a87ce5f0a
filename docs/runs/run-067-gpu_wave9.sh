#!/usr/bin/env bash
# The relabelled CUTLASS GEMM families and the last SM90a sparse ones on the GPU: the named
# SM90a families build on this machine's cores in the background (resumable while the machine
# stays up: call again with the same arguments) while the carried relabelled datasets
# (.gpu/gemmfix) verify, their GPU tests run, and the one unexplained member is probed
# element by element; then what got built verifies.
# Usage: docs/runs/run-067-gpu_wave9.sh OUTDIR NAMES_FILE BUILD_SECONDS
set -uo pipefail
out=${1:?usage: docs/runs/run-067-gpu_wave9.sh OUTDIR NAMES_FILE BUILD_SECONDS}; names=$2; budget=$3
mkdir -p "$out"
source benchmarks/gpu_env.sh
python3 -m pip install -q --no-index --no-deps --target /tmp/ptxds-site .whl/nvidia_cutlass-*.whl 2>/dev/null
export PYTHONPATH=/tmp/ptxds-site:$PYTHONPATH
work=/tmp/ptxds-wave9; mkdir -p "$work"; rm -f "$work/build.done"
(timeout -s INT -k 20 "$budget" python3 -m ptxds build --source cutlass --arch sm_90a \
   --family "$(paste -sd, "$names")" --option batch_size=1 --jobs "$(nproc)" --cache "$work/cache" \
   --out "$work/built" --silent > "$out/build.log" 2>&1; echo done > "$work/build.done") &
if [ ! -f "$work/gemmfix.done" ]; then
  for part in A A-sm90 B B-sm90 C D; do
    start=$(date +%s)
    timeout 120 python3 -m ptxds verify ".gpu/gemmfix/$part" --out "$work/gemmfix-$part" --silent 2>&1 | grep "status counts"
    echo "gemmfix/$part: $(( $(date +%s) - start )) s wall"
    python3 benchmarks/family_kinds.py "$work/gemmfix-$part" 2>&1 | tail -n +3 | cut -c1-600
  done
  timeout 120 python3 benchmarks/worst_element.py .gpu/gemmfix/D '*' "$out/D" 2>&1 | cut -c1-400
  timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_gemm_labels_gpu.py tests/test_tvm_mma_gpu.py 2>&1 | tail -n 4
  touch "$work/gemmfix.done"
fi
while [ ! -f "$work/build.done" ]; do sleep 3; done
tail -n 3 "$out/build.log"
python3 -m ptxds build --source cutlass --arch sm_90a --family "$(paste -sd, "$names")" --option batch_size=1 \
  --out "$work/built" --dry-run 2>&1 | tail -n 1
timeout 150 python3 -m ptxds verify "$work/built" --out "$work/built-verified" --silent 2>&1 | grep "status counts"
python3 benchmarks/family_kinds.py "$work/built-verified" | tail -n +3 | cut -c1-600
