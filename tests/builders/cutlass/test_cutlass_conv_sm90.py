"""CPU tests of the SM90a 3.x CUTLASS convolutions (docs/cutlass.md, "Convolutions"): the
packer's recorder keeps ``cuTensorMapEncodeIm2col`` calls as im2col tensormap records that
become ``Patch(kind="tensormap")`` with ``"encode": "im2col"``; a real 3.x fprop compiled
with nvcc has its Params packed (im2col maps for x and y, a tiled one for w, its cluster);
sizes a 3.x kernel cannot run are ``not_applicable``."""
from __future__ import annotations

import pytest

pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed (pip install 'ptxds[cutlass]')")

from builders.base import BuildOptions  # noqa: E402
from builders.cutlass import conv_catalog  # noqa: E402
from builders.cutlass.builder import entry_params  # noqa: E402
from builders.cutlass.conv_builder import CutlassConvBuilder, parse_size, size_misfit  # noqa: E402
from builders.cutlass.packer import (BUFFER_SLOTS, TENSORMAP_MAGIC, PackError, find_tensormap_patches,  # noqa: E402
                                     sentinel)
from dataset_spec.model import Patch  # noqa: E402
from helpers import needs_nvcc  # noqa: E402

FPROP = "cutlass3x_sm90_tensorop_fprop_f16nhwc_f16nhwc_f16_f16_f16nhwc_64x64x64_1x1x1_0_align8_warpspecialized_epi_tma"
DGRAD = "cutlass3x_sm90_tensorop_dgrad_f16nhwc_f16nhwc_f16_f16_f16nhwc_64x64x64_1x1x1_0_align8_warpspecialized_epi_tma"


def _im2col_params(run: int) -> tuple[bytes, list]:
    """Params as the packer prints them for a 3.x conv: an im2col marker at 0 (record 1,
    encoding A's sentinel) and a tiled one at 128 (record 0, B's)."""
    blob = bytearray(256)
    for offset, index in ((0, 1), (128, 0)):
        blob[offset:offset + 8] = TENSORMAP_MAGIC
        blob[offset + 8:offset + 16] = index.to_bytes(8, "little")
    tiled = {"data_type": 1, "rank": 4, "global_address": f"{sentinel(1, run):x}", "global_dim": [64, 64, 3, 3],
             "global_strides": [1152, 128, 384], "box_dim": [32, 128, 1, 1], "element_strides": [1, 1, 1, 1],
             "interleave": 0, "swizzle": 2, "l2_promotion": 2, "oob_fill": 0}
    im2col = {"data_type": 1, "rank": 4, "global_address": f"{sentinel(0, run):x}", "global_dim": [64, 14, 14, 2],
              "global_strides": [128, 1792, 25088], "encode": "im2col", "pixel_box_lower_corner": [-1, -1],
              "pixel_box_upper_corner": [-1, -1], "channels_per_pixel": 32, "pixels_per_column": 128,
              "element_strides": [1, 1, 1, 1], "interleave": 0, "swizzle": 2, "l2_promotion": 0, "oob_fill": 0}
    return bytes(blob), [tiled, im2col]


def test_im2col_markers_become_tensormap_patches_that_name_their_encode():
    pointer_sets = [{name: sentinel(BUFFER_SLOTS.index(name), run) for name in ("A", "B", "D")} for run in range(3)]
    blobs, records = zip(*(_im2col_params(run) for run in range(3)))
    a, b = find_tensormap_patches(list(blobs), list(records), pointer_sets)
    assert (a.offset, a.buffer, a.tensormap["encode"]) == (0, "A", "im2col")
    assert a.tensormap["pixel_box_lower_corner"] == [-1, -1] and "box_dim" not in a.tensormap
    assert (b.offset, b.buffer, "encode" in b.tensormap) == (128, "B", False)  # tiled records unchanged
    assert Patch(**{**a.__dict__}).tensormap == a.tensormap  # a valid row patch
    shifted = [records[0], [records[1][0], dict(records[1][1], pixel_box_lower_corner=[0, 0])], records[2]]
    with pytest.raises(PackError, match="depend on the pointers"):
        find_tensormap_patches(list(blobs), shifted, pointer_sets)


def test_every_sm90_conv_family_is_built():
    table = [f for f in conv_catalog.conv_family_table((90,))]
    assert len(table) == 14 and not any(f.excluded for f in table)
    assert {f.conv for f in table} == {"conv2d_fprop", "conv2d_dgrad", "conv2d_wgrad", "conv3d_fprop",
                                       "conv3d_dgrad", "conv3d_wgrad"}
    assert len(conv_catalog.load_conv_operations(90)) == 76


