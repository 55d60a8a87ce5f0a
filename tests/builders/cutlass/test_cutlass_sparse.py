"""CPU tests of the CUTLASS 2:4 sparse GEMM rows: the families are built, sizes are fitted
to what the kernels accept, and a compiled SM80 and SM90 kernel each give a row whose
Params carry A, B, D and the metadata operand E, with a sparse_gemm problem whose E buffer
has the kernel's metadata layout. Compiles two kernels (cached under ~/.cache/ptxds)."""
from __future__ import annotations

import pytest

pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed (pip install 'ptxds[cutlass]')")

from builders.base import BuildOptions, WorkItem  # noqa: E402
from builders.cutlass import CutlassBuilder, catalog, sparse  # noqa: E402
from builders.cutlass.problem import DEFAULT_PROBLEM, alignment_misfit, fit_to_family, group_id  # noqa: E402
from builders.shapes import LLM, SWEEP  # noqa: E402
from helpers import needs_nvcc  # noqa: E402

SM80_KERNEL = "cutlass_tensorop_h16832spgemm_128x128_64x3_tn_align8"
SM90_KERNEL = ("cutlass3x_sm90_sptensorop_spgemm_f16_f16_f32_f16_f16_128x128x64_1x2x1_0_tnn_align16"
               "_warpspecialized_cooperative_epi_tma")


def _spec(sm, name):
    return catalog.describe_operation(catalog.load_manifest_operations(sm)[name])


def _item(name, sm, arch, size, exact=False):
    return WorkItem(key="test", group_id="test", label="test", payload={
        "names": [name], "sm": sm, "arch": arch, "problems": [list(size)], "exact": exact,
        "shape_set": "default", "alpha": 1.0, "beta": 0.0, "sm_count": 132,
        "families": [name], "limit": None, "sample_seed": 0, "per_family": 1})


def test_sparse_families_are_built_but_sub_byte_ones():
    table = catalog.family_table()
    families = [f for f in table if "Sparse" in f.opcode_class]
    assert len(families) == 72
    excluded = [f for f in families if f.excluded]
    assert len(excluded) == 2 and all("sub-byte" in f.excluded for f in excluded)
    assert sum(len(f.kernels) for f in families if not f.excluded and f.sm == 90) == 5232


def test_sizes_are_fitted_to_the_metadata_layout():
    sm80, sm90 = _spec(80, SM80_KERNEL), _spec(90, SM90_KERNEL)
    assert fit_to_family([sm80], *DEFAULT_PROBLEM) == (512, 768, 576)
    assert fit_to_family([sm90], 96, 100, 100) == (128, 100, 128)  # tnn: no operand is contiguous along N
    assert "K a multiple of 64" in alignment_misfit(sm80, 512, 768, 520)
    assert "M a multiple of 64" in alignment_misfit(sm90, 32, 768, 512)
    for size in LLM.sizes_for("sparse_gemm") + SWEEP.sizes_for("sparse_gemm"):
        assert fit_to_family([sm80], *size) == tuple(size), size
    # E's layout is part of the function: different group ids for SM80 and SM90
    assert group_id(sm80, 512, 768, 576, 1, 0) != group_id(sm90, 512, 768, 576, 1, 0)
    assert "/e_sm90k64/" in group_id(sm90, 512, 768, 576, 1, 0)


@needs_nvcc
@pytest.mark.parametrize("sm,arch,name,e_dtype", [(80, "sm_80", SM80_KERNEL, "uint16"),
                                                  (90, "sm_90a", SM90_KERNEL, "uint8")])
def test_sparse_kernel_builds_a_row_with_its_metadata_operand(sm, arch, name, e_dtype):
    spec = _spec(sm, name)
    size = fit_to_family([spec], *DEFAULT_PROBLEM)
    row = CutlassBuilder(BuildOptions(archs=[arch])).build(_item(name, sm, arch, size))[0]
    assert row.status == "built", row.status_message[-2000:]
    problem = row.problem
    m, n, k = size
    assert problem.op == "sparse_gemm" and problem.buffer("A").shape == (m, k // 2)
    e = problem.buffer("E")
    assert e.dtype == e_dtype and e.numel * int(e_dtype[4:]) // 8 == m * k // 8
    assert problem.params["sparse"] == sparse.format_params(spec)
    patched = {p.buffer for p in row.launches[0].args[0].patches}
    assert patched >= {"A", "B", "D", "E"}
    assert ("mma.sp" in row.ptx) if sm == 80 else ("wgmma.mma_async.sp" in row.ptx)


@needs_nvcc
def test_a_size_the_kernel_cannot_run_is_not_applicable():
    row = CutlassBuilder(BuildOptions(archs=["sm_80"])).build(
        _item(SM80_KERNEL, 80, "sm_80", (512, 768, 520), exact=True))[0]
    assert row.status == "not_applicable" and "K a multiple of 64" in row.status_message
