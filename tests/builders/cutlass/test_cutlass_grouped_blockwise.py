"""CUTLASS grouped blockwise-scaled FP8 GEMMs (GroupedBlockwiseUniversal3x): every generator
family is built, a kernel's problem holds concatenated operands and scales with their
pointer tables, sizes it cannot store are refused with the reason, the shape sets name sizes
the kernels accept, and a real packer puts the scale pointer tables in the Params (nvcc)."""
from __future__ import annotations

import pytest

pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed (pip install 'ptxds[cutlass]')")

from builders.base import BuildOptions  # noqa: E402
from builders.cutlass import CutlassBuilder, catalog, grouped, grouped_blockwise  # noqa: E402
from builders.moe_shapes import DEFAULT_GROUPED_BLOCKWISE  # noqa: E402
from builders.shapes import LLM, MAX_GROUP_HOST_BYTES, SWEEP, host_bytes  # noqa: E402
from helpers import needs_nvcc  # noqa: E402
from dataset_spec.ops.grouped_blockwise_gemm import OP, TABLE_NAMES  # noqa: E402

DEEPSEEK = ("cutlass3x_sm90_tensorop_gemm_grouped_1x128f32xe4m3_128x128f32xe4m3_f32_bf16_bf16_128x128x128_1x2x1_0_"
            "tnn_align16_warpspecialized_cooperative_epi_tma")
FP8_OUT = ("cutlass3x_sm90_tensorop_gemm_grouped_128x128f32xe4m3_128x128f32xe4m3_f32_void_e4m3_128x128x128_1x2x1_0_"
           "tnn_align16_warpspecialized_cooperative_epi_tma")
NO_SMEM = DEEPSEEK.replace("epi_tma", "epi_nosmem")


def _spec(name):
    return catalog.describe_operation(catalog.load_manifest_operations(90)[name])


def test_every_grouped_blockwise_family_is_built():
    table = catalog.family_table((90,))
    families = [f for f in table if f.opcode_class.endswith(":GroupedBlockwiseUniversal3x")]
    assert len(families) == 44 and sum(len(f.kernels) for f in families) == 1080
    assert not any(f.excluded for f in families)
    spec = _spec(DEEPSEEK)
    assert grouped.is_grouped(spec) and grouped_blockwise.is_grouped_blockwise(spec)
    assert grouped_blockwise.granularity(spec) == (1, 128, 128)
    assert catalog.family_key(spec).startswith("sm90/3.x/TensorOp:GroupedBlockwiseUniversal3x/")


