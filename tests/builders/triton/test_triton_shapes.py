"""Tests for the Triton suite under shape sets: the default set is the earlier build row for
row, other sets add one group per size with the size in problem params, and sizes whose
compile is identical share one compile (checked against separate compiles)."""
from __future__ import annotations

import hashlib
import json

import pytest

pytest.importorskip("triton")

from builders.base import BuildOptions  # noqa: E402
from builders.shapes import LLM, MAX_GROUP_HOST_BYTES, SWEEP, ShapeSet, host_bytes, load_shape_set  # noqa: E402

from builders.triton import TritonBuilder, compile_kernel, suite_groups  # noqa: E402
from builders.triton.builder import suite_payload  # noqa: E402
from ptxds.pipeline import build_and_finalize  # noqa: E402

# Digest of every default-set work item (key, group, label, payload), and a few finalised
# rows, as the builder made them before shape sets existed (triton 3.6.0). The kernel ids
# changed once since, on purpose: a kernel id hashes the problem, and the problem's default
# trial kinds gained `stress` (verifier v3); work items and build keys never changed.
DEFAULT_ITEMS_DIGEST = "f139b7edb93eb37b"
DEFAULT_ROWS = {
    "triton/vector_add/float32/n1048576/BLOCK_SIZE256_num_warps2_num_stages1/sm_80":
        ("26367a7c1d6e8c75819cc097", "triton/vector_add/float32/n1048576"),
    "triton/softmax/float32/M1823xN781/BLOCK_SIZE1024_num_warps16_num_stages3_programs264/sm_80":
        ("80e12e0293ca3803a3c46f96", "triton/softmax/float32/M1823xN781"),
}


@pytest.fixture
def private_triton_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))


