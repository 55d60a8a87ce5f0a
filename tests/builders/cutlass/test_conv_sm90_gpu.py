"""GPU tests of the SM90a 3.x CUTLASS convolutions: the verifier's encode path
(``verify.device.driver.encode_tensor_map``) turns an im2col record into a real
``cuTensorMapEncodeIm2col`` descriptor; and every row of ``.gpu/c-conv-sm90/default``
(3.x conv2d fprop, dgrad and wgrad, conv3d fprop; one kernel each, default sizes) and of
``.gpu/c-conv-sm90/llm`` (the same kernels at the ResNet-50 / ViT sizes; the three dgrad
rows at stride > 1 are ``not_applicable``) passes.

``default`` was built with::

    ptxds build --source cutlass-conv --arch sm_90a --per-family 1 --out .gpu/c-conv-sm90/default \\
      --family 'cutlass3x_sm90_tensorop_fprop_f16nhwc_f16nhwc_f16_f16_f16nhwc_64x64x64_1x1x1_0_align8_warpspecialized_epi_tma,\\
cutlass3x_sm90_tensorop_dgrad_f16nhwc_f16nhwc_f16_f16_f16nhwc_64x64x64_1x1x1_0_align8_warpspecialized_epi_tma,\\
cutlass3x_sm90_tensorop_wgrad_f16nhwc_f16nhwc_f32_f32_f32kcsr_64x64x64_1x2x1_0_align8_warpspecialized_epi_tma,\\
cutlass3x_sm90_tensorop_fprop_f16ndhwc_f16ndhwc_f32_f32_f32ndhwc_64x64x64_2x1x1_0_align8_warpspecialized_epi_tma'

and ``llm`` with the same command plus ``--shapes llm --out .gpu/c-conv-sm90/llm``.

Skipped without a GPU, on GPUs before sm_90, and where the dataset was not carried.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import verified_carried

pytestmark = pytest.mark.gpu

DATASETS = Path(__file__).resolve().parents[3] / ".gpu" / "c-conv-sm90"
NOT_APPLICABLE = {"default": 0, "llm": 3}
# As the packer records x (2 x 14 x 14 x 64 f16) for a 3.x fprop with a 3 x 3 filter, pad 1.
IM2COL = {"data_type": 1, "rank": 4, "global_dim": [64, 14, 14, 2], "global_strides": [128, 1792, 25088],
          "encode": "im2col", "pixel_box_lower_corner": [-1, -1], "pixel_box_upper_corner": [-1, -1],
          "channels_per_pixel": 32, "pixels_per_column": 128, "element_strides": [1, 1, 1, 1],
          "interleave": 0, "swizzle": 2, "l2_promotion": 0, "oob_fill": 0}


@pytest.fixture(scope="module")
def sm90_context():
    from verify.device.driver import Context
    ctx = Context(0)
    if ctx.info.cc[0] < 9:
        pytest.skip(f"im2col tensor maps need sm_90 or newer, this GPU is {ctx.info.arch}")
    return ctx


def test_im2col_record_encodes_a_real_descriptor(sm90_context):
    from verify.device.driver import DeviceBuffer, DriverError, encode_tensor_map
    x = DeviceBuffer(2 * 14 * 14 * 64 * 2)
    other = DeviceBuffer(x.nbytes)
    first = encode_tensor_map(IM2COL, x.address)
    assert len(first) == 128 and any(first)
    assert encode_tensor_map(IM2COL, x.address) == first          # deterministic
    assert encode_tensor_map(IM2COL, other.address) != first      # embeds the address
    with pytest.raises(DriverError, match="cuTensorMapEncodeIm2col"):
        encode_tensor_map(dict(IM2COL, channels_per_pixel=512), x.address)  # the driver's limit is 256


@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
def test_every_sm90_conv_row_passes(sm90_context, name, tmp_path):
    rows = verified_carried(DATASETS / name, tmp_path)
    assert {r.problem.op for r in rows} == {"conv2d_fprop", "conv2d_dgrad", "conv2d_wgrad", "conv3d_fprop"}
    assert all(r.arch == "sm_90a" for r in rows)
    failed = [(r.name, r.status, r.status_message[:300]) for r in rows if r.status not in ("passed", "not_applicable")]
    assert not failed, failed
    skipped = [r for r in rows if r.status == "not_applicable"]
    assert len(skipped) == NOT_APPLICABLE[name] and all("unit stride only" in r.status_message for r in skipped)
