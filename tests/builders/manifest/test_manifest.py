"""Tests of the manifest source (``ptxds build --source ptx``), on CPU with the pinned nvcc.

The adversarial suite (its vector-add and fp16 GEMM groups) must build and assemble for
sm_90a and sm_80 with launches that fit each entry's params; every bad manifest in
tests/data/manifests must fail with its exact one-line error; a CUDA file that does not
compile must give a ``build_failed`` row, not an exception.
"""
from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from builders.base import BuildOptions
from builders.manifest import ManifestBuilder, ManifestError, load_manifest
from builders.manifest.builder import _runs_on
from dataset_spec.model import KernelRecord
from dataset_spec.problems import get_op
from dataset_spec.store.shards import read_records
from ptx_tools import ToolchainError, find_tool, parse_ptx
from ptxds.pipeline import run_build

DATA = Path(__file__).parents[2] / "data"
ADVERSARIAL = DATA / "adversarial" / "manifest.yaml"
ADVERSARIAL_GEMM = DATA / "adversarial" / "gemm_f16.yaml"
MANIFESTS = DATA / "manifests"


def _have_nvcc() -> bool:
    try:
        find_tool("nvcc")
        return True
    except ToolchainError:
        return False


needs_nvcc = pytest.mark.skipif(not _have_nvcc(), reason="the pinned nvcc wheel is not installed")


def build_all(manifest: Path, archs=("sm_90a", "sm_80")) -> list:
    builder = ManifestBuilder(BuildOptions(archs=list(archs), extra={"manifest": str(manifest)}))
    return [row for item in builder.work_items() for row in builder.build(item)]


@pytest.fixture(scope="module")
def adversarial_rows():
    return build_all(ADVERSARIAL)


@pytest.fixture(scope="module")
def gemm_rows():
    return build_all(ADVERSARIAL_GEMM)


# The status the GPU verifier must give each member (documented in the manifest itself).
EXPECTED_STATUSES = {
    "add_one_per_thread": "passed",
    "add_grid_stride": "passed",
    "add_hand_written": "passed",
    "add_two_launches": "passed",
    "timer_noise": "race_detected",
    "writes_nothing": "unwritten_output",
    "writes_half": "unwritten_output",
    "writes_zeros": "wrong_result",
    "subtly_wrong": "wrong_result",
    "overwrites_input": "modified_input",
    "reads_out_of_bounds": "crashed",
    "traps": "crashed",
    "spins_forever": "timeout",
    "wrong_for_large": "wrong_result",
    "wrong_for_negative": "wrong_result",
    "wrong_for_zeros": "wrong_result",
    "writes_past_end": "out_of_bounds_write",
    "racy": "race_detected",
}
# The same for the fp16 GEMM group.
GEMM_EXPECTED_STATUSES = {
    "gemm_f16_simt": "passed",
    "gemm_f16_mma": "passed",
    "gemm_f16_off_by_1pct": "wrong_result",
    "gemm_f16_acc_in_f16": "wrong_result",  # fp16 accumulation: see gemm_f16.yaml
}


@needs_nvcc
def test_adversarial_suite_builds_for_both_archs(adversarial_rows):
    assert {(r.name, r.arch) for r in adversarial_rows} == {
        (name, arch) for name in EXPECTED_STATUSES for arch in ("sm_90a", "sm_80")}
    for row in adversarial_rows:
        assert row.status == "built", (row.name, row.arch, row.status_message)
        assert row.group_id == "ptx/adversarial_vector_add_f32_1m"
        assert row.source == "ptx"
        assert row.variant["expect"] == EXPECTED_STATUSES[row.name]


@needs_nvcc
def test_adversarial_gemm_group_builds_for_both_archs(gemm_rows):
    assert {(r.name, r.arch) for r in gemm_rows} == {
        (name, arch) for name in GEMM_EXPECTED_STATUSES for arch in ("sm_90a", "sm_80")}
    for row in gemm_rows:
        assert row.status == "built", (row.name, row.arch, row.status_message)
        assert row.group_id == "ptx/adversarial_gemm_f16_256x256x512"
        assert row.variant.get("expect") == GEMM_EXPECTED_STATUSES[row.name]
        assert row.problem.op == "gemm" and row.problem.params["K"] == 512


