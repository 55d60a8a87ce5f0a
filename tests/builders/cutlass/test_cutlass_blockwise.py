"""CUTLASS blockwise-scaled FP8 GEMMs (BlockwiseUniversal3x): every generator family is
built, each kernel's scale granularities come from its operation, its problem holds scale
buffers in the layout its ScaleConfig reads, sizes it cannot run are refused with the
reason, and the packer fills ptr_SFA/layout_SFA/ptr_SFB/layout_SFB (a real packer, and a
real compiled row, with nvcc)."""
from __future__ import annotations

import pytest

pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed (pip install 'ptxds[cutlass]')")

from builders.base import BuildOptions, WorkItem  # noqa: E402
from builders.cutlass import CutlassBuilder, blockwise, catalog  # noqa: E402
from builders.cutlass.builder import cutlass_shape_set  # noqa: E402
from builders.cutlass.problem import alignment_misfit, family_id, make_problem  # noqa: E402
from builders.shapes import LLM, SWEEP, host_bytes, MAX_GROUP_HOST_BYTES  # noqa: E402
from helpers import needs_nvcc  # noqa: E402

DEEPSEEK = ("cutlass3x_sm90_tensorop_gemm_1x128f32xe4m3_128x128f32xe4m3_f32_bf16_bf16_128x128x128_1x2x1_0_"
            "tnn_align16_warpspecialized_cooperative_epi_tma")
PER_ELEMENT = ("cutlass3x_sm90_tensorop_gemm_1x128f32xe4m3_1x128f32xe4m3_f32_f32_f32_128x128x128_2x1x1_0_"
               "tnn_align16_stream_k_warpspecialized_cooperative_epi_nosmem")


def _spec(name):
    return catalog.describe_operation(catalog.load_manifest_operations(90)[name])


@pytest.fixture(scope="module")
def table():
    return catalog.family_table((90,))


def test_every_blockwise_family_is_built_grouped_ones_too(table):
    blockwise_families = [f for f in table if f.opcode_class.endswith(":BlockwiseUniversal3x")]
    assert len(blockwise_families) == 44 and sum(len(f.kernels) for f in blockwise_families) == 2064
    assert not any(f.excluded for f in blockwise_families)
    grouped = [f for f in table if f.opcode_class.endswith(":GroupedBlockwiseUniversal3x")]
    assert len(grouped) == 44 and not any(f.excluded for f in grouped)  # tests/builders/cutlass/test_cutlass_grouped_blockwise.py
    # a blockwise kernel's family is not the plain FP8 family of the same types
    assert catalog.family_key(_spec(DEEPSEEK)).startswith("sm90/3.x/TensorOp:BlockwiseUniversal3x/")


def test_granularities_come_from_the_operation_and_match_the_name():
    for name in catalog.load_manifest_operations(90):
        spec = _spec(name) if "f32xe" in name else None
        if spec is None:
            continue
        gm, gn, gk = blockwise.granularity(spec)
        assert f"_{gm}x{gk}f32x" in name and f"_{gn}x{gk}f32x" in name
    assert blockwise.granularity(_spec(DEEPSEEK)) == (1, 128, 128)


def test_problem_holds_mn_major_scales_and_its_own_group():
    spec = _spec(DEEPSEEK)
    problem = make_problem(spec, 512, 768, 640)
    assert problem.op == "blockwise_scaled_gemm"
    assert [b.name for b in problem.buffers] == ["A", "B", "SFA", "SFB", "D"]
    assert problem.buffer("A").shape == (512, 640) and problem.buffer("B").shape == (768, 640)  # t, n
    assert problem.buffer("SFA").shape == (5, 512)  # K blocks x M (M fastest), float32
    assert problem.buffer("SFB").shape == (5, 6)    # K blocks x N/128
    assert problem.buffer("D").shape == (768, 512) and problem.buffer("D").dtype == "bfloat16"  # column-major
    assert problem.params["scale_granularity_a"] == [1, 128] and problem.params["scale_granularity_b"] == [128, 128]
    assert family_id(spec, 1.0, 0.0) == "cutlass/blockwise_gemm/e4m3_e4m3_f32_bf16/rcc/sfa1x128_sfb128x128/a1b0"
    assert problem.problem_id.endswith("/M512N768K640")
    # beta != 0 adds C of the kernel's C type
    with_c = make_problem(spec, 512, 768, 640, beta=0.5)
    assert with_c.buffer("C").dtype == "bfloat16" and "cbf16" in with_c.problem_id


