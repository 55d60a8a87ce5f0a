#!/usr/bin/env bash
# One kernel of every CUTLASS family the generator emits for SM80 and SM90a (GEMM and conv),
# built and verified on one GPU machine whose cores do the build (`--per-family 1`, seed 0).
# Usage: benchmarks/families_gpu.sh OUTDIR [WORK]
#   WORK (default /tmp/ptxds-families) holds the datasets, the compile cache and the verified
#   output; a second call with the same WORK resumes the build, then verifies what is built.
#   env: BUILD_BUDGET (s of build per call, default 480), FAMILY_SOURCES (default "cutlass-conv cutlass"),
#        FAMILY_GLOBS (default '*'; a file of kernel names, one a line, with FAMILY_FILE)
#   needs: nvidia-cutlass's wheel in .whl/ where the machine lacks cutlass_library.
set -uo pipefail
out=${1:?usage: families_gpu.sh OUTDIR [WORK]}
work=${2:-/tmp/ptxds-families}
mkdir -p "$out" "$work"
source benchmarks/gpu_env.sh
if ! python3 -c "import cutlass_library" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/ptxds-site .whl/nvidia_cutlass-*.whl || exit 1
  export PYTHONPATH=/tmp/ptxds-site:$PYTHONPATH
fi
globs=${FAMILY_GLOBS:-*}
[ -n "${FAMILY_FILE:-}" ] && globs=$(paste -sd, "$FAMILY_FILE")
deadline=$(( $(date +%s) + ${BUILD_BUDGET:-480} ))
all_built=1
for source in ${FAMILY_SOURCES:-cutlass-conv cutlass}; do
  left=$(( deadline - $(date +%s) ))
  [ "$left" -gt 10 ] || { all_built=0; break; }
  start=$(date +%s)
  # SIGINT: the build writes what it finished and says how to resume
  timeout -s INT -k 60 "$left" python3 -m ptxds build --source "$source" --family "$globs" --per-family 1 \
    --jobs "$(nproc)" --cache "$work/cache" --out "$work/$source" --silent 2>&1 | tail -n 4
  echo "build $source: $(( $(date +%s) - start )) s wall on $(nproc) cores"
  todo=$(python3 -m ptxds build --source "$source" --family "$globs" --per-family 1 --out "$work/$source" --dry-run 2>&1 | tail -n 1)
  echo "  $todo"
  case "$todo" in *": 0 work items"*) ;; *) all_built=0 ;; esac
done
[ "$all_built" = 1 ] || { echo "build unfinished: call again with the same WORK to resume"; exit 0; }
for source in ${FAMILY_SOURCES:-cutlass-conv cutlass}; do
  start=$(date +%s)
  python3 -m ptxds verify "$work/$source" --out "$work/verified-$source" --silent 2>&1 | grep -v "^  " | tail -n 6
  echo "verify $source: $(( $(date +%s) - start )) s wall"
  python3 benchmarks/families_table.py "$work/verified-$source" > "$out/families-$source.md"
  tail -n 1 "$out/families-$source.md"
  python3 benchmarks/family_kinds.py "$work/verified-$source"
done