@needs_nvcc
def test_adversarial_suite_assembles_into_one_dataset(tmp_path):
    """Both manifests built the normal way (compile, check, assemble with ptxas) into one
    folder, as the GPU test verifies them: two groups, every row built."""
    for manifest in (ADVERSARIAL, ADVERSARIAL_GEMM):
        options = BuildOptions(archs=["sm_80", "sm_90a"], extra={"manifest": str(manifest)})
        summary = run_build("ptx", tmp_path, options, jobs=4, progress=False)
        assert not summary.failed_items
    rows = read_records(tmp_path)
    expected = {**EXPECTED_STATUSES, **GEMM_EXPECTED_STATUSES}
    assert len(rows) == 2 * len(expected) == 44
    assert {r.group_id for r in rows} == {"ptx/adversarial_vector_add_f32_1m",
                                          "ptx/adversarial_gemm_f16_256x256x512"}
    for row in rows:
        assert row.status == "built", (row.name, row.arch, row.status_message)
        assert row.resources, (row.name, row.arch)  # ptxas reported on every entry
        assert row.variant.get("expect") == expected[row.name]


@needs_nvcc
def test_adversarial_members_do_what_their_names_say(adversarial_rows, gemm_rows):
    """What can be checked without a GPU, read from the PTX: the tensor-core member uses
    mma, the others accumulate in the precision they claim, and the race goes through
    shared memory with no barrier."""
    ptx = {(r.name, r.arch): r.ptx for r in adversarial_rows + gemm_rows}
    for arch in ("sm_80", "sm_90a"):
        assert "wmma.mma.sync" in ptx[("gemm_f16_mma", arch)]
        assert "fma.rn.f32" in ptx[("gemm_f16_simt", arch)]
        assert "fma.rn.f16" in ptx[("gemm_f16_acc_in_f16", arch)]
        assert "fma.rn.f16" not in ptx[("gemm_f16_simt", arch)]
        racy = ptx[("racy", arch)]
        assert "st.volatile.shared.f32" in racy and "ld.volatile.shared.f32" in racy
        assert "bar.sync" not in racy and "barrier" not in racy
        assert "%globaltimer" in racy


@needs_nvcc
@pytest.mark.parametrize("rows_fixture", ["adversarial_rows", "gemm_rows"])
def test_adversarial_launch_args_match_entry_params(rows_fixture, request):
    for row in request.getfixturevalue(rows_fixture):
        module = parse_ptx(row.ptx)
        entries = {e.name: e for e in module.entries}
        for launch in row.launches:
            params = entries[launch.entry].params
            assert len(launch.args) == len(params), (row.name, launch.entry)
            assert [a.size for a in launch.args] == [p.size for p in params], (row.name, launch.entry)
        if row.name != "add_hand_written":  # nvcc writes .target = the row's arch
            assert module.arch == row.arch


