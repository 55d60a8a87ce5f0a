"""CUTLASS planar complex GEMMs (2.x PlanarComplex, PlanarComplexArray): every generator family
is built, the plain ones as a complex_gemm whose buffers are real and imaginary planes (the
planar reference is the interleaved one on the same numbers; a correctly rounded output
passes and a 1% error in one plane fails; a real packer points each operand's imaginary
pointer one plane past its real one), the array ones as grouped_complex_gemm problems whose
tables a real packer finds."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed (pip install 'ptxds[cutlass]')")

from builders.base import BuildOptions  # noqa: E402
from builders.cutlass import CutlassBuilder, catalog  # noqa: E402
from builders.cutlass import complex as complex_kind  # noqa: E402
from builders.cutlass.problem import make_problem  # noqa: E402
from helpers import needs_nvcc  # noqa: E402
from dataset_spec.model import Problem  # noqa: E402
from dataset_spec.ops import get_op  # noqa: E402
from verify.trials.inputs import to_storage  # noqa: E402
from verify.judge.outcome import CheckResult, TrialRun, classify  # noqa: E402
from verify.runner import prepare_problem  # noqa: E402

# library A column-major conjugated, B row-major conjugated ("ch"); f16 parts, f32 accumulation
PLANAR = "cutlass_tensorop_f16_s16816gemm_planar_complex_f16_128x64_32x3_ch_align8"


def _spec(name):
    return catalog.describe_operation(catalog.load_manifest_operations(80)[name])


def test_every_planar_family_is_built_the_array_ones_too():
    table = catalog.family_table((80,))
    planar = [f for f in table if f.opcode_class == "TensorOp:PlanarComplex"]
    assert len(planar) == 5 and sum(len(f.kernels) for f in planar) == 240 and not any(f.excluded for f in planar)
    arrays = [f for f in table if f.opcode_class == "TensorOp:PlanarComplexArray"]
    assert len(arrays) == 5 and sum(len(f.kernels) for f in arrays) == 240 and not any(f.excluded for f in arrays)
    spec = _spec(PLANAR)
    assert complex_kind.is_planar(spec) and complex_kind.is_complex(spec)
    assert (spec.knobs["transform_a"], spec.knobs["transform_b"]) == ("conj", "conj")


def test_problem_holds_planes_in_the_kernels_terms():
    spec = _spec(PLANAR)
    problem = make_problem(spec, 64, 128, 96, beta=0.5)
    assert problem.op == "complex_gemm" and problem.params["complex"]["planar"] is True
    # the 2.x emitter swaps A and B: the kernel's A is the library's B (row-major -> column-major)
    assert problem.params["layout_a"] == "col" and problem.params["layout_b"] == "row"
    assert problem.buffer("A").shape == (2, 96, 64) and problem.buffer("A").dtype == "float16"
    assert problem.buffer("C").shape == (2, 64, 128) and problem.buffer("D").shape == (2, 64, 128)
    assert "/planar/" in problem.problem_id and "/cc/" in problem.problem_id


def _interleaved(problem: Problem) -> Problem:
    """The same function with interleaved storage."""
    buffers = []
    for b in problem.buffers:
        buffers.append(type(b)(b.name, b.dtype, tuple(b.shape[1:]) + (2,), b.role, b.init))
    params = dict(problem.params, complex={k: v for k, v in problem.params["complex"].items() if k != "planar"})
    return Problem(problem.problem_id + "/interleaved", problem.op, buffers, params)


def test_planar_reference_and_scale_are_the_interleaved_ones():
    problem = make_problem(_spec(PLANAR), 16, 24, 40, alpha=0.5, beta=0.25)
    flat = _interleaved(problem)
    rng = np.random.default_rng(1)
    planar_values = {b.name: rng.standard_normal(b.shape) for b in problem.buffers if b.role == "in"}
    interleaved_values = {k: np.moveaxis(v, 0, -1) for k, v in planar_values.items()}
    op = get_op("complex_gemm")
    ref = op.reference(planar_values, problem)["D"]
    assert ref.shape == (2, 16, 24)
    np.testing.assert_allclose(np.moveaxis(ref, 0, -1), op.reference(interleaved_values, flat)["D"])
    scale = op.error_scale(planar_values, problem)["D"]
    np.testing.assert_allclose(np.moveaxis(scale, 0, -1), op.error_scale(interleaved_values, flat)["D"])
    # conj(A) @ conj(B) in the kernel's terms, by hand for one element
    a = planar_values["A"][0] + 1j * planar_values["A"][1]  # stored (K, M): column-major A
    b = planar_values["B"][0] + 1j * planar_values["B"][1]  # stored (K, N): row-major B
    c = planar_values["C"][0] + 1j * planar_values["C"][1]
    d = 0.5 * np.conj(a.T) @ np.conj(b) + 0.25 * c
    assert np.isclose(ref[0, 3, 5], d[3, 5].real) and np.isclose(ref[1, 3, 5], d[3, 5].imag)


def _judge(problem, kernel):
    prepared = prepare_problem(problem, "g", None, reference="numpy")
    assert prepared.refusal == "", prepared.refusal
    runs = [TrialRun(t.trial, {"D": to_storage(kernel(ref["D"]), "float16")})
            for t, ref in zip(prepared.trials, prepared.references)]
    return classify(CheckResult(runs), prepared.specs, prepared.references)


@pytest.mark.parametrize("plane", [0, 1])
def test_rounded_output_passes_and_one_percent_in_one_plane_fails(plane):
    problem = make_problem(_spec(PLANAR), 64, 128, 96)
    assert _judge(problem, lambda ref: ref).status == "passed"

    def off(ref):
        out = np.array(ref, dtype=np.float64)
        out[plane] *= 1.01
        return out
    assert _judge(problem, off).status == "wrong_result"


def test_work_item_builds_planar_complex_at_the_gemm_sizes():
    builder = CutlassBuilder(BuildOptions(archs=["sm_80"], extra={"family": PLANAR}))
    (item,) = builder.work_items()
    assert item.group_id.startswith("cutlass/complex_gemm/f16_f16_f32_f16/crr/cc/planar/a1b0/")


@needs_nvcc
def test_packer_points_each_imaginary_plane_one_plane_past_the_real_one():
    from builders.cutlass.compile import build_packer
    from builders.cutlass.packer import pack_launch
    from builders.cutlass.source import packer_source
    spec = _spec(PLANAR)
    packer = build_packer(packer_source([spec]), "sm_80")
    m, n, k = 512, 768, 520
    packed = pack_launch(packer, spec.name, m, n, k, 1.0, 0.5, 108, True)
    addends = {}
    for p in packed.patches:
        addends.setdefault(p.buffer, set()).add(p.addend)
    assert addends["A"] == {0, 2 * m * k} and addends["B"] == {0, 2 * k * n}
    assert addends["C"] == {0, 2 * m * n} and addends["D"] == {0, 2 * m * n}
    warps = int(np.prod(spec.knobs["warp_count"]))
    assert packed.grid == (m // 128, n // 64, 1) and packed.block == (32 * warps, 1, 1)


# library A row-major, B column-major: the kernel's A is row-major (K shared), C row-major (N
# shared), so the problems may differ in M, an MoE layer's uneven rows
ARRAY = "cutlass_tensorop_f16_s16816gemm_planar_complex_array_f16_128x64_32x3_tn_align8"
ARRAY_COL_A = "cutlass_tensorop_f16_s16816gemm_planar_complex_array_f16_128x64_32x3_ht_align8"


def test_array_problem_is_grouped_with_shared_leading_dimensions():
    from builders.cutlass import grouped, planar_complex_array
    from builders.moe_shapes import DEFAULT_GROUPED
    from builders.shapes import LLM, MAX_GROUP_HOST_BYTES, SWEEP, host_bytes
    spec = _spec(ARRAY)
    assert grouped.is_grouped(spec) and planar_complex_array.is_planar_array(spec)
    size = grouped.fit([spec], DEFAULT_GROUPED[0])
    assert size == ((128, 256, 520), (40, 256, 520), (256, 256, 520), (8, 256, 520))  # N, K raised to the largest
    problem = grouped.make_problem(spec, size, 1.0, 0.0)
    assert problem.op == "grouped_complex_gemm" and problem.params["ld"] == {"A": 520, "B": 520, "C": 256, "D": 256}
    assert problem.problem_id.startswith("cutlass/grouped_complex_gemm/f16_f16_f32_f16/rcr/nn/planar/a1b0/")
    assert "share A's contiguous extent K" in grouped.misfit(spec, ((8, 256, 512), (8, 256, 520)))
    col_a = _spec(ARRAY_COL_A)  # the kernel's A column-major: every problem takes the largest M
    assert {m for m, _, _ in grouped.fit([col_a], DEFAULT_GROUPED[0])} == {256}
    assert grouped.misfit(col_a, grouped.fit([col_a], DEFAULT_GROUPED[0])) == ""
    for shape_set in (LLM, SWEEP):
        for size in grouped.sizes_for(shape_set, grouped.problem_op(spec)):
            for s in (spec, col_a):
                fitted = grouped.fit([s], size)
                assert grouped.misfit(s, fitted) == ""
                assert host_bytes(grouped.make_problem(s, fitted, 1.0, 0.5).buffers) <= MAX_GROUP_HOST_BYTES


@needs_nvcc
def test_array_packer_points_at_every_size_and_plane_table():
    from builders.cutlass import grouped, planar_complex_array
    from builders.cutlass.compile import build_packer
    from builders.cutlass.packer import pack_launch
    from builders.cutlass.source import packer_source
    from builders.moe_shapes import DEFAULT_GROUPED
    from dataset_spec.ops.grouped_complex_gemm import TABLE_NAMES
    spec = _spec(ARRAY)
    packer = build_packer(packer_source([spec]), "sm_80")
    size = grouped.fit([spec], DEFAULT_GROUPED[0])
    values = planar_complex_array.pack_values(spec, size)
    packed = pack_launch(packer, spec.name, values["max_m"], values["max_n"], values["max_k"], 1.0, 0.0, 108, False,
                         extra_slots=TABLE_NAMES, params=values, operand_slots=())
    assert {p.buffer for p in packed.patches} == set(TABLE_NAMES) and all(p.addend == 0 for p in packed.patches)
    assert packed.grid == (2, 4, 4)  # the largest problem's 256 x 256 tiles of 128 x 64, one z per problem


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("name", [PLANAR, ARRAY])
def test_one_planar_kernel_builds_a_row(name):
    builder = CutlassBuilder(BuildOptions(archs=["sm_80"], extra={"family": name}))
    (item,) = builder.work_items()
    (row,) = builder.build(item)
    assert row.status == "built", row.status_message[:2000]
    assert "mma.sync" in row.ptx and row.problem.params["complex"]["planar"]
    patches = row.launches[0].args[0].patches
    if name == ARRAY:
        from dataset_spec.ops.grouped_complex_gemm import TABLE_NAMES
        assert row.problem.op == "grouped_complex_gemm" and {p.buffer for p in patches} == set(TABLE_NAMES)
        assert row.variant["problem_transposed"] is True
    else:
        assert {(p.buffer, p.addend) for p in patches} >= {("A", 0), ("D", 0)} and len(patches) == 6
