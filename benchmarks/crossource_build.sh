#!/bin/bash
# Builds the built-in `crossource` set from every source and merges it (docs/crossource.md):
# Triton (sm_90a), Mirage (the GQA/MHA/MQA attention muGraphs), TVM (softmax, RMSNorm, the
# fp16 GEMM's tensor-core members; bf16 GEMM schedules at the decode size, where no TileLang
# tile fits), TileLang (sm_80 + sm_90a, 4 configurations, in its own environment) and
# CUTLASS 2.x nn f16/bf16 kernels (sm_80, 3 each). About 25 minutes on 2 cores.
# Usage: benchmarks/crossource_build.sh OUTDIR MUGRAPH_DIR [TILELANG_PYTHON]
set -euo pipefail
out=${1:?usage: crossource_build.sh OUTDIR MUGRAPH_DIR [TILELANG_PYTHON]}; mugraphs=${2:?}
tilelang_python=${3:-.venv-tilelang/bin/python}
py=${PYTHON:-python}
mkdir -p "$out"
printf 'name: crossource-decode\ngemm: [[16, 4096, 4096]]\n' > "$out/decode.yaml"
$py -m ptxds build --source triton --out "$out/triton" --arch sm_90a --shapes crossource --silent
$py -m ptxds build --source mirage --out "$out/mirage" --arch sm_90a --silent \
  --mugraphs "$mugraphs/gqa_bs1.json" --mugraphs "$mugraphs/mha_bs1.json" --mugraphs "$mugraphs/mqa_bs1.json"
$py -m ptxds build --source tvm --out "$out/tvm" --arch sm_80 --shapes crossource --workloads softmax,rmsnorm \
  --schedules 4 --silent
$py -m ptxds build --source tvm --out "$out/tvm" --arch sm_80 --shapes crossource --workloads matmul_fp16 \
  --tensor-cores only --silent
$py -m ptxds build --source tvm --out "$out/tvm" --arch sm_80 --shapes "$out/decode.yaml" --workloads matmul_bf16 \
  --schedules 4 --silent
"$tilelang_python" -m ptxds build --source tilelang --out "$out/tilelang" --arch sm_80,sm_90a --shapes crossource \
  --members 4 --silent
for dtype in f16 bf16; do
  $py -m ptxds build --source cutlass --out "$out/cutlass" --arch sm_80 --shapes crossource --limit 12 --silent \
    --family "cutlass_tensorop_${dtype}_s16816gemm_${dtype}_[0-9]*_nn_align8"
done
rm -rf "$out/merged"
$py -m ptxds merge "$out/triton" "$out/tvm" "$out/tilelang" "$out/cutlass" "$out/mirage" --out "$out/merged"
$py -m ptxds info "$out/merged"
