"""CPU tests of CUTLASS interleaved complex GEMM rows (planar ones: test_cutlass_planar_complex.py): transforms in kernel terms, the
complex_gemm problem (parts on a last axis of 2), and compiled rows whose Params carry A,
B and D (two kernels, cached under ~/.cache/ptxds)."""
from __future__ import annotations

import pytest

pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed (pip install 'ptxds[cutlass]')")

from builders.base import BuildOptions, WorkItem  # noqa: E402
from builders.cutlass import CutlassBuilder, catalog  # noqa: E402
from builders.cutlass.problem import make_problem  # noqa: E402
from helpers import needs_nvcc  # noqa: E402

TF32 = "cutlass_tensorop_c1688tf32gemm_128x64_16x4_cc_align1"
GAUSS = "cutlass_tensorop_gz884gemm_16x32_8x4_ch_align1"
Z_NC = "cutlass_tensorop_z884gemm_128x64_8x3_nc_align1"


def _spec(name):
    return catalog.describe_operation(catalog.load_manifest_operations(80)[name])


def test_transforms_follow_the_operands_into_the_kernel():
    # library A none, B conj; the 2.x kernel computes the transposed problem: its A is B^T
    p = make_problem(_spec(Z_NC), 64, 32, 48).params["complex"]
    assert (p["transform_a"], p["transform_b"], p["gaussian"]) == ("conj", "none", False)
    gauss = make_problem(_spec(GAUSS), 64, 32, 48)
    assert gauss.params["complex"]["gaussian"] and "_gauss/" in gauss.problem_id
    tf32 = make_problem(_spec(TF32), 64, 32, 48)
    assert tf32.params["math_input"] == "tf32" and tf32.op == "complex_gemm"
    assert tf32.buffer("A").shape == (64, 48, 2) and tf32.buffer("D").dtype == "float32"


def test_planar_complex_families_are_built():  # tests/builders/cutlass/test_cutlass_planar_complex.py
    table = catalog.family_table()
    planar = [f for f in table if "PlanarComplex" in f.opcode_class]
    assert len(planar) == 10 and not any(f.excluded for f in planar)
    interleaved = [f for f in table if "complex" in f.math_operation and "Planar" not in f.opcode_class]
    assert len(interleaved) == 7 and not any(f.excluded for f in interleaved)


@needs_nvcc
@pytest.mark.parametrize("name", [TF32, GAUSS])
def test_complex_kernel_builds_a_row(name):
    item = WorkItem(key="test", group_id="test", label="test", payload={
        "names": [name], "sm": 80, "arch": "sm_80", "problems": [[512, 768, 520]], "exact": False,
        "shape_set": "default", "alpha": 1.0, "beta": 0.0, "sm_count": 132,
        "families": [name], "limit": None, "sample_seed": 0, "per_family": 1})
    row = CutlassBuilder(BuildOptions(archs=["sm_80"])).build(item)[0]
    assert row.status == "built", row.status_message[-2000:]
    assert {p.buffer for p in row.launches[0].args[0].patches} >= {"A", "B", "D"}
    assert "mma.sync" in row.ptx