@needs_nvcc
def test_adversarial_rows_carry_provenance_and_round_trip(adversarial_rows):
    row = next(r for r in adversarial_rows if r.name == "add_two_launches" and r.arch == "sm_90a")
    source = ADVERSARIAL.parent / "add_two_launches.cu"
    assert row.provenance["source_sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert row.provenance["manifest"] == str(ADVERSARIAL.resolve())
    assert row.toolchain["compiler"] == "nvcc" and row.toolchain["nvcc"]
    assert [l.entry for l in row.launches] == ["sum_to_scratch", "copy_scratch"]
    assert [b.name for b in row.scratch] == ["tmp"]
    assert KernelRecord.from_json(row.to_json()).to_json() == row.to_json()


def test_omitted_entry_is_the_modules_only_entry():
    member = load_manifest(ADVERSARIAL).member("add_hand_written")
    assert [l.entry for l in member.launches] == ["add_hand_written"]


# Every bad manifest and its exact error; paths are given relative to tests/data/manifests.
BAD_MANIFESTS = {
    "bad_grid.yaml": "bad_grid.yaml: members[0].launches[0].grid: must be 1 to 3 positive ints, got [0]",
    "block_too_large.yaml": "block_too_large.yaml: members[0].launches[0].block: (2048, 1, 1) has more than 1024 threads",
    "unknown_op.yaml": "unknown_op.yaml: problem.op: unknown op 'vector_sub'; known ops: add_rmsnorm, attention, "
                       "batch_matmul, blockwise_scaled_gemm, complex_gemm, conv2d_bias_relu, conv2d_dgrad, "
                       "conv2d_fprop, conv2d_wgrad, conv3d_dgrad, conv3d_fprop, conv3d_wgrad, cross_entropy, custom, "
                       "depthwise_conv2d, gated_mlp, geglu, gemm, grouped_blockwise_scaled_gemm, grouped_complex_gemm, "
                       "grouped_gemm, layernorm, lora, mixed_input_gemm, mugraph, ntrans, rmsnorm, rmsnorm_matmul, "
                       "rope, row_sum, smith_waterman, softmax, sparse_gemm, square, swiglu, vector_add "
                       "(or op 'custom' with params.reference = 'module:function')",
    "missing_file.yaml": "missing_file.yaml: members[0].cuda: no such file 'nope.cu' (relative to the manifest's folder)",
    "unknown_buffer.yaml": "unknown_buffer.yaml: members[0].launches[0].args[1].buffer: no buffer named 'z'; known: x, y, out",
    "arg_count.json": "arg_count.json: members[0].launches[0].args: 3 args but entry add_hand_written has 4 params "
                      "(.u64 add_hand_written_x, .u64 add_hand_written_y, .u64 add_hand_written_out, "
                      ".u32 add_hand_written_n)",
    "arg_size.yaml": "arg_size.yaml: members[0].launches[0].args[3]: scalar s64 is 8 bytes but param "
                     "add_hand_written_n (.u32) is 4 bytes",
    "bad_dtype.yaml": "bad_dtype.yaml: problem.buffers[0].dtype: must be one of ['bfloat16', 'float16', "
                      "'float32', 'float64', 'float8_e4m3', 'float8_e5m2', 'int16', 'int2', 'int32', 'int4', "
                      "'int64', 'int8', 'uint16', 'uint2', 'uint32', 'uint4', 'uint64', 'uint8'], got 'f32'",
    "bad_init.yaml": "bad_init.yaml: problem.buffers[0].init.kind: must be one of ('normal', 'uniform', "
                     "'randint', 'zeros', 'ones', 'arange', 'constant', 'values', 'addresses'), got 'gaussian'",
    "typo_field.yaml": "typo_field.yaml: members[0].lanches: unknown field; expected one of name, ptx, cuda, "
                       "arch, variant, expect, launches, scratch, nvcc_flags, include_dirs",
    "two_sources.yaml": "two_sources.yaml: members[0]: needs exactly one of ptx or cuda (a file path), got ptx and cuda",
    "bad_expect.yaml": "bad_expect.yaml: members[0].expect: must be one of passed, wrong_result, "
                       "unwritten_output, modified_input, jit_failed, launch_failed, crashed, timeout, "
                       "disagrees, trivial_reference, out_of_bounds_write, out_of_bounds_read, race_detected, problem_mismatch, unexercised, timing_mismatch, faster_than_roofline, stale_binding, "
                       "residency_deadlock, passed_nondeterministic, got 'pass'",
    "ambiguous_entry.yaml": "ambiguous_entry.yaml: members[0].launches[0].entry: is required: two_entries.ptx "
                            "has 2 entries (sum_to_scratch, copy_scratch)",
    "scalar_overflow.yaml": "scalar_overflow.yaml: members[0].launches[0].args[3].value: -1 does not fit u32",
    "duplicate_member.yaml": "duplicate_member.yaml: members[1].name: duplicate member name 'add' (also members[0])",
    "blob_patch_offset.yaml": "blob_patch_offset.yaml: members[0].launches[0].args[0].patches[1].offset: 20 "
                              "leaves no room for an 8-byte pointer in the 24-byte blob",
    "custom_missing_function.yaml": "custom_missing_function.yaml: problem.params.reference: module "
                                    "'my_reference' has no function 'multiply_add_two'",
    "custom_missing_module.yaml": "custom_missing_module.yaml: problem.params.reference: module "
                                  "'no_such_module' is neither next to the manifest (no_such_module.py) nor importable",
}
VALID_MANIFESTS = {"ok_custom.yaml", "ok_blob.yaml", "compile_error.yaml"}


@pytest.mark.parametrize("name", sorted(BAD_MANIFESTS))
def test_bad_manifest_names_the_field(name, monkeypatch):
    monkeypatch.chdir(MANIFESTS)
    with pytest.raises(ManifestError) as caught:
        load_manifest(name)
    assert str(caught.value) == BAD_MANIFESTS[name]
    assert "\n" not in str(caught.value)


def test_every_manifest_file_has_a_test():
    files = {p.name for p in MANIFESTS.iterdir() if p.suffix in (".yaml", ".json")}
    assert files == set(BAD_MANIFESTS) | VALID_MANIFESTS


def test_missing_manifest_and_missing_option(tmp_path):
    with pytest.raises(ManifestError, match=r"nope\.yaml: cannot read the manifest"):
        load_manifest(tmp_path / "nope.yaml")
    with pytest.raises(ManifestError, match="--manifest FILE"):
        ManifestBuilder(BuildOptions()).work_items()


@needs_nvcc
def test_compile_failure_is_a_build_failed_row():
    rows = {(r.name, r.arch): r for r in build_all(MANIFESTS / "compile_error.yaml")}
    failed = rows[("does_not_compile", "sm_90a")]
    assert failed.status == "build_failed" and failed.ptx == ""
    assert 'does_not_compile.cu(3): error: identifier "undeclared_value" is undefined' in failed.status_message
    # A CUDA member's launches can only be checked once compiled: a mismatch is a row too.
    mismatch = rows[("wrong_arg_count", "sm_80")]
    assert mismatch.status == "build_failed"
    assert mismatch.status_message.endswith(
        "members[1].launches[0].args: 3 args but entry add_one_per_thread has 4 params "
        "(.u64 add_one_per_thread_param_0, .u64 add_one_per_thread_param_1, "
        ".u64 add_one_per_thread_param_2, .u32 add_one_per_thread_param_3)")


def test_custom_reference_imports_at_verify_time(monkeypatch):
    """The verifier knows only the row's problem: the module's source travels inside it,
    with no path of the building machine."""
    problem = load_manifest(MANIFESTS / "ok_custom.yaml").problem
    assert "reference_path" not in problem.params
    assert problem.params["reference_source"] == (MANIFESTS / "my_reference.py").read_text()
    assert str(MANIFESTS) not in problem.to_json()
    assert problem.buffer("x").init.params == {"low": -1, "high": 1}
    monkeypatch.chdir("/")  # the verifier runs elsewhere
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "my_reference", raising=False)
    x, y = np.arange(4.0), np.full(4, 2.0)
    out = get_op("custom").reference({"x": x, "y": y}, problem)
    np.testing.assert_array_equal(out["out"], x * y + 1.0)
    sys.modules.pop("my_reference", None)


