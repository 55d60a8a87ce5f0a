"""CUTLASS sub-byte GEMMs (packed int4/uint4/int2/uint2 operands) and the 3.x mixed-input
GEMMs with scales and zero points: which families are built, their problems, sizes and
packer sources, and one compiled row of each (opt-in compile: needs nvcc)."""
from __future__ import annotations

import pytest

pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed (pip install 'ptxds[cutlass]')")

from builders.base import BuildOptions  # noqa: E402
from builders.cutlass import CutlassBuilder, catalog  # noqa: E402
from builders.cutlass.mixed_input import GROUP_SIZE  # noqa: E402
from builders.cutlass.problem import alignment_misfit, fit_to_family, make_problem  # noqa: E402
from builders.cutlass.source import packer_source  # noqa: E402
from helpers import needs_nvcc  # noqa: E402


@pytest.fixture(scope="module")
def table():
    return catalog.family_table()


def _spec(sm, prefix):
    ops = catalog.load_manifest_operations(sm)
    return catalog.describe_operation(ops[next(n for n in sorted(ops) if n.startswith(prefix))])


def test_sub_byte_and_scaled_families_are_built(table):
    by_key = {f.key: f for f in table}
    for key in ("sm80/2.x/TensorOp/multiply_add_saturate/s4_s4_s32_s32_s32/LinearCombination",
                "sm80/2.x/TensorOp/multiply_add_saturate/u4_u4_s32_s32_s32/LinearCombination",
                "sm80/2.x/TensorOp/multiply_add_mixed_input_upcast/s4_s8_s32_s32_s32/LinearCombination",
                "sm90/3.x/TensorOp/multiply_add+ConvertOnly/s2_bf16_f32_bf16_bf16/LinearCombination",
                "sm90/3.x/TensorOp/multiply_add+ConvertOnly/u4_f16_f32_f16_f16/LinearCombination"):
        assert not by_key[key].excluded, key
    scaled = [f for f in table if "+Scale" in f.math_operation]
    assert len(scaled) == 34 and sum(len(f.kernels) for f in scaled if not f.excluded) == 32 * 40
    lookup = [f for f in scaled if f.excluded]
    assert {f.types for f in lookup} == {"s4_e4m3_f32_e4m3_e4m3", "s4_e5m2_f32_e5m2_e5m2"}
    assert all(f.excluded == catalog.SCALE_LOOKUP_TABLE for f in lookup)
    ops = catalog.load_manifest_operations(90)
    for family in scaled:
        if not family.excluded:  # 40 plain-layout kernels built; the shuffled ones keep their reason
            assert all("_shfl_" not in n and n in ops for n in family.kernels)
    shuffled = [op for name, op in catalog._all_operations(90).items() if "_shfl_" in name]
    assert shuffled and all(catalog.exclusion_reason(op) == catalog.SHUFFLED_NARROW_OPERAND for op in shuffled)


def test_one_bit_families_stay_excluded_with_their_reason(table):
    binary = [f for f in table if f.types.startswith("b1_")]
    assert len(binary) == 2 and all("popcount" in f.excluded for f in binary)
    assert not any("byte-granular" in f.excluded for f in table)


def test_sm80_s4_problem_has_packed_operands():
    spec = _spec(80, "cutlass_tensorop_i16864gemm_s4_")
    problem = make_problem(spec, 128, 64, 256)
    assert [problem.buffer(n).dtype for n in "ABD"] == ["int4", "int4", "int32"]
    assert problem.buffer("A").nbytes == 128 * 256 // 2
    assert problem.op == "gemm" and problem.problem_id.startswith("cutlass/gemm/s4_s4_s32_s32/")
    assert fit_to_family([spec], 512, 768, 520) == (512, 768, 544)  # K: 32 int4 = 16 bytes


@pytest.mark.parametrize("prefix,mode,slots", [
    ("cutlass3x_sm90_tensorop_gemm_s4_bf16_f32_bf16_bf16_scl_", "scale", "ASBD"),
    ("cutlass3x_sm90_tensorop_gemm_u4_f16_f32_f16_f16_sclzr_", "scale_zero", "ASZBD"),
    ("cutlass3x_sm90_tensorop_gemm_e4m3_bf16_f32_bf16_bf16_sclzr_", "scale_zero", "ASZBD"),
])
def test_scaled_problem_states_scales_zero_points_and_group_size(prefix, mode, slots):
    spec = _spec(90, prefix)
    problem = make_problem(spec, 256, 128, 512)
    assert problem.op == "mixed_input_gemm" and [b.name for b in problem.buffers] == list(slots)
    assert problem.params["group_size"] == GROUP_SIZE and problem.params["mode"] == mode
    assert problem.buffer("S").shape == (512 // GROUP_SIZE, 256)
    assert problem.buffer("S").dtype == problem.buffer("B").dtype
    assert problem.params["accumulator"] == "float32"
    assert f"_{'sclzr' if mode == 'scale_zero' else 'scl'}_g128/" in problem.problem_id
    # default size: K rounded up to whole groups; a user's K or M that the scales cannot use is refused
    assert fit_to_family([spec], 512, 768, 520) == (512, 768, 640)
    assert fit_to_family([spec], 1023, 1025, 1031)[0] == 1024
    assert "group size 128" in alignment_misfit(spec, 256, 128, 576)
    assert "M=100" in alignment_misfit(spec, 100, 128, 512)
    source = packer_source([spec])
    assert '#include "mixed_input.h"' in source and f"pack_mixed_input_3x<{spec.name}>" in source


def test_llm_sizes_name_the_int4_layer_at_decode_and_prefill():
    spec = _spec(90, "cutlass3x_sm90_tensorop_gemm_s4_bf16_f32_bf16_bf16_scl_")
    builder = CutlassBuilder(BuildOptions(archs=["sm_90a"], extra={"shapes": "llm"}))
    sizes = builder.sizes_for([spec])
    assert sizes == [(14336, 16, 4096), (14336, 4096, 4096)]
    assert all(not alignment_misfit(spec, *size) for size in sizes)


@needs_nvcc
@pytest.mark.slow
def test_scaled_kernels_build_rows_with_scale_and_zero_tensor_maps():
    """One ScaleWithZeroPoint kernel compiled and packed: the Params hold TMA descriptors for
    S and Z (found by their sentinels), and the group size reached the packer."""
    builder = CutlassBuilder(BuildOptions(archs=["sm_90a"], extra={
        "family": "cutlass3x_sm90_tensorop_gemm_u4_f16_f32_f16_f16_sclzr_*", "per_family": 1}))
    (item,) = builder.work_items()
    (row,) = builder.build(item)
    assert row.status == "built", row.status_message[:2000]
    tensormaps = {p.buffer: p.tensormap for p in row.launches[0].args[0].patches if p.kind == "tensormap"}
    assert {"A", "B", "D", "S", "Z"} <= set(tensormaps)
    scale = tensormaps["S"]
    # (M, K / 128) scales, M contiguous: rows of M 16-bit values
    assert scale["global_dim"][:2] == [512, 640 // 128] and scale["global_strides"][0] == 2 * 512
