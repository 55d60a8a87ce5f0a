#!/usr/bin/env bash
# One GPU session for new work: the GPU tests, then `ptxds verify` on each dataset given,
# then a per-group or per-family table of each result. Datasets are built on a CPU machine
# beforehand (commands in docs/runs/) and carried.
# Usage: docs/runs/run-022-gpu_check.sh OUTDIR [tests|notests] DATASET...
#   env: PTXDS_CHECK_WORK (verified output, default /tmp/ptxds-check), VERIFY_TIMEOUT (s per dataset)
#   a DATASET that is a folder of datasets (e.g. .gpu/families) is expanded one level.
set -uo pipefail
out=${1:?usage: docs/runs/run-022-gpu_check.sh OUTDIR [tests|notests] DATASET...}; shift
phase=${1:-tests}; shift || true
mkdir -p "$out"
source benchmarks/gpu_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
# verify resumes: a second call with the same work folder (kept on a warm machine) goes on
work=${PTXDS_CHECK_WORK:-/tmp/ptxds-check}; mkdir -p "$work"
if [ "$phase" = tests ]; then
  timeout 360 python3 -m pytest -m gpu -q -rfs -p no:cacheprovider tests 2>&1 | tail -n 30 | tee "$out/pytest-gpu.log"
fi
datasets=()
for d in "$@"; do
  if [ -f "$d/README.md" ]; then datasets+=("$d"); else
    for sub in "$d"/*/; do [ -f "$sub/README.md" ] && datasets+=("${sub%/}"); done
  fi
done
for ds in "${datasets[@]}"; do
  name=$(echo "$ds" | sed 's#^\.gpu/##; s#/#-#g')
  echo "== ptxds verify $ds"
  start=$(date +%s)
  timeout "${VERIFY_TIMEOUT:-300}" python3 -m ptxds verify "$ds" --out "$work/$name" --silent 2>&1 | grep -v "^  " | tee -a "$out/verify.log"
  echo "$name: $(( $(date +%s) - start )) s wall" | tee -a "$out/verify.log"
done
for v in "$work"/*/; do
  echo "== $(basename "$v")"
  case "$(basename "$v")" in
    tvm*) python3 benchmarks/tvm_groups.py "$v" ;;
    *) python3 benchmarks/families_table.py "$v" ;;
  esac
done 2>&1 | tee "$out/tables.md"
tar -czf "$out/verified.tar.gz" -C "$work" .
