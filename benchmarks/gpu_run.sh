#!/usr/bin/env bash
# One GPU session: GPU tests, `ptxds verify` on the carried datasets, verify's times against
# Nsight Compute, the verify throughput/timing benchmark. Datasets are built on a CPU
# machine beforehand into .gpu/ (see docs/runs/ for the exact commands).
# Usage: benchmarks/gpu_run.sh OUTDIR [all|tests|timing]
#   tests:  the GPU tests (pytest -m gpu)
#   timing: ptxds verify on every carried dataset, verify's times against Nsight Compute
#           (with a second verify process for run-to-run), then the throughput benchmark
set -uo pipefail
out=${1:?usage: gpu_run.sh OUTDIR [all|tests|timing]}
phase=${2:-all}
mkdir -p "$out"
source benchmarks/gpu_env.sh
python3 -c "import importlib.metadata as m; from cupti import cupti; print('cupti-python', m.version('cupti-python'))" \
  2>&1 | tail -n 1
work=/tmp/ptxds-gpu; rm -rf "$work"; mkdir -p "$work"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
git rev-parse --short HEAD 2>/dev/null || true
if [ "$phase" != timing ]; then
  timeout 420 python3 -m pytest -m gpu -q -rs -p no:cacheprovider tests 2>&1 | tail -n 40 | tee "$out/pytest-gpu.log"
fi
[ "$phase" = tests ] && exit 0
# most important first: the timing goals are measured on triton and cutlass
for name in triton cutlass $(cd .gpu && ls -d */ | tr -d / | grep -vx -e triton -e cutlass -e bench); do
  ds=.gpu/$name
  [ -d "$ds" ] || continue
  echo "== ptxds verify $name"
  timeout 240 python3 -m ptxds verify "$ds" --out "$work/$name-verified" --silent 2>&1 | tee -a "$out/verify.log"
  if [ "$name" = adversarial ]; then
    python3 benchmarks/member_table.py "$work/$name-verified" 2>&1 | tee "$out/members-$name.txt"
  elif [ -d "$work/$name-verified" ] && command -v ncu >/dev/null; then
    echo "== ncu comparison $name"
    timeout 300 python3 benchmarks/ncu_compare.py "$work/$name-verified" --reverify "$ds" --work "$work/ncu-$name" \
      --cache-control l2,all $( [ -d .gpu/calibration ] && echo --calibration .gpu/calibration ) \
      --csv "$out/ncu-$name.csv" 2>&1 | tee "$out/ncu-$name.log"
  fi
done
if [ -d .gpu/triton ] && [ -z "${SKIP_BENCH:-}" ]; then
  echo "== benchmark"
  python3 benchmarks/verify_throughput.py .gpu/triton $( [ -d .gpu/cutlass ] && echo .gpu/cutlass ) --work "$work/bench" --csv "$out/timing.csv" 2>&1 | tee "$out/bench.log"
fi
tar -czf "$out/verified.tar.gz" -C "$work" $(cd "$work" && ls -d *-verified 2>/dev/null)
