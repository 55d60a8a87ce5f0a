"""CPU tests of the CUTLASS convolution source (builders/cutlass/conv_*.py): the
generator's conv families, each built or excluded with a reason; sizes fitted to a
family; two real kernels (fprop and wgrad) compiled with nvcc and their Params packed with
sentinel pointers; a size CUTLASS refuses becomes a not_applicable row."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed (pip install 'ptxds[cutlass]')")

from builders.base import BuildOptions  # noqa: E402
from builders.cutlass import conv_catalog  # noqa: E402
from builders.cutlass.conv_builder import (CutlassConvBuilder, fit_to_family,  # noqa: E402
                                           make_conv_problem, parse_size)
from builders.cutlass.builder import entry_params  # noqa: E402
from builders.shapes import LLM, SWEEP  # noqa: E402
from dataset_spec.ops import get_op  # noqa: E402
from helpers import assert_saturating_outputs_spread, needs_nvcc  # noqa: E402

FPROP = "cutlass_tensorop_h16816fprop_optimized_64x128_64x3_nhwc_align4"
WGRAD = "cutlass_tensorop_h16816wgrad_optimized_64x128_64x3_nhwc_align4"


def test_every_generator_conv_family_is_built_or_excluded_with_a_reason():
    table = conv_catalog.conv_family_table()
    sm80 = [f for f in table if f.sm == 80]
    sm90 = [f for f in table if f.sm == 90]
    assert sum(len(f.kernels) for f in sm80) == len(conv_catalog.all_conv_operations(80)) == 9390
    assert len(conv_catalog.all_conv_operations(90)) == 76
    built = [f for f in sm80 if not f.excluded]
    # all of them: sub-byte (packed int4/uint4), interleaved (nc32hw32/nc64hw64) and complex ones too
    assert len(built) == len(sm80) == 126
    assert {f.conv for f in built} == {f"conv{d}d_{k}" for d in (2, 3) for k in ("fprop", "dgrad", "wgrad")}
    assert len(sm90) == 14 and not any(f.excluded for f in sm90)  # 3.x TMA convs: im2col maps are recorded
    assert sum(len(f.kernels) for f in sm90) == 76
    variants = {f.variant for f in built}
    assert {"NoneGroup+nc32hw32", "NoneGroup+nc64hw64"} <= variants
    assert sum(1 for f in built if f.types.startswith(("s4_", "u4_"))) == 12 + 2
    assert sum(1 for f in built if f.types.startswith("cf32_")) == 3
    docs = (Path(__file__).resolve().parents[3] / "docs" / "cutlass.md").read_text()
    assert conv_catalog.conv_family_markdown() in docs, "regenerate docs/cutlass.md's conv tables"


def test_knobs_of_a_known_conv_kernel():
    spec = conv_catalog.describe_conv(conv_catalog.load_conv_operations(80)[FPROP])
    k = spec.knobs
    assert (spec.kind, spec.dims, spec.generation) == ("fprop", 2, 2)
    assert k["threadblock_tile"] == [64, 128, 64] and k["stages"] == 3 and k["alignment_a"] == 4
    assert (k["element_a"], k["element_accumulator"], k["element_d"]) == ("f16", "f16", "f16")
    assert (k["iterator_algorithm"], k["group_mode"]) == ("Optimized", "NoneGroup")


def _family(key_part: str):
    specs = [conv_catalog.describe_conv(op) for op in conv_catalog.load_conv_operations(80).values()]
    return [s for s in specs if key_part in conv_catalog.conv_family_key(s)]


def test_sizes_fit_alignments_channel_iterators_and_group_modes():
    stem = parse_size((8, 224, 224, 3, 64, 7, 7, 2, 3), 2)
    plain = [s for s in _family("conv2d_fprop/tensorop/multiply_add/f16_f16_f16_f16_f16/LinearCombination/NoneGroup")
             if s.knobs["group_mode"] == "NoneGroup" and "Channels" not in s.knobs["iterator_algorithm"]]
    fitted = fit_to_family(plain, stem)
    assert fitted.c == 8 and fitted.k == 64 and fitted.groups == 1          # align8 members round C up
    fixed = _family("NoneGroup+FixedChannels4")
    assert fit_to_family(fixed, stem).c == 4
    single = _family("f16_f16_f16_f16_f16/LinearCombination/SingleGroup")
    size = fit_to_family(single, parse_size((2, 14, 14, 64, 64, 3, 3, 1, 1), 2))
    assert size.groups == 2 and all((size.k // 2) % s.knobs["threadblock_tile"][1] == 0 for s in single)
    multiple = _family("f16_f16_f16_f16_f16/LinearCombination/MultipleGroup")
    size = fit_to_family(multiple, parse_size((2, 14, 14, 64, 64, 3, 3, 1, 1), 2))
    assert size.groups >= 2 and all(s.knobs["threadblock_tile"][1] % (size.k // size.groups) == 0 for s in multiple)


def test_shape_sets_hold_resnet_and_vit_convs():
    assert (8, 56, 56, 64, 64, 3, 3, 1, 1) in LLM.conv2d and (8, 224, 224, 3, 768, 16, 16, 16, 0) in LLM.conv2d
    assert (8, 224, 224, 3, 64, 7, 7, 2, 3) in LLM.conv2d and LLM.conv3d and SWEEP.conv2d and SWEEP.conv3d
    spec = conv_catalog.describe_conv(conv_catalog.load_conv_operations(80)[FPROP])
    for values in LLM.conv2d + SWEEP.conv2d:  # every built-in size is a valid conv problem after fitting
        size = fit_to_family([spec], parse_size(values, 2))
        problem = make_conv_problem(spec, size, 1.0, 0.0)
        assert get_op(problem.op).reduction_length(problem) > 0


def _build(names, sizes=None):
    extra = {"family": ",".join(names), "per_family": None}
    if sizes is not None:
        extra["shapes"] = sizes
    builder = CutlassConvBuilder(BuildOptions(archs=["sm_80"], extra=extra))
    rows = []
    for item in builder.work_items():
        rows += builder.build(item)
    return rows


@pytest.mark.slow
@needs_nvcc
def test_fprop_and_wgrad_compile_and_pack_end_to_end(tmp_path):
    rows = {r.name: r for r in _build([FPROP, WGRAD])}
    assert set(rows) == {FPROP, WGRAD}
    for name, row in rows.items():
        assert row.status == "built", row.status_message
        (launch,) = row.launches
        assert "mma.sync" in row.ptx and "cp.async" in row.ptx
        (param,) = entry_params(row.ptx, launch.entry)
        blob = launch.args[0].blob
        assert param.size == len(blob) and launch.block == (128, 1, 1)
        patches = {p.buffer for p in launch.args[0].patches}
        inputs = [b.name for b in row.problem.buffers]
        assert patches == set(inputs), (patches, inputs)
        assert all(blob[p.offset:p.offset + 8] == bytes(8) for p in launch.args[0].patches)
    fprop = rows[FPROP]
    assert fprop.problem.op == "conv2d_fprop" and [b.name for b in fprop.problem.buffers] == ["x", "w", "y"]
    # GEMM M = N P Q = 392 over a 64-row tile: 7 CTAs along M, one along N (K = 64)
    assert fprop.launches[0].grid == (7, 1, 1)
    assert [b.name for b in rows[WGRAD].problem.buffers] == ["dy", "x", "dw"]


@pytest.mark.slow
@needs_nvcc
def test_a_size_the_kernel_cannot_run_is_not_applicable(tmp_path):
    sizes = tmp_path / "sizes.yaml"
    sizes.write_text("conv2d: [[1, 8, 8, 30, 64, 3, 3, 1, 1]]\n")  # C = 30: not a multiple of 4
    (row,) = _build([FPROP], str(sizes))
    assert row.status == "not_applicable" and "can_implement" in row.status_message


def test_bad_requests_are_one_line_errors():
    from dataset_spec.model import SpecError
    with pytest.raises(SpecError, match="matches none of the 9390 built CUTLASS conv kernels"):
        CutlassConvBuilder(BuildOptions(archs=["sm_80"], extra={"family": "nope*"})).work_items()
    with pytest.raises(SpecError, match="pass --arch sm_80 and/or --arch sm_90a"):
        CutlassConvBuilder(BuildOptions(archs=["sm_75"], extra={"family": FPROP})).work_items()
    with pytest.raises(SpecError, match="matches none of the 76 built CUTLASS conv kernels for sm_90a"):
        CutlassConvBuilder(BuildOptions(archs=["sm_90a"], extra={"family": FPROP})).work_items()
    with pytest.raises(SpecError, match="names no conv2d or conv3d sizes"):
        CutlassConvBuilder(BuildOptions(archs=["sm_80"], extra={"family": FPROP, "shapes": "crossource"}))


@pytest.mark.slow
@needs_nvcc
def test_beta_gives_the_problem_a_c_operand_and_its_pointer_a_patch():
    builder = CutlassConvBuilder(BuildOptions(archs=["sm_80"], extra={"family": FPROP, "beta": 0.5}))
    (row,) = [r for item in builder.work_items() for r in builder.build(item)]
    assert row.status == "built", row.status_message
    assert [b.name for b in row.problem.buffers] == ["x", "w", "C", "y"] and row.problem.params["beta"] == 0.5
    assert {p.buffer for p in row.launches[0].args[0].patches} == {"x", "w", "C", "y"}
    assert row.group_id.startswith("cutlass/conv2d_fprop/f16_f16_f16_cf16_f16/a1b0.5/")


# one kernel of each family kind built since every conv family is: packed int4 (NHWC),
# interleaved int8 (nc32hw32 activations, c32rsk32 filters) and complex<float> (SIMT)
SUB_BYTE = "cutlass_tensorop_s4_i16864fprop_analytic_s4_64x64_256x5_nhwc_align32"
INTERLEAVED = "cutlass_tensorop_s8_i16832fprop_analytic_s8_128x64_64x6_nc32hw32_align16"
COMPLEX = "cutlass_simt_cf32_cfprop_analytic_cf32_64x64_8x3_nhwc_align1"


@pytest.mark.slow
@needs_nvcc
def test_sub_byte_interleaved_and_complex_convs_compile_and_pack():
    rows = {r.name: r for r in _build([SUB_BYTE, INTERLEAVED, COMPLEX])}
    assert set(rows) == {SUB_BYTE, INTERLEAVED, COMPLEX}
    for name, row in rows.items():
        assert row.status == "built", f"{name}: {row.status_message}"
        (launch,) = row.launches
        (param,) = entry_params(row.ptx, launch.entry)
        assert param.size == len(launch.args[0].blob)
        assert {p.buffer for p in launch.args[0].patches} == {b.name for b in row.problem.buffers}
        problem = row.problem
        assert get_op(problem.op).reduction_length(problem) > 0
    s4 = rows[SUB_BYTE]
    assert "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32" in s4.ptx
    assert [(b.dtype, b.nbytes) for b in s4.problem.buffers][0] == ("int4", 2 * 14 * 14 * 64 // 2)
    inter = rows[INTERLEAVED]
    assert inter.problem.params["layout"] == "nc32hw32"
    assert [b.shape for b in inter.problem.buffers] == [(2, 2, 14, 14, 32), (2, 3, 3, 64, 32), (2, 2, 14, 14, 32)]
    assert inter.group_id.startswith("cutlass/conv2d_fprop/s8_s8_s32_s8_nc32hw32/")
    cplx = rows[COMPLEX]
    assert cplx.problem.params["complex"] == {"planar": False} and "mma.sync" not in cplx.ptx
    assert [b.shape for b in cplx.problem.buffers][0] == (2, 14, 14, 64, 2)


def test_unsigned_saturating_convs_get_sparse_operands_and_a_power_of_two_alpha():
    from builders.cutlass.conv_builder import epilogue_alpha
    ops = conv_catalog.load_conv_operations(80)
    size = parse_size((2, 14, 14, 64, 64, 3, 3, 1, 1), 2)
    u4 = conv_catalog.describe_conv(ops["cutlass_tensorop_u4_i16864fprop_analytic_u4_128x128_128x5_nhwc_align32"])
    u8 = conv_catalog.describe_conv(ops["cutlass_tensorop_u8_i16832fprop_analytic_u8_128x128_64x5_nc32hw32_align16"])
    s4 = conv_catalog.describe_conv(ops[SUB_BYTE])
    u4_s32 = conv_catalog.describe_conv(ops["cutlass_tensorop_i16864fprop_analytic_u4_128x128_128x5_nhwc_align32"])
    for spec in (u4, u8):
        alpha = epilogue_alpha(spec, size, 1.0, False)
        assert alpha < 1 and math.log2(alpha).is_integer()
        problem = make_conv_problem(spec, size, alpha, 0.0)
        assert problem.params["operand_density"] == pytest.approx((16 / 576) ** 0.5)
        assert problem.buffer("x").init.kind == "normal" and problem.buffer("x").init.params["mean"] < 0
        assert f"/a{alpha:g}b0/" in problem.problem_id
    assert epilogue_alpha(u4, size, 0.5, True) == 0.5
    assert "operand_density" not in make_conv_problem(s4, size, 1.0, 0.0).params  # signed: full-range operands
    assert "operand_density" not in make_conv_problem(u4_s32, size, 1.0, 0.0).params  # s32 output: full range
    assert epilogue_alpha(u4_s32, size, 1.0, False) == 1.0


@pytest.mark.parametrize("name", [SUB_BYTE, "cutlass_tensorop_s8_i16832fprop_analytic_s8_128x128_64x5_nc32hw32_align16"])
def test_signed_saturating_convs_get_a_power_of_two_alpha_that_spreads_their_outputs(name):
    """s4 -> s4 and s8 -> s8 convs: full-range operands saturated 97-100% of the outputs at
    alpha 1 (a check of little more than signs). spread_alpha's power of two leaves most of
    a uniform trial's outputs inside the range, a correct kernel passes, and a kernel that
    keeps only the sign (stores +-top) is caught."""
    from builders.cutlass.conv_builder import epilogue_alpha
    spec = conv_catalog.describe_conv(conv_catalog.load_conv_operations(80)[name])
    size = parse_size((2, 14, 14, 64, 64, 3, 3, 1, 1), 2)
    alpha = epilogue_alpha(spec, size, 1.0, False)
    assert alpha < 1 and math.log2(alpha).is_integer()
    problem = make_conv_problem(spec, size, alpha, 0.0)
    assert_saturating_outputs_spread(problem, {"int4": 7, "int8": 127}[problem.buffer("y").dtype])