def items_digest(items) -> str:
    text = json.dumps([[i.key, i.group_id, i.label, dict(i.payload)] for i in items], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize("extra", [{}, {"shapes": "default"}])
def test_triton_default_set_is_todays_build(extra, private_triton_cache):
    builder = TritonBuilder(BuildOptions(extra=extra))
    items = builder.work_items()
    assert len(items) == 118 and items_digest(items) == DEFAULT_ITEMS_DIGEST
    by_key = {i.key: i for i in items}
    for key, (kernel_id, group) in DEFAULT_ROWS.items():
        [row] = build_and_finalize(builder, by_key[key], sass=False)
        assert (row.build_key, row.kernel_id, row.group_id, row.status) == (key, kernel_id, group, "built")
        assert "shared_compile" not in row.provenance


def test_triton_llm_set_groups_sizes_and_records_them():
    groups = suite_groups(LLM)
    ids = [g["problem_id"] if "problem_id" in g else None for g in groups]
    labels = {(g["op"], g["dtype"], g["size"]) for g in groups}
    assert len(labels) == len(groups) == 2 * 4 + 4 * 3 + 3 * 3 + 3 and None in ids  # + 3 attention sizes
    gemm = next(g for g in groups if g["op"] == "gemm" and g["size"] == "M16xN4096xK4096")
    assert gemm["op_params"]["shape"] == {"M": 16, "N": 4096, "K": 4096}
    for g in suite_groups(LLM) + suite_groups(SWEEP):
        assert host_bytes(g["buffers"]) <= MAX_GROUP_HOST_BYTES, (g["op"], g["size"])


def test_a_default_size_in_another_set_is_the_default_group():
    shapes = ShapeSet(name="t", elementwise=(1000003,), exact=True)
    groups = suite_groups(shapes)
    odd = next(g for g in groups if g["op"] == "vector_add" and g["dtype"] == "float32")
    assert odd["size"] == "n1000003" and not odd["hint"] and "shape" not in odd["op_params"]


def test_triton_shared_compile_items_hold_sizes_with_equal_compiles():
    items = TritonBuilder(BuildOptions(archs=["sm_80"], extra={"shapes": "llm"})).work_items()
    rows = sum(len(i.payload.get("members", [i.payload])) for i in items)
    shared = [i for i in items if "members" in i.payload]
    assert rows == 274 and len(items) < rows and shared  # 194 + 8 GEMM groups x 7 added sm_80 configs + 3 attention groups x 8
    assert len({i.key for i in items}) == len(items)
    for item in shared:
        groups = [m["group_id"] for m in item.payload["members"]]
        assert len(set(groups)) == len(groups) == len(item.payload["shared_compile"]["groups"])


def test_triton_ptx_is_the_same_for_sizes_sharing_a_compile(private_triton_cache):
    """Two sizes whose runtime scalars differ but whose hints agree compile to one PTX;
    a size that changes a hint (not a multiple of 16) compiles differently."""
    builder = TritonBuilder(BuildOptions(archs=["sm_80"], extra={"shapes": "sweep"}))
    item = next(i for i in builder.work_items() if "members" in i.payload
                and i.payload["members"][0]["kernel"] == "add_kernel")
    members = item.payload["members"]
    alone = [compile_kernel(m["kernel"], m["params"], m["config"], "sm_80").asm["ptx"] for m in members[:2]]
    assert alone[0] == alone[1]
    rows = [build_and_finalize(builder, item, sass=False)][0]
    assert len(rows) == len(members) and all(r.status == "built" for r in rows)
    assert len({r.ptx_hash for r in rows}) == 1 and len({r.group_id for r in rows}) == len(rows)
    assert [r.provenance["shared_compile"]["reused"] for r in rows] == [False] + [True] * (len(rows) - 1)
    assert len({str(r.launches[0].args) for r in rows}) == len(rows)  # each size's own n_elements


def triton_llm_rows(ops: set) -> list:
    builder = TritonBuilder(BuildOptions(archs=["sm_80"], extra={"shapes": "llm"}))
    items = [i for i in builder.work_items()
             if (i.payload.get("members") or [i.payload])[0]["problem"]["op"] in ops]
    return [row for item in items for row in build_and_finalize(builder, item, sass=False)]


def test_triton_llm_set_builds_every_row(private_triton_cache):
    """Every llm-set row builds for sm_80 (about 30 s on two cores, cold Triton cache)."""
    rows = triton_llm_rows({"vector_add", "square", "softmax", "gemm", "rmsnorm", "layernorm"})
    assert len(rows) == 250 and all(r.status == "built" for r in rows), \
        [r.status_message for r in rows if r.status != "built"]


def test_cli_builds_a_shape_file_and_info_lists_its_shapes(tmp_path, private_triton_cache):
    from click.testing import CliRunner
    from ptxds.cli import cli
    shapes = tmp_path / "tiny.yaml"
    shapes.write_text("square: [4096, 8192]\n")
    out = str(tmp_path / "ds")
    result = CliRunner().invoke(cli, ["build", "--source", "triton", "--arch", "sm_80", "--shapes", str(shapes),
                                      "--out", out, "--silent", "--jobs", "1"], catch_exceptions=False)
    assert result.exit_code == 0 and "built                 12" in result.output, result.output
    result = CliRunner().invoke(cli, ["info", out], catch_exceptions=False)
    assert "12 rows in 2 groups" in result.output
    assert "shapes (groups): n4096 1, n8192 1" in result.output


def test_shape_sets_add_cluster_persistent_and_descriptor_gemms_but_default_does_not():
    def gemm_kernels(shapes, arch):
        items = TritonBuilder(BuildOptions(archs=[arch], extra={"shapes": shapes})).work_items()
        payloads = [m for i in items for m in i.payload.get("members", [i.payload])]
        return [(p["kernel"], p["config"].get("num_ctas", 1)) for p in payloads if p["problem"]["op"] == "gemm"]
    default = gemm_kernels("default", "sm_90a")
    assert {k for k, _ in default} == {"matmul_kernel"} and {c for _, c in default} == {1}
    hopper, ampere = gemm_kernels("llm", "sm_90a"), gemm_kernels("llm", "sm_80")
    assert {k for k, _ in hopper} == {"matmul_kernel", "matmul_kernel_persistent",
                                      "matmul_kernel_descriptor_persistent"}
    assert any(c == 2 for _, c in hopper) and not any(c == 2 for _, c in ampere)


def test_descriptor_matmul_is_not_applicable_where_row_strides_miss_16_bytes():
    shapes = ShapeSet(name="t", gemm=((128, 256, 64), (127, 255, 63)), exact=True)
    groups = [g for g in suite_groups(shapes) if g["op"] == "gemm" and g["dtype"] == "float16"]
    config = next(c for c in groups[0]["configs"] if c.get("kernel") == "matmul_kernel_descriptor_persistent")
    fits, misfits = (suite_payload(g, config, "sm_90a") for g in groups)
    assert "not_applicable" not in fits and fits["grid"] == [min(132, 1 * 2)]
    assert "not multiples of 16 bytes" in misfits["not_applicable"]


def test_descriptor_matmul_builds_with_global_scratch_on_sm90a(private_triton_cache):
    """Device-side tensor descriptors live in Triton's global scratch: a scratch buffer of
    global_scratch_size bytes per program; the PTX uses TMA."""
    shapes = ShapeSet(name="t", gemm=((256, 256, 128),), exact=True)
    builder = TritonBuilder(BuildOptions(archs=["sm_90a"], extra={"shapes": shapes}))
    item = next(i for i in builder.work_items()
                if i.payload.get("kernel") == "matmul_kernel_descriptor_persistent"
                and i.payload["problem"]["buffers"][0]["dtype"] == "float16"
                and i.payload["config"]["BLOCK_SIZE_N"] == 128)
    row = build_and_finalize(builder, item, sass=False)[0]
    assert row.status == "built", row.status_message
    assert "cp.async.bulk.tensor" in row.ptx and "tensormap" in row.ptx
    scratch = {b.name: b for b in row.scratch}
    programs = row.launches[0].grid[0]
    assert programs == 4 and scratch["global_scratch"].shape[0] % programs == 0
    assert row.launches[0].args[-2].buffer == "global_scratch"
