"""GPU test of the CUTLASS implicit-GEMM convolutions (docs/cutlass.md, "Convolutions"):
verifies the datasets built into ``.gpu/c-conv/`` and expects every row to pass or be
``not_applicable``: ``default`` (2-D and 3-D fprop, dgrad, wgrad; f16, bf16, tf32 and
int8; plain, single-group, multiple-group and fixed-channels kernels), ``strided`` (a
strided and a unity-stride dgrad at stride 2, the latter not_applicable) and ``llm``
(bf16 fprop, f16 dgrad and wgrad at the ResNet-50 / ViT sizes, f16 conv3d fprop).

``default`` was built with::

    ptxds build --source cutlass-conv --arch sm_80 --per-family 1 --out .gpu/c-conv/default \\
      --family 'cutlass_tensorop_h16816fprop_*,cutlass_tensorop_h16816dgrad_*,cutlass_tensorop_h16816wgrad_*,\\
cutlass_tensorop_bf16_s16816fprop_optimized_bf16_*,cutlass_tensorop_s1688fprop_optimized_tf32_*,\\
cutlass_tensorop_s8_i16832fprop_optimized_s8_*,cutlass_tensorop_h16816fprop3d_*,cutlass_tensorop_h16816dgrad3d_*,\\
cutlass_tensorop_h16816wgrad3d_*,cutlass_tensorop_f16_s16816fprop_fixed_channels_f16_*'

``strided`` with ``--family 'cutlass_tensorop_h16816dgrad_optimized_64x128_64x3_nhwc_align8,\
cutlass_tensorop_h16816dgrad_optimized_64x128_64x3_nhwc_unity_stride_align8' --shapes
.gpu/c-conv/strided.yaml``; ``llm`` with ``--shapes llm --family
'cutlass_tensorop_bf16_s16816fprop_optimized_bf16_64x128_64x3_nhwc_align4,\
cutlass_tensorop_h16816wgrad_optimized_256x128_64x3_nhwc_align8,\
cutlass_tensorop_h16816dgrad_optimized_64x128_64x3_nhwc_align8,cutlass_tensorop_h16816fprop3d_optimized_128x128_32x5'``.

Skipped without a GPU, and where a dataset was not carried.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import verified_carried

pytestmark = pytest.mark.gpu

CONV = Path(__file__).resolve().parents[3] / ".gpu" / "c-conv"
OPS = {"default": {"conv2d_fprop", "conv2d_dgrad", "conv2d_wgrad", "conv3d_fprop", "conv3d_dgrad", "conv3d_wgrad"},
       "strided": {"conv2d_dgrad"}, "llm": {"conv2d_fprop", "conv2d_dgrad", "conv2d_wgrad", "conv3d_fprop"}}


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_conv_row_passes(name, tmp_path):
    rows = verified_carried(CONV / name, tmp_path)
    assert {r.problem.op for r in rows} == OPS[name]
    failed = [(r.name, r.status, r.status_message[:300]) for r in rows if r.status not in ("passed", "not_applicable")]
    assert not failed, failed
    assert sum(r.status == "passed" for r in rows) == len(rows) - (2 if name == "strided" else 0)
