#!/usr/bin/env bash
# Build a Triton set, a CUTLASS slice and a Mirage set with the checkout CHECKOUT into OUT,
# then write OUT/<source>.keys: sorted "build_key kernel_id" lines. Run it for two
# checkouts and diff the .keys files: a refactor that changes no behaviour gives none.
# Usage: benchmarks/build_identity.sh CHECKOUT OUT [PYTHON]; then, for two OUTs A and B:
#   for s in triton cutlass mirage; do cmp A/$s.keys B/$s.keys; done
set -euo pipefail
checkout=$(cd "$1" && pwd); out=$2; python=${3:-python}
mkdir -p "$out"; out=$(cd "$out" && pwd)
mugraphs=${MUGRAPHS:-/work/shared/mirage/saved_mugraphs}
cd "$checkout"
run() { "$python" -c 'from ptxds.cli import main; main()' build --silent "$@"; }
run --source triton --out "$out/triton" --arch sm_80,sm_90a
run --source cutlass --out "$out/cutlass" --arch sm_80 \
    --family 'cutlass_tensorop_bf16_s16816gemm_bf16_*_tn_align8' --limit 4
PTXDS_MIRAGE_DIR="$mugraphs" run --source mirage --out "$out/mirage" --mugraphs "$mugraphs/lora.json"
for source in triton cutlass mirage; do
    "$python" - "$out/$source" > "$out/$source.keys" <<'PY'
import sys
from dataset_spec.shards import read_records
for key, kid in sorted((r.build_key, r.kernel_id) for r in read_records(sys.argv[1])):
    print(key, kid)
PY
    echo "$source: $(wc -l < "$out/$source.keys") rows"
done
