"""Tests for CUTLASS builds under shape sets: the default set is the earlier build row for row,
a multi-size build compiles each kernel once and packs a Params blob per size, built-in
sizes are fitted to every family's alignments, and a user size a kernel cannot run is a
``not_applicable`` row.

Compiles use the content cache (~/.cache/ptxds/cutlass or $PTXDS_CUTLASS_CACHE), which the
CUTLASS builder tests fill with the same two kernels.
"""
from __future__ import annotations

import pytest

pytest.importorskip("cutlass_library", reason="nvidia-cutlass is not installed (pip install 'ptxds[cutlass]')")

from builders.cutlass import builder as cutlass_builder  # noqa: E402
from builders.cutlass import catalog  # noqa: E402
from builders.base import BuildOptions  # noqa: E402
from builders.cutlass import CutlassBuilder  # noqa: E402
from builders.cutlass.problem import alignment_misfit  # noqa: E402
from builders.shapes import ShapeSet  # noqa: E402
from helpers import needs_nvcc  # noqa: E402
from ptxds.pipeline import build_and_finalize  # noqa: E402

SLICE = {"family": "cutlass_tensorop_bf16_s16816gemm_bf16_[0-9]*_tn_align*"}
# The two rows this slice gave before shape sets existed: (build key, kernel id). The kernel
# ids changed once since, on purpose: a kernel id hashes the problem, and the problem's
# default trial kinds gained `stress` (verifier v3); the build keys never changed.
DEFAULT_ROWS = [
    ("cutlass/gemm/bf16_bf16_f32_bf16/rcr/a1b0/M512N768K520/sm_80/0#0", "fd9a210c4d06d923443e8ab6"),
    ("cutlass/gemm/bf16_bf16_f32_bf16/rcr/a1b0/M512N768K520/sm_80/0#1", "196c9edf719aba82be0e2137"),
]
INT8_FAMILY = "cutlass_tensorop_s8_i16832gemm_s8_[0-9]*"  # byte-wide: not the s8 x s4 family



def slice_builder(limit: int = 2, **extra) -> CutlassBuilder:
    """Two kernels of the slice at one size (``--limit`` counts rows: a kernel gives one per size)."""
    return CutlassBuilder(BuildOptions(archs=["sm_80"], limit=limit, sample_seed=1, extra=dict(SLICE, **extra)))


def build_all(builder) -> list:
    return [row for item in builder.work_items() for row in build_and_finalize(builder, item, sass=False)]


@needs_nvcc
@pytest.mark.parametrize("extra", [{}, {"shapes": "default"}])
def test_default_set_is_todays_build(extra):
    rows = build_all(slice_builder(**extra))
    assert [(r.build_key, r.kernel_id) for r in rows] == DEFAULT_ROWS
    assert all(r.status == "built" and "shared_compile" not in r.provenance for r in rows)
    assert {r.group_id for r in rows} == {"cutlass/gemm/bf16_bf16_f32_bf16/rcr/a1b0/M512N768K520"}


@needs_nvcc
def test_three_sizes_compile_once_and_pack_per_size(monkeypatch):
    calls = []
    real = cutlass_builder.compile_to_ptx

    def counted(source, arch, *args, **kwargs):
        calls.append(arch)
        return real(source, arch, *args, **kwargs)

    monkeypatch.setattr(cutlass_builder, "compile_to_ptx", counted)
    three = ShapeSet(name="three", gemm=((512, 768, 520), (16, 4096, 4096), (1000, 1032, 264)))
    builder = slice_builder(limit=6, shapes=three)  # two kernels x three sizes
    [item] = builder.work_items()
    assert item.rows == 6
    rows = build_all(builder)
    assert len(calls) == 1  # one nvcc batch for two kernels x three sizes
    assert len(rows) == 6 and all(r.status == "built" for r in rows), [r.status_message for r in rows]
    assert len({r.group_id for r in rows}) == 3
    for name in {r.name for r in rows}:
        mine = [r for r in rows if r.name == name]
        assert len({r.ptx_hash for r in mine}) == 1
        assert len({r.launches[0].args[0].blob for r in mine}) == 3
        assert len({r.launches[0].grid for r in mine}) == 3
        assert [r.provenance["shared_compile"]["reused"] for r in mine] == [False, True, True]
        assert [(r.problem.params["M"], r.problem.params["K"]) for r in mine] == [(512, 520), (16, 4096), (1000, 264)]
    assert len({r.kernel_id for r in rows}) == 6 and len({r.build_key for r in rows}) == 6


@needs_nvcc
def test_user_size_a_kernel_cannot_run_is_not_applicable():
    builder = slice_builder(shapes=ShapeSet(name="mine", gemm=((512, 768, 522),), exact=True))
    rows = build_all(builder)
    misfits = [r for r in rows if r.variant["alignment"] > 2]
    assert misfits, "the slice should hold a kernel with alignment above 2"
    for row in misfits:
        assert row.status == "not_applicable" and "K=522 is not a multiple of its alignment" in row.status_message
        assert row.launches == [] and row.kernel_id.startswith("unbuilt-")
    assert all(r.status == "built" for r in rows if r.variant["alignment"] == 2)


@pytest.mark.parametrize("family", catalog.DEFAULT_FAMILIES + (INT8_FAMILY,))
@pytest.mark.parametrize("shapes", ["default", "llm", "sweep", "crossource"])
def test_builtin_sizes_fit_every_kernel(family, shapes):
    builder = CutlassBuilder(BuildOptions(extra={"family": family, "shapes": shapes}))
    items = builder.work_items()
    ops = {sm: catalog.load_manifest_operations(sm) for sm in (80, 90)}
    assert items
    for item in items:
        specs = [catalog.describe_operation(ops[item.payload["sm"]][n]) for n in item.payload["names"]]
        for size in item.payload["problems"]:
            assert not [alignment_misfit(s, *size) for s in specs if alignment_misfit(s, *size)]


def test_int8_default_size_is_rounded_to_its_alignment():
    builder = CutlassBuilder(BuildOptions(archs=["sm_80"], extra={"family": INT8_FAMILY}))
    sizes = {tuple(size) for item in builder.work_items() for size in item.payload["problems"]}
    assert sizes == {(512, 768, 528)}
