#!/usr/bin/env bash
# The mutant kill rate on a mixed dataset: `ptxds verify --no-timing` of each source folder
# that `ptxds rewrite --mutants 10 --seed 7` extended (Triton suite, a CUTLASS SM80 + SM90
# slice, Mirage groups, handhack groups), each under its own time limit so one slow source
# leaves the others' results, then benchmarks/mutant_kill_rate.py on the verified folders:
# the tables by operator and by source, every survivor's diff and reason, every unexercised
# mutant's diff and note, and the mutants left out at mutation time.
# Usage: benchmarks/mutants_gpu.sh OUTDIR [DATASET_ROOT]   (default root: .gpu/mutants-3)
set -uo pipefail
out=${1:?usage: benchmarks/mutants_gpu.sh OUTDIR [DATASET_ROOT]}
root=${2:-.gpu/mutants-3}
mkdir -p "$out"
source benchmarks/gpu_env.sh
[ -z "${PTXDS_CUDA_HOME:-}" ] && [ -x /usr/local/cuda-13.0/bin/nvcc ] && export PTXDS_CUDA_HOME=/usr/local/cuda-13.0
# racecheck of dropped barriers and members changed near shared memory needs compute-sanitizer
command -v compute-sanitizer >/dev/null || { [ -x /usr/local/cuda-13.0/bin/compute-sanitizer ] \
  && export PATH=$PATH:/usr/local/cuda-13.0/bin; }
[ -d .gpu/mugraphs ] && export PTXDS_MIRAGE_DIR=$PWD/.gpu/mugraphs
work="$out/verified"; rm -rf "$work"; mkdir -p "$work"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
command -v compute-sanitizer | tee -a "$out/gpu.txt"
start=$(date +%s)
verified=()
# seconds per source (the whole run stays near 6 minutes); MUTANTS_SOURCE_LIMIT overrides all
declare -A limit=([triton]=180 [cutlass]=80 [mirage]=90 [handhack]=30)
verify_source() {  # SOURCE: verify it under its limit, a line in table.txt
  local source=$1 t0 rc
  t0=$(date +%s)
  timeout "${MUTANTS_SOURCE_LIMIT:-${limit[$source]}}" python3 -m ptxds verify "$root/$source" --out "$work/$source" \
    --no-timing --silent > "$out/verify-$source.log" 2>&1
  rc=$?
  echo "$source: $(( $(date +%s) - t0 )) s, exit $rc, $(grep -m1 'status counts' "$out/verify-$source.log")" \
    | tee -a "$out/table.txt"
}
# MUTANTS_PARALLEL=1: the sources verify at once (no timing is taken, so they may share the GPU)
for source in triton cutlass mirage handhack; do
  [ -d "$root/$source" ] || continue
  if [ -n "${MUTANTS_PARALLEL:-}" ]; then verify_source "$source" & else verify_source "$source"; fi
done
wait
for source in triton cutlass mirage handhack; do
  # a source cut off by its limit keeps the groups it finished; one with none is left out
  compgen -G "$work/$source/kernels/*/*.parquet" > /dev/null && verified+=("$work/$source")
done
if [ ${#verified[@]} -eq 0 ]; then
  echo "no source verified: see $out/verify-*.log"; tail -n 5 "$out"/verify-*.log; exit 1
fi
python3 benchmarks/mutant_kill_rate.py "${verified[@]}" --work "$out/kill" > "$out/mutants.log" 2>&1
echo "all: $(( $(date +%s) - start )) s" | tee -a "$out/table.txt"
echo "===== survivors, unexercised mutants and tables"
cat "$out/mutants.log"
echo "===== timings"
cat "$out/table.txt"
