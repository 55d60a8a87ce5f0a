"""CPU tests of CUTLASS grouped GEMM kernels: catalog, sizes, and real built rows whose
Params point at the problem's device tables.

Compiles one 2.x GemmGrouped kernel and one 3.x ptr-array grouped kernel (cached under
~/.cache/ptxds/cutlass); skipped when nvidia-cutlass or the CUDA compiler wheels are absent.
"""
from __future__ import annotations

import pytest

pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed (pip install 'ptxds[cutlass]')")

from builders.base import BuildOptions  # noqa: E402
from builders.cutlass import CutlassBuilder, catalog, grouped  # noqa: E402
from builders.moe_shapes import DEFAULT_GROUPED  # noqa: E402
from builders.shapes import LLM  # noqa: E402
from helpers import needs_nvcc  # noqa: E402
from dataset_spec.model import SpecError  # noqa: E402
from dataset_spec.ops.grouped_gemm import TABLE_NAMES  # noqa: E402

KERNEL_2X = "cutlass_tensorop_h16816gemm_grouped_128x128_32x3_tn_align8_scheduleDevice"
KERNEL_3X = ("cutlass3x_sm90_tensorop_gemm_grouped_bf16_bf16_f32_bf16_bf16_128x128x64_1x2x1_0_tnn_align8_"
             "warpspecialized_cooperative_epi_tma")


def _spec(sm, name):
    return catalog.describe_operation(catalog.load_manifest_operations(sm)[name])


def test_grouped_families_are_built_and_2x_names_parse():
    table = catalog.family_table()
    kinds = [f for f in table if f.opcode_class.endswith((":Grouped", ":GroupedUniversal3x"))]
    assert len([f for f in kinds if f.sm == 80]) == 3 and len([f for f in kinds if f.sm == 90]) == 54
    assert not any(f.excluded for f in kinds)
    assert sum(len(f.kernels) for f in kinds) == 792 + 2632
    spec = _spec(80, KERNEL_2X)
    assert spec.knobs["gemm_kind"] == "Grouped" and spec.knobs["scheduler_mode"] == "Device"
    assert spec.knobs["alignment"] == 8 and spec.knobs["threadblock_tile"] == [128, 128, 32]
    # the default families stay the plain GEMMs
    assert not any(grouped.is_grouped(s) for s in catalog.enumerate_kernels())


def test_sizes_fit_alignments_and_name_the_group():
    spec = _spec(90, KERNEL_3X)
    assert grouped.layouts(spec) == {"a": "row", "b": "col", "c": "col"}
    assert grouped.misfit(spec, ((16, 64, 64), (12, 64, 64))).startswith(f"{spec.name}: problem 1: C's contiguous")
    assert grouped.fit([spec], ((12, 60, 64),)) == ((16, 60, 64),)  # no operand is contiguous along N
    gid = grouped.group_id(spec, DEFAULT_GROUPED[0], 1.0, 0.0)
    assert gid == "cutlass/grouped_gemm/bf16_bf16_f32_bf16/rcc/a1b0/G4xa319e668"
    assert grouped.threadblock_count(_spec(80, KERNEL_2X), DEFAULT_GROUPED[0], 132) == 7
    assert grouped.threadblock_count(_spec(80, KERNEL_2X), LLM.grouped[1], 132) == 132
    void_c = _spec(90, KERNEL_3X.replace("bf16_bf16_f32_bf16_bf16", "bf16_bf16_f32_void_bf16"))
    assert "ptr_C" not in grouped.table_slots(void_c) and grouped.table_slots(spec) == TABLE_NAMES


def test_bad_grouped_sizes_are_refused_in_one_line():
    from builders.shapes import CROSSOURCE, ShapeSet
    with pytest.raises(SpecError, match="names no grouped sizes"):
        grouped.sizes_for(CROSSOURCE)
    odd = ShapeSet(name="odd", grouped=(((3, 8, 5), (8, 8, 8)),), exact=True)
    builder = CutlassBuilder(BuildOptions(archs=["sm_80"], extra={"family": KERNEL_2X}))
    object.__setattr__(builder, "shape_set", odd)
    with pytest.raises(SpecError, match="not 16-byte aligned"):  # A_1 would start 3 * 5 * 2 bytes in
        builder.work_items()


def _build(name, arch, beta=0.0):
    builder = CutlassBuilder(BuildOptions(archs=[arch], extra={"family": name, "beta": beta}))
    (item,) = builder.work_items()
    assert item.payload["kind"] == grouped.KIND
    return builder.build(item)


@needs_nvcc
def test_2x_grouped_row_points_at_every_table():
    (row,) = _build(KERNEL_2X, "sm_80")
    assert row.status == "built", row.status_message[:2000]
    assert row.problem.op == "grouped_gemm" and row.problem.params["problems"] == [list(p) for p in DEFAULT_GROUPED[0]]
    (launch,) = row.launches
    patches = launch.args[0].patches
    assert {p.buffer for p in patches} == set(TABLE_NAMES) and all(p.addend == 0 for p in patches)
    assert launch.grid == (7, 1, 1) and launch.block == (128, 1, 1) and "Kernel" in launch.entry
    assert row.scratch == []  # device scheduling: no workspace
    assert row.problem.buffer("ptr_A").init.params["entries"][1] == ["A", 2 * 128 * 520]


@needs_nvcc
def test_3x_grouped_row_has_placeholder_tensormaps_and_a_workspace():
    (row,) = _build(KERNEL_3X, "sm_90a", beta=0.5)
    assert row.status == "built", row.status_message[:2000]
    assert "C" in [b.name for b in row.problem.buffers]
    patches = row.launches[0].args[0].patches
    maps = [p for p in patches if p.kind == "tensormap"]
    # the Params' descriptors are placeholders on the pointer arrays; the kernel rewrites them
    assert {p.buffer for p in maps} >= {"ptr_A", "ptr_B"}
    assert set(TABLE_NAMES) <= {p.buffer for p in patches}
    (workspace,) = row.scratch
    assert workspace.nbytes >= 2 * 128 * 132  # A and B descriptors per SM
    assert row.launches[0].cluster == (1, 2, 1)


def test_per_family_keeps_grouped_and_plain_families_apart():
    """The plain, the grouped and the planar complex (plain and array) f16 GEMMs share arch,
    opcode, math and types: --per-family must still take one of each."""
    specs = [s for s in catalog.enumerate_kernels(("cutlass_tensorop_h16816gemm_*",), ("sm_80",))
             if catalog.family_key(s).endswith("/multiply_add/f16_f16_f16_f16_f16/LinearCombination")]
    keys = {catalog.family_key(s) for s in specs}
    assert keys == {"sm80/2.x/TensorOp/multiply_add/f16_f16_f16_f16_f16/LinearCombination",
                    "sm80/2.x/TensorOp:Grouped/multiply_add/f16_f16_f16_f16_f16/LinearCombination",
                    "sm80/2.x/TensorOp:PlanarComplex/multiply_add/f16_f16_f16_f16_f16/LinearCombination",
                    "sm80/2.x/TensorOp:PlanarComplexArray/multiply_add/f16_f16_f16_f16_f16/LinearCombination"}
    picked = catalog.per_family(specs, 1, seed=0)
    assert sorted(s.knobs["gemm_kind"] for s in picked) == ["Grouped", "PlanarComplex", "PlanarComplexArray",
                                                            "Universal"]
    assert sorted(grouped.is_grouped(s) for s in picked) == [False, False, True, True]
