#!/usr/bin/env bash
# The last CUTLASS families and the TVM tuning round on the GPU: SM90a kernels named in a file
# are built on this machine's cores in the background (one kernel per nvcc call) while the
# carried datasets verify; then the built ones verify too.
# Usage: docs/runs/run-067-gpu_wave8.sh OUTDIR NAMES_FILE BUILD_SECONDS DATASET...
#   a DATASET under .gpu/tvm* gets the TVM tables; others the per-family summary.
set -uo pipefail
out=${1:?usage: docs/runs/run-067-gpu_wave8.sh OUTDIR NAMES_FILE BUILD_SECONDS DATASET...}; names=$2; budget=$3; shift 3
mkdir -p "$out"
source benchmarks/gpu_env.sh
python3 -m pip install -q --no-index --no-deps --target /tmp/ptxds-site .whl/nvidia_cutlass-*.whl
export PYTHONPATH=/tmp/ptxds-site:$PYTHONPATH
work=/tmp/ptxds-wave8; mkdir -p "$work"
if [ -s "$names" ]; then
  (timeout -s INT -k 20 "$budget" python3 -m ptxds build --source cutlass --arch sm_90a \
     --family "$(paste -sd, "$names")" --option batch_size=1 --jobs "$(nproc)" --cache "$work/cache" \
     --out "$work/built" --silent > "$out/build.log" 2>&1; echo done > "$work/build.done") &
fi
for ds in "$@"; do
  name=$(echo "$ds" | sed 's#^\.gpu/##; s#/#-#g')
  start=$(date +%s)
  timeout 150 python3 -m ptxds verify "$ds" --out "$work/$name" --kernel-timeout 5 --silent 2>&1 | grep -v "^  " | grep "status counts"
  echo "$name: $(( $(date +%s) - start )) s wall"
  case "$ds" in
    .gpu/tvm*) python3 benchmarks/tvm_groups.py "$work/$name" 2>&1 | tail -n 8 ;;
    *) python3 benchmarks/family_kinds.py "$work/$name" 2>&1 | tail -n +3 | cut -c1-400 ;;
  esac
done
tvm=$(for ds in "$@"; do case "$ds" in .gpu/tvm*) echo "$work/$(echo "$ds" | sed 's#^\.gpu/##; s#/#-#g')";; esac; done)
[ -n "$tvm" ] && python3 benchmarks/vendor_gap.py $tvm 2>&1 | grep "^|" | cut -c1-400
for d in "$work"/tvmtune-r*; do [ -d "$d" ] && tar -czf "$out/$(basename "$d")-verified.tar.gz" -C "$work" "$(basename "$d")"; done
if [ -s "$names" ]; then
  while [ ! -f "$work/build.done" ]; do sleep 3; done
  tail -n 3 "$out/build.log"
  timeout 120 python3 -m ptxds verify "$work/built" --out "$work/built-verified" --silent 2>&1 | grep "status counts"
  python3 benchmarks/family_kinds.py "$work/built-verified" | tail -n +3 | cut -c1-400
fi
