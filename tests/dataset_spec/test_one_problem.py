"""One problem per group, on CPU: the verifier refuses a group whose rows carry different
problems (every runnable row ``problem_mismatch``), the manifest builder refuses a second
problem for a problem_id (within one build and against rows already in the output
folder), and ``ptxds add`` refuses to join a group whose rows disagree on the problem."""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from builders.base import BuildOptions
from builders.manifest import ManifestBuilder, ManifestError
from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem
from dataset_spec.one_problem import check_joins, describe_mismatch, differing_fields
from dataset_spec.store.shards import problems_in_folder
from dataset_spec.store.shards import ShardWriter, read_records

MANIFESTS = Path(__file__).parents[1] / "data" / "manifests"
ADVERSARIAL = Path(__file__).parents[1] / "data" / "adversarial"
PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry vadd(.param .u64 x, .param .u64 y, .param .u64 out, .param .u32 n) { ret; }
"""


def _problem(**tolerance) -> Problem:
    return Problem("vadd_64", "vector_add", [Buffer("x", "float32", (64,)), Buffer("y", "float32", (64,)),
                                             Buffer("out", "float32", (64,), role="out")], tolerance=tolerance)


def _row(name: str, problem: Problem, status: str = "built", arch: str = "sm_80") -> KernelRecord:
    launch = Launch("vadd", (1,), (64,), [Arg.buf("x"), Arg.buf("y"), Arg.buf("out"), Arg.scalar("u32", 64)])
    return KernelRecord("ptx/vadd_64", "ptx", {"member": name}, name, arch, PTX, [launch], problem,
                        build_key=f"{name}-{arch}", status=status)


def test_differences_are_named_with_ids_digests_and_the_fix():
    strict, loose = _problem(), _problem(atol=1e30)
    assert differing_fields(strict, loose) == ["tolerance"]
    message = describe_mismatch("ptx/vadd_64", [strict, loose])
    assert strict.digest() in message and loose.digest() in message and "differing in tolerance" in message
    assert "own problem_id" in message and "\n" not in message
    assert check_joins("ptx/vadd_64", strict, [strict], "here") == ""
    assert "differing in tolerance" in check_joins("ptx/vadd_64", loose, [strict], "here")


class _NoGpuWorker:
    """The verifier's worker interface for a group that must never reach a GPU."""
    ordinal = 0
    info = {"name": "no GPU (refused before any run)", "cc": [9, 0], "driver_version": "0"}

    def check(self, *args, **kwargs):
        raise AssertionError("a group with two problems must not run any member")

    def time(self, *args, **kwargs):
        raise AssertionError("a group with two problems must not be timed")

    def close(self):
        pass


def test_verify_refuses_a_group_with_two_problems(tmp_path):
    from verify import verify_dataset
    rows = [_row("strict", _problem()), _row("loose", _problem(atol=1e30)),
            _row("strict_sm90", _problem(), arch="sm_90a"),
            dataclasses.replace(_row("broken", _problem()), status="build_failed", status_message="ptxas: error")]
    ShardWriter(tmp_path / "in").write(rows)
    summary = verify_dataset(tmp_path / "in", tmp_path / "out", timing=False, progress=False,
                             start_workers=lambda n: [_NoGpuWorker()], assemble_jobs=0)
    got = {r.name: r for r in read_records(tmp_path / "out")}
    for name in ("strict", "loose", "strict_sm90"):
        assert got[name].status == "problem_mismatch", (name, got[name].status)
        assert "differing in tolerance" in got[name].status_message
        assert _problem().digest() in got[name].status_message
        assert _problem(atol=1e30).digest() in got[name].status_message
    assert got["broken"].status == "build_failed" and got["broken"].status_message == "ptxas: error"
    assert summary.counts == {"problem_mismatch": 3}
    assert not summary.groups[0].all_equivalent


def _copy_manifests(tmp_path: Path) -> Path:
    shutil.copytree(MANIFESTS, tmp_path / "m")
    shutil.copytree(ADVERSARIAL, tmp_path / "adversarial")
    return tmp_path / "m"


def test_manifest_build_refuses_a_second_problem_in_an_existing_folder(tmp_path):
    from ptxds.pipeline import run_build
    folder = _copy_manifests(tmp_path)
    out = tmp_path / "out"
    first = BuildOptions(archs=["sm_90a"], extra={"manifest": str(folder / "ok_blob.yaml")})
    summary = run_build("ptx", out, first, jobs=1, progress=False)
    assert not summary.failed_items and summary.rows_written == 2
    loose = folder / "loose.yaml"
    loose.write_text((folder / "ok_blob.yaml").read_text().replace(
        "  op: custom\n", "  op: custom\n  tolerance: {atol: 1.0e+30}\n"))
    with pytest.raises(ManifestError) as caught:
        run_build("ptx", out, BuildOptions(archs=["sm_90a"], extra={"manifest": str(loose)}), jobs=1, progress=False)
    message = str(caught.value)
    assert message.startswith("loose.yaml: problem_id 'copy_1k' (group ptx/copy_1k) already has a different problem")
    assert "differing in tolerance" in message and "\n" not in message
    assert len(read_records(out)) == 2  # nothing was added
    # the same problem again joins (a resumed or repeated build is fine)
    again = run_build("ptx", out, first, jobs=1, progress=False)
    assert not again.failed_items and len(problems_in_folder(out, "ptx/copy_1k")) == 1


def test_manifest_that_changes_its_problem_during_a_build_is_refused(tmp_path):
    folder = _copy_manifests(tmp_path)
    manifest = folder / "ok_blob.yaml"
    builder = ManifestBuilder(BuildOptions(archs=["sm_90a"], extra={"manifest": str(manifest)}))
    items = builder.work_items()
    assert builder.build(items[0])[0].problem.tolerance == {}
    manifest.write_text(manifest.read_text().replace("  op: custom\n", "  op: custom\n  tolerance: {atol: 1.0e+30}\n"))
    with pytest.raises(ManifestError, match="problem 'copy_1k' changed during the build"):
        builder.build(items[1])


def test_add_refuses_a_group_whose_rows_carry_two_problems(tmp_path):
    from ptxds.add import AddError, build_added_record
    ShardWriter(tmp_path / "ds", "kernels").write([_row("strict", _problem()), _row("loose", _problem(atol=1e30))])
    edited = tmp_path / "edited.ptx"
    edited.write_text(PTX.replace("{ ret; }", "{\n\tret;\n}"))
    with pytest.raises(AddError) as caught:
        build_added_record(tmp_path / "ds", "ptx/vadd_64", str(edited))
    assert "differing in tolerance" in str(caught.value) and "\n" not in str(caught.value)
