"""Every GEMM family the pinned CUTLASS generator emits for SM80 and SM90a: built by ptxds or
excluded with a stated reason; the new families' problems, references and bounds; and
compiled rows of one kernel per family.

CI compiles one batch of four SM80 kernels of the new kinds (int8 with a clamping
epilogue, f64 DMMA, SIMT, mixed f16 x s8). Building one kernel of every family (about 100,
13-60 s each on two cores) is opt-in: ``PTXDS_ALL_FAMILIES=1 pytest -m slow
tests/builders/cutlass/test_cutlass_families.py``.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed (pip install 'ptxds[cutlass]')")

from builders.base import BuildOptions, WorkItem  # noqa: E402
from builders.cutlass import CutlassBuilder, catalog  # noqa: E402
from builders.cutlass.problem import make_problem  # noqa: E402
from dataset_spec.fp8 import FP8_LAYOUTS, decode_table, fp8_bits, fp8_to_float, max_finite  # noqa: E402
from dataset_spec.numerics import FORMATS  # noqa: E402
from dataset_spec.problems import get_op  # noqa: E402
from helpers import needs_nvcc  # noqa: E402

# The kinds issue 11 names, as family-key fragments that must each match a built family.
REQUIRED = {
    "int8 -> int32": "sm80/2.x/TensorOp/multiply_add_saturate/s8_s8_s32_s32_s32/",
    "int8 -> int8 (clamp)": "sm80/2.x/TensorOp/multiply_add_saturate/s8_s8_s32_s8_s8/LinearCombinationClamp",
    "int8 sm90": "sm90/3.x/TensorOp/multiply_add/s8_s8_s32_s8_s8/",
    "fp8 e4m3": "sm90/3.x/TensorOp/multiply_add/e4m3_e4m3_f32_bf16_bf16/",
    "fp8 e5m2": "sm90/3.x/TensorOp/multiply_add/e5m2_e5m2_f32_f32_f32/",
    "fp8 mixed": "sm90/3.x/TensorOp/multiply_add/e4m3_e5m2_f32_f16_e4m3/",
    "f64 DMMA sm80": "sm80/2.x/TensorOp/multiply_add/f64_f64_f64_f64_f64/",
    "f64 DMMA sm90": "sm90/2.x/TensorOp/multiply_add/f64_f64_f64_f64_f64/",
    "mixed input sm80": "sm80/2.x/TensorOp/multiply_add_mixed_input_upcast/f16_s8_f32_f16_f16/",
    "SIMT f32": "sm80/2.x/Simt/multiply_add/f32_f32_f32_f32_f32/",
    "SIMT f64": "sm80/2.x/Simt/multiply_add/f64_f64_f64_f64_f64/",
    "grouped sm80": "sm80/2.x/TensorOp:Grouped/",
    "grouped sm90": "sm90/3.x/TensorOp:GroupedUniversal3x/",
    "blockwise fp8": "sm90/3.x/TensorOp:BlockwiseUniversal3x/",
    "grouped blockwise fp8": "sm90/3.x/TensorOp:GroupedBlockwiseUniversal3x/",
    "planar complex": "sm80/2.x/TensorOp:PlanarComplex/",
    "planar complex array": "sm80/2.x/TensorOp:PlanarComplexArray/",
    "int4 scale-only": "+ScaleOnly/",
    "int4 scale and zero point": "+ScaleWithZeroPoint/",
}


@pytest.fixture(scope="module")
def table():
    return catalog.family_table()


def test_every_family_is_built_or_excluded_with_a_reason(table):
    built = [f for f in table if not f.excluded]
    assert len(built) >= 90 and len(table) > len(built)
    assert len(table) == 395 and len(built) >= 0.95 * len(table)  # issue 25's goal: 376 of the 395
    keys = [f.key for f in table]
    for kind, fragment in REQUIRED.items():
        assert any(fragment in f.key for f in built), f"{kind}: no built family matches {fragment}"
    for family in table:
        assert family.kernels
        if family.excluded:  # every excluded family says why, in words a user can act on
            assert len(family.excluded) > 20 and not any(n in catalog.load_manifest_operations(family.sm)
                                                          for n in family.kernels)
    assert len(set(keys)) == len(keys)
    reasons = " ".join(f.excluded for f in table)
    for cause in ("mixed-input mainloop", "1-bit", "sub-byte"):
        assert cause in reasons
    for kind in ("TensorOp:Sparse", "SparseTensorOp:SparseUniversal3x"):  # built since issue 25
        assert any(f.opcode_class == kind for f in built), kind
    assert any("complex" in f.math_operation for f in built)


def test_per_family_takes_at_most_n_of_each_family():
    # the byte-wide int8 families ("_[0-9]*": not the s8 x s4 ones, built since packed buffers)
    specs = catalog.enumerate_kernels(("cutlass_tensorop_*i16832gemm_[su]8_[0-9]*",), ("sm_80",))
    one = catalog.per_family(specs, 1, seed=0)
    assert len(one) == len({catalog.family_key(s) for s in specs}) == 4
    assert catalog.per_family(specs, 2, seed=3) != catalog.per_family(specs, 2, seed=4)


def _spec(sm, name):
    return catalog.describe_operation(catalog.load_manifest_operations(sm)[name])


def test_int8_clamp_reference_rounds_and_saturates_exactly():
    spec = _spec(80, "cutlass_tensorop_s8_i16832gemm_s8_128x128_128x4_tn_align16")
    problem = make_problem(spec, 32, 48, 64, alpha=0.5, beta=0.0)
    assert problem.buffer("A").init.kind == "randint" and problem.buffer("D").dtype == "int8"
    rng = np.random.default_rng(0)
    a = rng.integers(-8, 8, problem.buffer("A").shape).astype(np.float64)
    b = rng.integers(-8, 8, problem.buffer("B").shape).astype(np.float64)
    op = get_op("gemm")
    ref = op.reference({"A": a, "B": b}, problem)["D"]
    exact = 0.5 * (a @ b.T)  # rcr: B stored as its transpose
    assert np.array_equal(ref, np.clip(np.rint(exact), -128, 127))
    assert (np.abs(exact) > 127).any() and (ref == 127).any() and (ref == -128).any()
    assert ((exact % 1) == 0.5).any()  # ties to even are exercised: 0.5 * odd
    assert np.all(op.bounds({"A": a, "B": b}, problem, {"D": ref})["D"] == 0)


def test_fp8_codes_round_trip_and_round_to_nearest_even():
    for dtype, top in (("float8_e4m3", 448.0), ("float8_e5m2", 57344.0)):
        table = decode_table(dtype)
        finite = np.flatnonzero(np.isfinite(table))
        assert np.array_equal(fp8_bits(table[finite], dtype), finite.astype(np.uint8))
        assert max_finite(dtype) == top
        # the error bound's format constants are the ones the code table decodes to
        fmt, man_bits = FORMATS[dtype], FP8_LAYOUTS[dtype][1]
        one = int(np.flatnonzero(table == 1.0)[0])
        assert fmt.max_finite == top and fmt.unit_roundoff == (table[one + 1] - 1.0) / 2
        assert fmt.tiny == table[1 << man_bits] and fmt.subnormal_min == table[1]
    e4m3 = fp8_to_float(fp8_bits([1.0625, 1.1875, 449.0, 500.0, -2.0 ** -10], "float8_e4m3"), "float8_e4m3")
    assert e4m3[:3].tolist() == [1.0, 1.25, 448.0] and np.isnan(e4m3[3]) and e4m3[4] == 0.0
    assert np.signbit(e4m3[4])
    assert np.isinf(fp8_to_float(fp8_bits([1e6], "float8_e5m2"), "float8_e5m2")[0])


def test_fp8_gemm_has_its_own_accumulator_bound_and_saturating_store():
    name = next(n for n in catalog.load_manifest_operations(90)
                if n.startswith("cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_f32_e4m3_"))
    problem = make_problem(_spec(90, name), 64, 64, 128)
    assert problem.params["accumulator"] == "fp8_tensor_core"
    assert problem.buffer("A").dtype == "float8_e4m3" and problem.buffer("D").dtype == "float8_e4m3"
    op = get_op("gemm")
    terms = op.bound_terms(problem, "float8_e4m3")
    assert terms.u_acc == 2.0 ** -13 and terms.u_out == 2.0 ** -4
    a = np.full(problem.buffer("A").shape, 4.0)
    b = np.full(problem.buffer("B").shape, 4.0)
    ref = op.reference({"A": a, "B": b}, problem)["D"]
    assert np.all(ref == 448.0)  # 2048 saturates to e4m3's largest finite value


def test_beta_needs_a_c_operand():
    from builders.cutlass.problem import epilogue_misfit, family_id
    void_c = _spec(90, next(n for n in catalog.load_manifest_operations(90) if "_bf16_bf16_f32_void_bf16_" in n))
    assert "no C operand" in epilogue_misfit(void_c, 1.0, 0.5) and epilogue_misfit(void_c, 0.5, 0.0) == ""
    int32_epilogue = _spec(80, "cutlass_tensorop_i16832gemm_s8_128x128_128x4_tn_align16")
    assert "must be integers" in epilogue_misfit(int32_epilogue, 0.5, 0.0)
    assert epilogue_misfit(int32_epilogue, 2.0, 1.0) == ""
    spec = _spec(80, "cutlass_tensorop_s8_i16832gemm_s8_128x128_128x4_tn_align16")
    problem = make_problem(spec, 32, 48, 64, alpha=1.0, beta=0.5)
    assert problem.buffer("C").dtype == "int8" and problem.params["beta"] == 0.5
    assert "cs8" in family_id(spec, 1.0, 0.5) and "cs8" not in family_id(spec, 1.0, 0.0)


NEW_KINDS_SM80 = [
    "cutlass_tensorop_s8_i16832gemm_s8_64x64_64x10_tn_align16",
    "cutlass_tensorop_d884gemm_64x64_16x4_tt_align1",
    "cutlass_simt_sgemm_64x64_8x5_nt_align1",
    "cutlass_tensorop_f16_s16816gemm_f16_s8_128x32_64x5_tn_align16",
]


def _item(names, sm, arch, size, beta=0.0):
    return WorkItem(key="test", group_id="test", label="test", payload={
        "names": names, "sm": sm, "arch": arch, "problems": [list(size)], "exact": False,
        "shape_set": "default", "alpha": 1.0, "beta": beta, "sm_count": 132,
        "families": names, "limit": None, "sample_seed": 0, "per_family": 1})


@needs_nvcc
def test_one_batch_of_new_sm80_kinds_builds():
    """int8 clamp, f64 DMMA, SIMT and mixed-input kernels in one nvcc call, with beta != 0."""
    ops = catalog.load_manifest_operations(80)
    assert all(n in ops for n in NEW_KINDS_SM80)
    rows = CutlassBuilder(BuildOptions(archs=["sm_80"])).build(_item(NEW_KINDS_SM80, 80, "sm_80", (256, 128, 96), 0.5))
    assert [r.status for r in rows] == ["built"] * 4, [r.status_message[:400] for r in rows]
    by_name = {r.name: r for r in rows}
    int8 = by_name[NEW_KINDS_SM80[0]]
    assert int8.problem.buffer("D").dtype == "int8" and int8.problem.buffer("C").dtype == "int8"
    assert {p.buffer for p in int8.launches[0].args[0].patches} >= {"A", "B", "C", "D"}
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32.satfinite" in int8.ptx
    assert "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64" in by_name[NEW_KINDS_SM80[1]].ptx
    assert "mma.sync" not in by_name[NEW_KINDS_SM80[2]].ptx  # SIMT: FMAs only
    mixed = by_name[NEW_KINDS_SM80[3]].problem  # 2.x: library A/B swapped into kernel terms
    assert {mixed.buffer("A").dtype, mixed.buffer("B").dtype} == {"float16", "int8"}
    assert all(b.init.kind == "randint" for b in mixed.buffers if b.dtype == "int8")


def _every_family_case():
    if not os.environ.get("PTXDS_ALL_FAMILIES"):
        return [pytest.param(None, marks=pytest.mark.skip(reason="set PTXDS_ALL_FAMILIES=1 to build every family"))]
    return [pytest.param(f, id=f.key) for f in catalog.family_table() if not f.excluded]


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("family", _every_family_case())
def test_every_family_builds_one_kernel(family):
    arch = "sm_90a" if family.sm == 90 else "sm_80"
    specs = catalog.per_family([_spec(family.sm, n) for n in family.kernels], 1, seed=0)
    # the builder's own work item: GEMM and grouped GEMM kernels each get their kind's default size
    builder = CutlassBuilder(BuildOptions(archs=[arch], extra={"family": specs[0].name}))
    (item,) = builder.work_items()
    rows = builder.build(item)
    assert rows[0].status == "built", rows[0].status_message[:2000]


CONVERT_ONLY = "multiply_add+ConvertOnly"
BYTE_WIDE_NARROW = ("e4m3", "e5m2", "s8", "u8")


def test_convert_only_families_with_byte_wide_operands_are_built(table):
    """The 16 SM90 ConvertOnly families are built (their shuffled-layout kernels are not):
    8 with a byte-wide narrow operand, 8 with a packed sub-byte one."""
    cvt = [f for f in table if f.math_operation == CONVERT_ONLY]
    assert len(cvt) == 16 and {f.sm for f in cvt} == {90}
    byte_wide = [f for f in cvt if f.types.split("_")[0] in BYTE_WIDE_NARROW]
    assert len(byte_wide) == 8 and not any(f.excluded for f in cvt)
    ops = catalog.load_manifest_operations(90)
    for family in byte_wide:
        assert len(family.kernels) == 40 and all("_cvt_" in n and "_shfl_" not in n for n in family.kernels)
        assert all(n in ops for n in family.kernels)
    shuffled = [op for name, op in catalog._all_operations(90).items()
                if "_cvt_shfl_" in name and name.split("_")[4] in BYTE_WIDE_NARROW]
    assert len(shuffled) == 320 and all(catalog.exclusion_reason(op) == catalog.SHUFFLED_NARROW_OPERAND
                                        for op in shuffled)


def test_convert_only_problem_is_a_16_bit_gemm_of_exact_narrow_values():
    """The narrow operand is converted to the wide type before the MMA: a float32
    accumulator (not FP8's), integer operands drawn small, FP8 operands stored as FP8."""
    ops = catalog.load_manifest_operations(90)
    fp8 = _spec(90, next(n for n in ops if n.startswith("cutlass3x_sm90_tensorop_gemm_e4m3_bf16_f32_bf16_bf16_cvt_")))
    assert fp8.knobs["mixed_input_mode"] == "ConvertOnly"
    problem = make_problem(fp8, 64, 128, 64)
    assert problem.params["accumulator"] == "float32" and problem.params["math_input"] == ""
    assert [problem.buffer(n).dtype for n in "ABD"] == ["float8_e4m3", "bfloat16", "bfloat16"]
    assert (problem.params["layout_a"], problem.params["layout_b"], problem.params["layout_c"]) == ("row", "col", "col")
    assert problem.problem_id == "cutlass/gemm/e4m3_bf16_f32_bf16/rcc/a1b0/M64N128K64"
    integer = make_problem(_spec(90, next(n for n in ops if n.startswith("cutlass3x_sm90_tensorop_gemm_u8_f16_f32_f16_f16_cvt_"))),
                           64, 128, 64)
    assert integer.buffer("A").init.kind == "randint" and integer.buffer("A").init.params == {"low": 0, "high": 8}
    plain = _spec(90, next(n for n in ops if n.startswith("cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_bf16_bf16_")))
    assert "mixed_input_mode" not in plain.knobs
    assert make_problem(plain, 64, 128, 64).params["accumulator"] == "fp8_tensor_core"


@needs_nvcc
def test_convert_only_kernel_builds_an_assembling_tma_row(tmp_path):
    """One s8 x bf16 ConvertOnly kernel (``--per-family 1``): Params packed from plain
    Arguments (no scales), TMA descriptors of A (raw bytes), B (raw 16-bit) and D found
    by their buffers, blanked in the blob, and the PTX assembles for sm_90a."""
    import subprocess
    from builders.cutlass import entry_params
    from ptx_tools import find_tool
    builder = CutlassBuilder(BuildOptions(archs=["sm_90a"], extra={
        "family": "cutlass3x_sm90_tensorop_gemm_s8_bf16_f32_bf16_bf16_cvt_*", "per_family": 1}))
    (item,) = builder.work_items()
    (row,) = builder.build(item)
    assert row.status == "built", row.status_message[:2000]
    assert row.group_id == "cutlass/gemm/s8_bf16_f32_bf16/rcc/a1b0/M512N768K528"  # K fitted to align 16
    assert row.variant["mixed_input_mode"] == "ConvertOnly" and "_shfl_" not in row.name
    assert "wgmma.mma_async" in row.ptx and "cp.async.bulk.tensor" in row.ptx
    assert row.problem.buffer("A").dtype == "int8" and row.problem.buffer("A").init.kind == "randint"
    (launch,) = row.launches
    (param,) = entry_params(row.ptx, launch.entry)
    blob = launch.args[0].blob
    assert param.align >= 64 and param.size == len(blob)
    assert list(launch.cluster) == row.variant["cluster_shape"] and launch.block == (384, 1, 1)
    patches = launch.args[0].patches
    tensormaps = {p.buffer: p for p in patches if p.kind == "tensormap"}
    assert set(tensormaps) == {"A", "B", "D"} and all(p.addend == 0 for p in tensormaps.values())
    a, b = tensormaps["A"].tensormap, tensormaps["B"].tensormap
    # CUtensorMapDataType: UINT8 = 0, UINT16 = 1 (TMA moves the operands' bits unconverted)
    assert (a["data_type"], a["global_dim"][:2], a["global_strides"][0]) == (0, [528, 512], 528)
    assert (b["data_type"], b["global_dim"][:2], b["global_strides"][0]) == (1, [528, 768], 2 * 528)
    for p in patches:
        assert blob[p.offset:p.offset + p.size] == bytes(p.size)
    if "stream_k" in row.name:
        assert row.scratch and row.scratch[0].name == "workspace" and "workspace" in {p.buffer for p in patches}
    path = tmp_path / "cvt.ptx"
    path.write_text(row.ptx)
    proc = subprocess.run([str(find_tool("ptxas")), "-arch=sm_90a", str(path), "-o", str(tmp_path / "cvt.cubin")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_docs_list_the_current_family_table():
    from pathlib import Path
    docs = (Path(__file__).resolve().parents[3] / "docs" / "cutlass.md").read_text()
    assert catalog.family_markdown() in docs, "regenerate docs/cutlass.md's tables with catalog.family_markdown()"


def test_sm90_packer_of_2x_api_dmma_kernels_has_the_3x_headers():
    """An sm_90a packer is compiled with the 3.x packing code; the SM90 DMMA f64 GEMMs are
    2.x-API kernels, and their packer once failed on make_cute_packed_stride."""
    from builders.cutlass.source import packer_source
    dmma = _spec(90, next(n for n in catalog.load_manifest_operations(90) if "d1684gemm" in n))
    assert dmma.generation == 2
    source = packer_source([dmma])
    assert '#include "cutlass/util/packed_stride.hpp"' in source
    assert '#include "cutlass/gemm/kernel/default_gemm_universal.h"' in source
    assert f"pack_2x<{dmma.name}>" in source
