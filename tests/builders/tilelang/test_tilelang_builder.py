"""The tilelang source: rows assemble for sm_80 and sm_90a, launches equal the host code's
launch values, sm_90a GEMMs carry their CUtensorMaps as tensormap patches, a configuration
TileLang cannot compile is a build_failed row and the group is refilled, the problems join
other sources' canonical groups, and an environment without a working tilelang extra is one
line naming it. Building needs the tilelang extra (its own environment: it excludes the tvm
extra); those tests skip without it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from builders import extras
from builders.tilelang.kernels import WORKLOADS, configs, problem
from dataset_spec.canonical import canonical_problem

ROOT = Path(__file__).resolve().parents[3]


def _workload(group_id):
    return next(w for w in WORKLOADS if w.group_id == group_id)


@pytest.fixture(scope="module")
def tilelang_rows(tmp_path_factory):
    pytest.importorskip("tilelang")
    os.environ["PTXDS_TILELANG_CACHE"] = str(tmp_path_factory.mktemp("tilelang-cache"))
    from builders.base import BuildOptions
    from builders.tilelang import TileLangBuilder
    from ptxds.pipeline import build_and_finalize
    builder = TileLangBuilder(BuildOptions(archs=["sm_80", "sm_90a"], extra={
        "members": 2, "workloads": ["gemm_fp16/small", "rmsnorm_fp16/small"]}))
    items = builder.work_items()
    assert [i.key for i in items] == ["tilelang/gemm_fp16/small/sm_80/n2", "tilelang/gemm_fp16/small/sm_90a/n2",
                                      "tilelang/rmsnorm_fp16/small/sm_80/n2", "tilelang/rmsnorm_fp16/small/sm_90a/n2"]
    return {item.key: build_and_finalize(builder, item, False) for item in items}


def test_every_row_assembles_with_the_host_codes_launches(tilelang_rows):
    for key, records in tilelang_rows.items():
        built = [r for r in records if r.status == "built"]
        assert len(built) == 2, [(r.name, r.status, r.status_message[:300]) for r in records]
        assert len({r.ptx_hash for r in built}) == 2
        for r in built:
            assert r.resources and r.arch in key   # ptxas accepted the entry
            host = r.provenance["tilelang_host_launches"]
            assert len(host) == len(r.launches) == 1
            launch, passed = r.launches[0], host[0]
            assert f".entry {launch.entry}(" in r.ptx
            assert launch.grid == tuple(passed.get(f"blockIdx.{a}", 1) for a in "xyz")
            assert launch.block == tuple(passed.get(f"threadIdx.{a}", 1) for a in "xyz")
            assert launch.dynamic_smem == passed.get("tirx.use_dyn_shared_memory", 0)
            names = {b.name for b in r.buffers()}
            for arg in launch.args:
                assert (arg.buffer if arg.kind == "buffer" else arg.patches[0].buffer) in names


def test_sm90a_gemm_uses_tma_descriptors_and_wgmma(tilelang_rows):
    hopper = [r for r in tilelang_rows["tilelang/gemm_fp16/small/sm_90a/n2"] if r.status == "built"]
    ampere = [r for r in tilelang_rows["tilelang/gemm_fp16/small/sm_80/n2"] if r.status == "built"]
    for r in hopper:
        assert {"wgmma", "cp.async.bulk.tensor"} <= set(r.features)
        blobs = [a for a in r.launches[0].args if a.kind == "blob"]
        assert sorted(a.patches[0].buffer for a in blobs) == ["A", "B"]
        for a in blobs:
            tm = a.patches[0].tensormap
            assert len(a.blob) == 128 and a.patches[0].kind == "tensormap"
            assert tm["rank"] == 2 and tm["global_dim"] == [512, 512] and tm["global_strides"] == [1024]
    # the verifier's packing: each descriptor at its declared .align 128, encoded for its buffer's address
    from verify.member.args import entry_params, pack_args
    launch = hopper[0].launches[0]
    addresses = {"A": 0x10000, "B": 0x20000, "D": 0x30000}
    encoded = []
    packed = pack_args(launch, addresses, entry_params(hopper[0].ptx, launch.entry),
                       encode_tensormap=lambda tm, address: encoded.append(address) or bytes([7]) * 128)
    assert packed.offsets == [0, 128, 256] and sorted(encoded) == [0x10000, 0x20000]
    assert packed.buffer[256:264] == (0x30000).to_bytes(8, "little")
    # block = the config's threads + one producer warpgroup (TileLang's warp specialisation)
    assert hopper[0].launches[0].block == (256, 1, 1) and hopper[0].variant["threads"] == 128
    for r in ampere:
        assert "mma.sync" in r.features and "wgmma" not in r.features
        assert all(a.kind == "buffer" for a in r.launches[0].args)
        assert r.launches[0].grid == (512 // r.variant["block_N"], 512 // r.variant["block_M"], 1)


def test_a_config_tilelang_cannot_compile_is_build_failed_and_refilled(monkeypatch, tmp_path):
    pytest.importorskip("tilelang")
    monkeypatch.setenv("PTXDS_TILELANG_CACHE", str(tmp_path))
    from builders.base import BuildOptions
    from builders.tilelang import TileLangBuilder, builder as builder_module
    # 3 warps cannot cover a 128x128 tile: TileLang refuses it while lowering
    bad = dict(block_M=128, block_N=128, block_K=32, num_stages=2, threads=96)
    monkeypatch.setattr(builder_module, "configs", lambda w: [bad] + configs(w))
    builder = TileLangBuilder(BuildOptions(archs=["sm_80"], extra={"members": 1, "workloads": ["gemm_fp16/small"]}))
    records = builder.build(builder.work_items()[0])
    assert [r.status for r in records] == ["build_failed", "built"]
    assert "warp partition" in records[0].status_message and "threads96" in records[0].status_message
    assert records[1].provenance["tilelang"] == {"configs_tried": 2, "failed": 1, "not_applicable": 0,
                                                "duplicates_dropped": 0}


def test_every_group_has_eight_configs_and_two_sizes():
    kinds = {}
    for w in WORKLOADS:
        assert len(configs(w)) >= 8 + 2   # two spares refill failures
        kinds.setdefault(w.name, set()).add(w.size)
    assert set(kinds) == {"gemm_fp16", "gemm_bf16", "gemm_fp8e4m3", "attention_fp16", "rmsnorm_fp16"}
    assert all(sizes == {"small", "large"} for sizes in kinds.values())


def test_problems_join_the_other_sources_canonical_groups():
    from builders.triton.builder import gemm_group, norm_group
    from dataset_spec.model import Buffer, Problem

    def triton_problem(group):
        return Problem("triton", group["op"], group["buffers"], group["op_params"])
    assert canonical_problem(problem(_workload("tilelang/gemm_fp16/small"))) == \
        canonical_problem(triton_problem(gemm_group("float16", 512, 512, 512)))
    assert canonical_problem(problem(_workload("tilelang/gemm_bf16/small"))) == \
        canonical_problem(triton_problem(gemm_group("bfloat16", 768, 512, 384)))
    assert canonical_problem(problem(_workload("tilelang/rmsnorm_fp16/small"))) == \
        canonical_problem(triton_problem(norm_group("rmsnorm", "float16", 2048, 1024, hint=True)))
    tvm_large = Problem("tvm/matmul_fp16/large", "gemm",
                        [Buffer("A", "float16", (2048, 2048)), Buffer("B", "float16", (2048, 2048)),
                         Buffer("D", "float16", (2048, 2048), "out")],
                        {"M": 2048, "N": 2048, "K": 2048, "accumulator": "float32"})
    assert canonical_problem(problem(_workload("tilelang/gemm_fp16/large"))) == canonical_problem(tvm_large)
    # fp8 stores B as N x K: the canonical problem is column-major B, not the fp16 one
    fp8 = canonical_problem(problem(_workload("tilelang/gemm_fp8e4m3/small")))
    assert fp8.params["layout_b"] == "col" and fp8.buffer("B").shape == (512, 512)
    # fp8 wgmma adds in about 14 bits: the bound must use the fp8 tensor-core accumulator, as CUTLASS's do
    assert fp8.params["accumulator"] == "fp8_tensor_core"


def test_a_shape_set_builds_softmax_and_decode_attention_with_real_tilelang(tmp_path, monkeypatch):
    """--shapes: a float32 softmax and an attention with Sq (16) != Skv (256) compile with
    tilelang and the pinned nvcc; the query tiles larger than Sq are not_applicable rows
    naming the dimension, the 16-query tiles fill the group; the rows' problems are the
    canonical ones Triton states at the same sizes."""
    pytest.importorskip("tilelang")
    monkeypatch.setenv("PTXDS_TILELANG_CACHE", str(tmp_path / "cache"))
    from builders.base import BuildOptions
    from builders.tilelang import TileLangBuilder
    from builders.triton.builder import attention_group, softmax_group, suite_payload
    from dataset_spec.model import Problem
    from ptxds.pipeline import build_and_finalize
    shapes = tmp_path / "shapes.json"
    shapes.write_text('{"attention": [[2, 16, 256, 64]], "softmax": [[64, 1024]]}')
    builder = TileLangBuilder(BuildOptions(archs=["sm_90a"], extra={
        "members": 1, "shapes": str(shapes), "workloads": ["attention_fp16", "softmax_fp32"]}))
    items = builder.work_items()
    assert [i.group_id for i in items] == ["tilelang/attention_fp16/B2xSq16xSkv256xD64",
                                           "tilelang/softmax_fp32/M64xN1024"]
    attention, softmax = (build_and_finalize(builder, item, False) for item in items)
    misfits = [r for r in attention if r.status == "not_applicable"]
    built = [r for r in attention if r.status == "built"]
    assert len(built) == 1 and built[0].variant["block_M"] == 16, [(r.name, r.status_message[:200]) for r in attention]
    assert len(misfits) == 10 and all("Sq 16 is not a multiple of the tile's" in r.status_message for r in misfits)
    assert built[0].provenance["tilelang"]["not_applicable"] == 10
    launch = built[0].launches[0]
    assert launch.grid[:2] == (1, 2) and built[0].resources   # ptxas accepted the entry
    assert sorted(a.patches[0].buffer if a.kind == "blob" else a.buffer for a in launch.args) == ["K", "O", "Q", "V"]
    assert [r.status for r in softmax] == ["built"] and softmax[0].resources and f".entry {softmax[0].launches[0].entry}(" in softmax[0].ptx
    assert softmax[0].launches[0].grid == (64 // softmax[0].variant["block_M"], 1, 1)

    def triton(group):
        return canonical_problem(Problem(**suite_payload(group, group["configs"][0], "sm_90a")["problem"]))
    assert canonical_problem(built[0].problem) == triton(attention_group(2, 16, 256, 64))
    assert canonical_problem(softmax[0].problem) == triton(softmax_group(64, 1024, record_shape=True))


def test_a_missing_or_conflicting_extra_is_one_line(monkeypatch):
    from packaging.requirements import Requirement
    versions = {"tilelang": None, "apache-tvm": "0.27.0.post1", "apache-tvm-ffi": "0.1.14.post0"}
    requirements = {"tilelang": Requirement("apache-tvm-ffi<0.1.13,>=0.1.11"),
                    "apache-tvm": Requirement("apache-tvm-ffi>=0.1.14.post0")}
    monkeypatch.setattr(extras, "_version", versions.get)
    monkeypatch.setattr(extras, "_ffi_requirement", requirements.get)
    assert extras.extra_blocker("tilelang") == (
        "source 'tilelang' needs the Python package 'tilelang'; install it with pip install 'ptxds[tilelang]' in an "
        "environment without the tvm extra (apache-tvm 0.27.0.post1 is installed here, and the two extras pin "
        "conflicting apache-tvm-ffi versions)")
    assert extras.extra_blocker("tvm") is None and extras.extra_blocker("triton") is None
    versions["tilelang"] = "0.1.15"   # both installed, the ffi apache-tvm wants
    conflict = extras.extra_blocker("tilelang")
    assert "tilelang 0.1.15 needs apache-tvm-ffi<0.1.13,>=0.1.11, but 0.1.14.post0 is installed" in conflict
    assert "exclude each other" in conflict and "\n" not in conflict
    versions["apache-tvm-ffi"] = "0.1.12"   # the ffi tilelang wants: now the tvm source is the broken one
    assert extras.extra_blocker("tilelang") is None
    assert extras.extra_blocker("tvm").startswith(
        "source 'tvm': apache-tvm 0.27.0.post1 needs apache-tvm-ffi>=0.1.14.post0, but 0.1.12 is installed "
        "(tilelang 0.1.15, the tilelang extra, needs another one")


def test_cli_names_the_extra_where_tilelang_cannot_run(tmp_path):
    if extras.extra_blocker("tilelang") is None:
        pytest.skip("tilelang runs in this environment")
    result = subprocess.run([sys.executable, "-m", "ptxds", "build", "--source", "tilelang", "--out", str(tmp_path / "d")],
                            cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [f"Error: {extras.extra_blocker('tilelang')}"], result.stderr