def test_blob_args_arch_restriction_and_work_items():
    manifest = load_manifest(MANIFESTS / "ok_blob.yaml")
    hex_blob, base64_blob = (m.launches[0].args[0] for m in manifest.members)
    assert hex_blob.blob == base64_blob.blob == bytes(17) + b"\x04" + bytes(6)
    assert [(p.offset, p.buffer) for p in hex_blob.patches] == [(0, "x"), (8, "out")]
    builder = ManifestBuilder(BuildOptions(archs=["sm_80", "sm_90a"],
                                           extra={"manifest": str(MANIFESTS / "ok_blob.yaml")}))
    items = builder.work_items()
    assert [i.label for i in items] == ["copy_hex_blob sm_90a", "copy_base64_blob sm_80",
                                        "copy_base64_blob sm_90a"]
    assert [i.key for i in items] == [i.key for i in builder.work_items()]  # deterministic
    assert len({i.key for i in items}) == len(items)
    row = builder.build(items[0])[0]  # a PTX member needs no compiler
    assert row.status == "built" and row.build_key == items[0].key
    limited = ManifestBuilder(BuildOptions(archs=["sm_80", "sm_90a"], limit=1,
                                           extra={"manifest": str(MANIFESTS / "ok_blob.yaml")}))
    assert len(limited.work_items()) == 1


def test_editing_a_member_source_changes_its_build_key(tmp_path):
    shutil.copytree(MANIFESTS, tmp_path / "m")
    shutil.copytree(DATA / "adversarial", tmp_path / "adversarial")
    options = BuildOptions(archs=["sm_90a"], extra={"manifest": str(tmp_path / "m" / "ok_blob.yaml")})
    before = [i.key for i in ManifestBuilder(options).work_items()]
    ptx = tmp_path / "m" / "struct_param.ptx"
    ptx.write_text(ptx.read_text().replace("ret;", "ret;\n\t// edited"))
    after = [i.key for i in ManifestBuilder(options).work_items()]
    assert before[0] != after[0]


def test_ptx_targets_and_archs():
    assert _runs_on("sm_80", "sm_90a") and _runs_on("sm_90a", "sm_90a")
    assert not _runs_on("sm_90a", "sm_80") and not _runs_on("sm_90a", "sm_100a")
    assert not _runs_on("sm_90", "sm_80")