def test_sizes_a_3x_kernel_cannot_run_are_named():
    ops = conv_catalog.load_conv_operations(90)
    dgrad = conv_catalog.describe_conv(ops[DGRAD])
    fprop = conv_catalog.describe_conv(ops[FPROP])
    strided = parse_size((2, 14, 14, 64, 64, 3, 3, 2, 1), 2)
    assert "unit stride only, not stride 2" in size_misfit(dgrad, strided)
    assert size_misfit(fprop, strided) == ""
    assert size_misfit(dgrad, parse_size((2, 14, 14, 64, 64, 3, 3, 1, 1), 2)) == ""


def _build(names, sizes=None):
    extra = {"family": ",".join(names), "per_family": None}
    if sizes is not None:
        extra["shapes"] = sizes
    builder = CutlassConvBuilder(BuildOptions(archs=["sm_90a"], extra=extra))
    return [row for item in builder.work_items() for row in builder.build(item)]


@pytest.mark.slow
@needs_nvcc
def test_3x_fprop_compiles_and_packs_with_im2col_and_tiled_maps(tmp_path):
    (row,) = _build([FPROP])
    assert row.status == "built", row.status_message
    assert row.arch == "sm_90a" and "wgmma.mma_async" in row.ptx and row.problem.op == "conv2d_fprop"
    (launch,) = row.launches
    (param,) = entry_params(row.ptx, launch.entry)
    blob = launch.args[0].blob
    assert param.size == len(blob) and launch.block == (256, 1, 1) and launch.cluster == (1, 1, 1)
    # GEMM M = N P Q = 2 * 14 * 14 = 392 over 64-row tiles, N = K = 64: 7 x 1 CTAs
    assert launch.grid == (7, 1, 1)
    maps = {p.buffer: p.tensormap for p in launch.args[0].patches if p.kind == "tensormap"}
    assert set(maps) == {"x", "w", "y"} and row.provenance["c_aliases_d"]  # C's descriptor aliases y
    assert maps["x"]["encode"] == "im2col" and maps["x"]["global_dim"] == [64, 14, 14, 2]
    assert maps["x"]["pixel_box_lower_corner"] == [-1, -1]  # pad 1 on a 3 x 3 filter
    assert "encode" not in maps["w"] and maps["w"]["global_dim"] == [64, 64, 3, 3]
    assert maps["y"]["encode"] == "im2col"
    assert all(blob[p.offset:p.offset + p.size] == bytes(p.size) for p in launch.args[0].patches)
    # The verifier's packing asks the driver for one encode per descriptor, by its kind.
    pytest.importorskip("cuda.bindings.driver", reason="cuda-bindings is not installed")
    from verify.member.args import pack_args
    from verify.device.driver import tensor_map_encode_call
    calls = []

    def encode(tensormap, address):
        calls.append((tensor_map_encode_call(tensormap, address)[0], address))
        return bytes([len(calls)]) * 128

    addresses = {b.name: 0x7F00_0000_0000 + (i << 30) for i, b in enumerate(row.problem.buffers)}
    packed = pack_args(launch, addresses, entry_params(row.ptx, launch.entry), encode)
    im2col, tiled = "cuTensorMapEncodeIm2col", "cuTensorMapEncodeTiled"
    assert sorted(calls) == sorted([(im2col, addresses["x"]), (tiled, addresses["w"]),
                                    (im2col, addresses["y"]), (im2col, addresses["y"])])
    assert packed.buffer[128:256] == bytes([1]) * 128  # x's descriptor, encoded first, at its patch


@pytest.mark.slow
@needs_nvcc
def test_3x_dgrad_at_stride_2_is_not_applicable(tmp_path):
    sizes = tmp_path / "sizes.yaml"
    sizes.write_text("conv2d: [[2, 14, 14, 64, 64, 3, 3, 2, 1]]\n")
    (row,) = _build([DGRAD], str(sizes))
    assert row.status == "not_applicable"
    assert "unit stride only" in row.status_message and "stride-phase" in row.status_message


def test_3x_float32_convs_are_judged_with_tf32_math():
    from builders.cutlass.conv_builder import function_id
    from builders.cutlass.problem import math_input
    name = ("cutlass3x_sm90_tensorop_fprop_f32nhwc_f32nhwc_f32_f32_f32nhwc_64x64x32_1x2x1_0_align4"
            "_warpspecialized_epi_tma")
    spec = conv_catalog.describe_conv(conv_catalog.load_conv_operations(90)[name])
    assert math_input(spec) == "tf32" and function_id(spec, 1.0, 0.0).endswith("_tf32math/a1b0")
