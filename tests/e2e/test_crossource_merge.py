"""Cross-source merge of real builds (CPU): Triton, CUTLASS and TVM GEMMs compiled at one
size (float16, row-major, 256^3) and merged by ``ptxds merge`` into one canonical group,
whose members carry one problem, launches bound to its buffers, and pair across sources.

Also Triton's and TVM's softmax at 64x1000 (TVM at a shape set's size). Compiles four
Triton configs, two CUTLASS kernels and four TVM schedules (a few minutes on two shared
cores with cold caches); skipped where a compiler is missing.
"""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from helpers import nvcc_available

GROUP = "function/gemm/float16_float16_float32_float16/rrr/a1b0/M256xN256xK256"
SOFTMAX = "function/softmax/float32/M64xN1000"
SHAPES = {"gemm": [[256, 256, 256]], "softmax": [[64, 1000]]}


def _build(builder, items: int, groups=None) -> list:
    """Rows of the first ``items`` work items of each of ``groups`` (all groups: None)."""
    from ptxds.pipeline import build_and_finalize
    taken, rows = {}, []
    for item in builder.work_items():
        if (groups is None or item.group_id in groups) and taken.get(item.group_id, 0) < items:
            taken[item.group_id] = taken.get(item.group_id, 0) + 1
            rows += build_and_finalize(builder, item, sass=False)
    return rows


@pytest.fixture(scope="module")
def source_dirs(tmp_path_factory):
    pytest.importorskip("triton")
    pytest.importorskip("tvm")
    pytest.importorskip("cutlass_library")
    if not nvcc_available():
        pytest.skip("nvcc from the CUDA wheels is not installed")
    from builders.base import BuildOptions
    from builders.cutlass import CutlassBuilder
    from builders.shapes import shape_set_from_dict
    from builders.triton import TritonBuilder
    from builders.tvm import TvmBuilder
    from dataset_spec.store.dataset import Dataset
    root = tmp_path_factory.mktemp("crossource")
    shapes = shape_set_from_dict(dict(SHAPES, name="x256"), "test")
    triton = TritonBuilder(BuildOptions(archs=["sm_80"], extra={"shapes": shapes}))
    triton_rows = _build(triton, 2, {"triton/gemm/float16/M256xN256xK256", "triton/softmax/float32/M64xN1000"})
    cutlass = CutlassBuilder(BuildOptions(archs=["sm_80"], limit=2, extra={
        "family": "cutlass_tensorop_f16_s16816gemm_f16_[0-9]*_nn_align8", "shapes": shapes}))
    # TVM states its matmul_fp16 and softmax at the set's sizes (--shapes)
    tvm = TvmBuilder(BuildOptions(archs=["sm_80"], extra={"schedules": 2, "shapes": shapes,
                                                          "workloads": ["matmul_fp16", "softmax"]}))
    tvm_rows = _build(tvm, 1)
    assert {r.group_id for r in tvm_rows} == {"tvm/matmul_fp16/M256xN256xK256", "tvm/softmax/M64xN1000"}
    dirs = {}
    for name, rows in (("triton", triton_rows), ("cutlass", _build(cutlass, 1)), ("tvm", tvm_rows)):
        assert rows and all(r.status == "built" for r in rows), [(r.name, r.status_message[:200]) for r in rows]
        Dataset(root / name).append(rows)
        dirs[name] = root / name
    return root, dirs