def test_sizes_a_kernel_cannot_run_are_refused_with_the_reason():
    spec = _spec(DEEPSEEK)  # SFA by TMA (128 scales per tile along M), D stored by TMA
    assert alignment_misfit(spec, 512, 768, 640) == ""
    assert "multiple of 4 scales" in alignment_misfit(spec, 1002, 768, 640)
    assert "must be a multiple of 8" in alignment_misfit(spec, 1004, 768, 640)  # bf16 D rows, 16 bytes
    assert "alignment 16" in alignment_misfit(spec, 512, 768, 600)  # A's K rows
    assert blockwise.tma_scale_operands(spec) == ("SFA",)
    assert blockwise.tma_scale_operands(_spec(PER_ELEMENT)) == ()  # 128 scales along both sides
    assert alignment_misfit(_spec(PER_ELEMENT), 1002, 768, 640) == ""  # cp.async scales, no-smem epilogue


def test_shape_sets_name_blockwise_sizes_the_kernels_accept():
    spec = _spec(DEEPSEEK)
    default = cutlass_shape_set(None).sizes_for("blockwise_scaled_gemm")
    assert default == (blockwise.BLOCKWISE_DEFAULT_PROBLEM,)
    for shape_set in (LLM, SWEEP):
        for size in shape_set.sizes_for("blockwise_scaled_gemm"):
            assert alignment_misfit(spec, *size) == "", size
            assert host_bytes(make_problem(spec, *size).buffers) <= MAX_GROUP_HOST_BYTES, size
    assert (16, 7168, 7168) in LLM.sizes_for("blockwise_scaled_gemm")  # decode


@needs_nvcc
def test_packer_fills_the_scale_pointers_and_layouts():
    """A real packer: SFA is a TMA descriptor (M-major: M floats per K block) plus its raw
    pointer; SFB a pointer; the 1x128/1x128 kernel loads both scales with cp.async."""
    from builders.cutlass.compile import build_packer
    from builders.cutlass.packer import pack_launch
    from builders.cutlass.source import packer_source
    specs = [_spec(DEEPSEEK), _spec(PER_ELEMENT)]
    packer = build_packer(packer_source(specs), "sm_90a")
    packed = pack_launch(packer, DEEPSEEK, 512, 768, 640, 1.0, 0.0, 132, False, alias_c_to_d=True,
                         extra_slots=blockwise.EXTRA_SLOTS)
    sfa_map = [p for p in packed.patches if p.buffer == "SFA" and p.kind == "tensormap"]
    assert len(sfa_map) == 1
    assert sfa_map[0].tensormap["global_dim"][:2] == [512, 5] and sfa_map[0].tensormap["global_strides"][0] == 4 * 512
    assert {p.buffer for p in packed.patches if p.kind == "address"} >= {"SFA", "SFB"}
    other = pack_launch(packer, PER_ELEMENT, 512, 768, 640, 1.0, 0.0, 132, False, alias_c_to_d=True,
                        extra_slots=blockwise.EXTRA_SLOTS)
    assert not [p for p in other.patches if p.buffer in ("SFA", "SFB") and p.kind == "tensormap"]
    assert {p.buffer for p in other.patches} >= {"A", "B", "D", "SFA", "SFB"}


@pytest.mark.slow
@needs_nvcc
def test_one_blockwise_kernel_builds_a_runnable_row():
    size = blockwise.BLOCKWISE_DEFAULT_PROBLEM
    item = WorkItem(key="test", group_id="test", label="test", payload={
        "names": [DEEPSEEK], "sm": 90, "arch": "sm_90a", "problems": [list(size)], "exact": False,
        "shape_set": "default", "alpha": 1.0, "beta": 0.0, "sm_count": 132, "families": [DEEPSEEK],
        "limit": None, "sample_seed": 0, "per_family": 1})
    rows = CutlassBuilder(BuildOptions(archs=["sm_90a"])).build(item)
    assert rows[0].status == "built", rows[0].status_message[:2000]
    row = rows[0]
    assert "wgmma" in row.ptx and "cp.async.bulk.tensor" in row.ptx
    assert row.problem.op == "blockwise_scaled_gemm"
    assert {p.buffer for p in row.launches[0].args[0].patches} >= {"A", "B", "D", "SFA", "SFB"}
