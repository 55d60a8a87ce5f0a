#!/usr/bin/env bash
# Liger-Kernel's descriptions (examples/liger) verified on a GPU.
#   (PTXDS and PYTHON name other executables)
#   here (CPU, liger-kernel installed):  bash benchmarks/liger_gpu.sh build    -> .gpu/liger/built
#   on the GPU machine (carry .gpu/liger): bash benchmarks/liger_gpu.sh verify -> table of statuses and times
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.gpu/liger
case "${1:-}" in
  build)
    rm -rf "$OUT/built"
    for call in examples/liger/*.yaml; do
      ${PTXDS:-ptxds} build --source triton-jit --call "$call" --arch sm_90a --out "$OUT/built"
    done ;;
  verify)
    rm -rf "$OUT/verified"
    ${PTXDS:-ptxds} verify "$OUT/built" --out "$OUT/verified"
    ${PYTHON:-python} - "$OUT/verified" <<'PY'
import sys
from dataset_spec.dataset import Dataset
print(f"{'group':50} {'kernel':28} {'status':14} {'time_us':>9}  message")
for r in sorted(Dataset.open(sys.argv[1]).records(), key=lambda r: (r.group_id, r.name)):
    t = f"{r.time_us_median:9.2f}" if r.time_us_median else " " * 9
    print(f"{r.group_id:50} {r.name[:28]:28} {r.status:14} {t}  {(r.status_message or '')[:90]}")
PY
    ;;
  *) echo "usage: bash benchmarks/liger_gpu.sh build|verify" >&2; exit 2 ;;
esac