@pytest.fixture(scope="module")
def merged(source_dirs):
    from dataset_spec.store.dataset import Dataset
    from ptxds.cli import cli
    root, dirs = source_dirs
    out = root / "merged"
    result = CliRunner().invoke(cli, ["merge", *(str(d) for d in dirs.values()), "--out", str(out)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"{GROUP}: cutlass 2, triton 2, tvm 2" in result.output
    assert f"{SOFTMAX}: triton 2, tvm 2" in result.output
    return out, Dataset.open(out).records(), {n: Dataset.open(d).records() for n, d in dirs.items()}


def test_every_source_joins_one_group_with_one_problem(merged):
    from dataset_spec.one_problem import distinct_problems
    _, rows, inputs = merged
    assert {r.group_id for r in rows} == {GROUP, SOFTMAX}
    for group, sources in ((GROUP, {"triton", "cutlass", "tvm"}), (SOFTMAX, {"triton", "tvm"})):
        members = [r for r in rows if r.group_id == group]
        assert {r.source for r in members} == sources
        # what verify's problem_mismatch checks: one problem per group
        assert len(distinct_problems(r.problem for r in members)) == 1
        assert members[0].problem.problem_id == group
    # build keys are the builds' own, unique across sources; kernel ids too
    before = {r.build_key: r for records in inputs.values() for r in records}
    assert {r.build_key for r in rows} == set(before) and len(rows) == len(before)
    assert len({r.kernel_id for r in rows}) == len(rows)
    for row in rows:
        from dataset_spec.canonical import source_problem
        assert source_problem(row).digest() == before[row.build_key].problem.digest()
        assert row.provenance["source_group_id"] == before[row.build_key].group_id


def test_launches_name_the_canonical_buffers_and_still_fit_their_ptx(merged):
    from dataset_spec.model import make_kernel_id
    from ptx_tools import parse_ptx
    from ptxds.finalize import check_launches
    _, rows, inputs = merged
    before = {r.build_key: r for records in inputs.values() for r in records}
    for row in rows:
        names = {b.name for b in row.buffers()}
        used = {a.buffer for l in row.launches for a in l.args if a.kind == "buffer"}
        used |= {p.buffer for l in row.launches for a in l.args for p in a.patches}
        assert used <= names and ("D" if row.problem.op == "gemm" else "out") in used, (row.source, used)
        check_launches(row, parse_ptx(row.ptx))
        assert row.kernel_id == make_kernel_id(row.ptx_hash, row.launches, row.problem, row.arch)
        # the launch is the source's, only its buffer names changed
        old = before[row.build_key].launches
        assert [(l.entry, l.grid, l.block) for l in row.launches] == [(l.entry, l.grid, l.block) for l in old]
    triton = [r for r in rows if r.source == "triton" and r.group_id == GROUP]
    assert all([a.buffer for a in r.launches[0].args if a.kind == "buffer"][:3] == ["A", "B", "D"] for r in triton)


def test_pairs_cross_sources_once_verified(merged):
    from dataset_spec.store.pairs import make_pairs
    _, rows, _ = merged
    rows = [r for r in rows if r.group_id == GROUP]
    for row in rows:
        row.status = "passed"   # as a verify of the merged group would label agreeing members
    by_id = {r.kernel_id: r for r in rows}
    pairs = make_pairs(rows)
    assert len(pairs) == len(rows) * (len(rows) - 1) // 2
    cross = [p for p in pairs if by_id[p.kernel_a].source != by_id[p.kernel_b].source]
    assert {frozenset((by_id[p.kernel_a].source, by_id[p.kernel_b].source)) for p in cross} == {
        frozenset(("triton", "cutlass")), frozenset(("triton", "tvm")), frozenset(("cutlass", "tvm"))}
    assert all(p.equivalent is True and p.label_source == "verified" for p in cross)


def test_merging_again_adds_nothing(merged, source_dirs):
    from ptxds.merge import merge_datasets
    out, rows, _ = merged
    _, dirs = source_dirs
    summary = merge_datasets([str(d) for d in dirs.values()], out)
    assert summary.rows == 0 and summary.duplicates == len(rows)


def test_merge_into_an_input_is_refused(source_dirs):
    from ptxds.cli import cli
    _, dirs = source_dirs
    result = CliRunner().invoke(cli, ["merge", str(dirs["triton"]), "--out", str(dirs["triton"])])
    assert result.exit_code != 0 and "is one of the inputs" in result.output
