#!/usr/bin/env bash
# Build a Triton set (and its rewrites and mutants), a CUTLASS slice, a Mirage set and the
# handhack set with the checkout CHECKOUT into OUT, then write OUT/<set>.keys: sorted
# "build_key kernel_id" lines. Run it for two checkouts and compare: a refactor that
# changes no behaviour gives no difference (benchmarks/architecture_identity.sh does both
# and compares the rows column by column with benchmarks/compare_datasets.py).
# Usage: benchmarks/build_identity.sh CHECKOUT OUT [PYTHON]; then, for two OUTs A and B:
#   for s in triton mutants cutlass mirage handhack; do cmp A/$s.keys B/$s.keys; done
set -euo pipefail
checkout=$(cd "$1" && pwd); out=$2; python=${3:-python}
mkdir -p "$out"; out=$(cd "$out" && pwd)
mugraphs=${MUGRAPHS:-/work/shared/mirage/saved_mugraphs}
cd "$checkout"
cli() { "$python" -c 'from ptxds.cli import main; main()' "$@"; }
cli build --silent --source triton --out "$out/triton" --arch sm_80,sm_90a
rm -rf "$out/mutants" && cp -r "$out/triton" "$out/mutants"
cli rewrite "$out/mutants" --rewrites 2 --mutants 4 --seed 0 --silent
cli build --silent --source cutlass --out "$out/cutlass" --arch sm_80 \
    --family 'cutlass_tensorop_bf16_s16816gemm_bf16_*_tn_align8' --limit 4
PTXDS_MIRAGE_DIR="$mugraphs" cli build --silent --source mirage --out "$out/mirage" --mugraphs "$mugraphs/lora.json"
cli build --silent --source handhack --out "$out/handhack" --jobs 1
for source in triton mutants cutlass mirage handhack; do
    "$python" - "$out/$source" > "$out/$source.keys" <<'PY'
import sys
from dataset_spec.store.shards import read_records
for key, kid in sorted((r.build_key, r.kernel_id) for r in read_records(sys.argv[1])):
    print(key, kid)
PY
    echo "$source: $(wc -l < "$out/$source.keys") rows"
done