def test_problem_holds_every_experts_operands_scales_and_tables():
    spec = _spec(DEEPSEEK)
    size = DEFAULT_GROUPED_BLOCKWISE[0]
    problem = grouped.make_problem(spec, size, 1.0, 0.0)
    assert problem.op == OP
    assert problem.problem_id == grouped.group_id(spec, size, 1.0, 0.0)
    assert problem.problem_id.startswith(
        "cutlass/grouped_blockwise_gemm/e4m3_e4m3_f32_bf16/rcc/sfa1x128_sfb128x128/a1b0/")
    # SFA: M_i x ceil(K_i/128) floats per expert (1x128), SFB: ceil(N_i/128) x ceil(K_i/128)
    assert problem.buffer("SFA").shape == (sum(m * -(-k // 128) for m, _, k in size),)
    assert problem.buffer("SFB").shape == (sum(-(-n // 128) * -(-k // 128) for _, n, k in size),)
    assert problem.buffer("D").dtype == "bfloat16" and problem.params["layout_c"] == "col"
    assert grouped.table_slots(spec) == TABLE_NAMES
    void_c = grouped.table_slots(_spec(FP8_OUT))
    assert "ptr_C" not in void_c and {"ptr_SFA", "ptr_SFB"} <= set(void_c)
    with_c = grouped.make_problem(spec, size, 1.0, 0.5)
    assert with_c.buffer("C").dtype == "bfloat16" and "cbf16" in with_c.problem_id


def test_sizes_a_tma_epilogue_cannot_store_are_refused_and_built_in_sets_fit():
    fp8 = _spec(FP8_OUT)  # e4m3 D by TMA along M: 16 rows
    assert "D's contiguous extent M=40 is not a multiple of its alignment 16" in grouped.misfit(
        fp8, ((32, 128, 256), (40, 128, 256)))
    assert grouped.misfit(_spec(NO_SMEM), ((32, 128, 256), (40, 128, 256))) == ""
    assert "multiple of its alignment 16" in grouped.misfit(fp8, ((32, 128, 200),))  # A's K rows
    assert grouped.fit([fp8], ((40, 100, 200),)) == ((48, 100, 208),)
    for shape_set in (LLM, SWEEP):
        sizes = grouped.sizes_for(shape_set, OP)
        assert sizes and sizes != grouped.sizes_for(shape_set)
        for size in sizes:
            for spec in (fp8, _spec(DEEPSEEK)):
                assert grouped.misfit(spec, size) == "", (shape_set.name, size)
            assert host_bytes(grouped.make_problem(fp8, size, 1.0, 0.0).buffers) <= MAX_GROUP_HOST_BYTES
    assert any(len(size) == 8 and len({m for m, _, _ in size}) > 1 for size in LLM.per_op[OP])  # uneven experts


def test_sweep_holds_a_partial_k_block_every_family_accepts():
    """K = 1040 = 8 x 128 + 16: CUTLASS's ptr-array blockwise mainloop runs ceil(K / 128)
    k tiles (TMA zero-fills A and B past K) and its scale layout holds ceil(K / 128) blocks
    along K (tile_atom_to_shape_SFA/SFB), so the ninth block's scale multiplies a 16-product
    sum, as the reference does; can_implement checks only 16-byte TMA rows of A and B."""
    partial = [size for size in grouped.sizes_for(SWEEP, OP) if any(k % 128 for _, _, k in size)]
    assert partial and {k for size in partial for _, _, k in size} == {1040}
    specs = [catalog.describe_operation(op) for op in catalog.load_manifest_operations(90).values()]
    specs = [s for s in specs if grouped_blockwise.is_grouped_blockwise(s)]
    assert len(specs) == 1080
    for spec in specs:
        assert grouped.fit([spec], partial[0]) == partial[0] and grouped.misfit(spec, partial[0]) == ""
    problem = grouped.make_problem(_spec(DEEPSEEK), partial[0], 1.0, 0.0)
    experts = len(partial[0])
    rows = sum(m for m, _, _ in partial[0])
    # SFA: 1 x 128 blocks, 9 along K per row; SFB: 128 x 128 blocks, ceil(384 / 128) x 9 per expert
    assert problem.buffer("SFA").numel == rows * 9 and problem.buffer("SFB").numel == experts * 3 * 9


def test_work_item_carries_the_kinds_sizes():
    builder = CutlassBuilder(BuildOptions(archs=["sm_90a"], extra={"family": DEEPSEEK}))
    (item,) = builder.work_items()
    assert item.payload["kind"] == grouped.KIND
    assert item.payload["problems"] == [[list(p) for p in DEFAULT_GROUPED_BLOCKWISE[0]]]
    assert item.key.startswith("cutlass/grouped_blockwise_gemm/")


@needs_nvcc
def test_packer_puts_the_scale_pointer_tables_in_the_params():
    """A real packer: every table, the scale pointer arrays included, is a pointer field of
    the Params; the TMA descriptors are placeholders on the pointer arrays; the workspace
    holds per-SM descriptors."""
    from builders.cutlass.compile import build_packer
    from builders.cutlass.packer import pack_launch
    from builders.cutlass.source import packer_source
    spec = _spec(DEEPSEEK)
    packer = build_packer(packer_source([spec]), "sm_90a")
    size = DEFAULT_GROUPED_BLOCKWISE[0]
    m, n, k = size[0]
    packed = pack_launch(packer, spec.name, m, n, k, 1.0, 0.0, 132, False, extra_slots=grouped.table_slots(spec),
                         params={"problem_count": len(size)}, operand_slots=())
    pointers = {p.buffer for p in packed.patches if p.kind == "address"}
    assert {"ptr_SFA", "ptr_SFB", "problem_sizes", "ld_A", "ld_B"} <= pointers
    assert set(TABLE_NAMES) <= {p.buffer for p in packed.patches}
    assert {p.buffer for p in packed.patches if p.kind == "tensormap"} >= {"ptr_A", "ptr_B"}
    assert all(p.addend == 0 for p in packed.patches if p.buffer in ("ptr_SFA", "ptr_SFB"))
    assert packed.workspace_bytes >= 2 * 128 * 132 and packed.cluster == (1, 2, 1)
    assert packed.grid[0] <= 132 and packed.block[0] == 384


@pytest.mark.slow
@needs_nvcc
def test_one_grouped_blockwise_kernel_builds_a_row_whose_params_point_at_every_table():
    builder = CutlassBuilder(BuildOptions(archs=["sm_90a"], extra={"family": DEEPSEEK}))
    (item,) = builder.work_items()
    (row,) = builder.build(item)
    assert row.status == "built", row.status_message[:2000]
    assert "wgmma" in row.ptx and "cp.async.bulk.tensor" in row.ptx
    assert row.problem.op == OP and row.variant["scale_granularity"] == [1, 128, 128]
    (launch,) = row.launches
    patches = launch.args[0].patches
    assert set(TABLE_NAMES) <= {p.buffer for p in patches}
    assert launch.cluster == (1, 2, 1) and row.scratch and row.scratch[0].name == "workspace"
    entries = row.problem.buffer("ptr_SFA").init.params["entries"]
    assert [e[0] for e in entries] == ["SFA"] * len(DEFAULT_GROUPED_BLOCKWISE[0]) and entries[0][1] == 0
