"""The tvm source's mma.sync tensor-core members (builders/tvm/mma.py): every member of the
float16 and bfloat16 matmul, the float16 batch_matmul and NHWC conv builds for sm_80 and sm_90a with
mma.sync, ldmatrix and cp.async in its PTX, keeps its fragments in registers, and launches
what its tile says; the bfloat16 intrinsics are TVM's float16 ones with the dtype swapped."""
from __future__ import annotations

import pytest

from helpers import tvm_tensor_cores_or_skip

# (group, arch): every MMA_CONFIGS member fits the small matmul; the small batch_matmul
# (N = 128) and conv (implicit GEMM 512 x 128 x 576) leave out the tiles wider than 128
BUILT = (("matmul_fp16/small", "sm_80"), ("matmul_fp16/small", "sm_90a"),
         ("matmul_bf16/small", "sm_80"), ("matmul_bf16/small", "sm_90a"),
         ("batch_matmul_fp16/small", "sm_80"), ("conv2d_nhwc_fp16/small", "sm_80"))
# per group: batch, and the GEMM's M, N, K
GEMM = {"matmul_fp16/small": (1, 256, 256, 256), "matmul_bf16/small": (1, 256, 256, 256),
        "batch_matmul_fp16/small": (4, 128, 128, 128), "conv2d_nhwc_fp16/small": (1, 2 * 16 * 16, 128, 9 * 64)}


@pytest.fixture(scope="module")
def mma_rows(tmp_path_factory):
    tvm_tensor_cores_or_skip(tmp_path_factory, "tvm-mma-cache")
    from builders.base import BuildOptions
    from builders.tvm import TvmBuilder
    from ptxds.pipeline import build_and_finalize
    rows = {}
    for group, arch in BUILT:
        builder = TvmBuilder(BuildOptions(archs=[arch], extra={"tensor_cores": "only", "workloads": [group]}))
        (item,) = [i for i in builder.work_items() if i.payload.get("mma")]
        assert item.key == f"tvm/{group}/{arch}/mma"
        rows[group, arch] = build_and_finalize(builder, item, False)
    return rows


def test_every_mma_member_builds_with_mma_sync_ldmatrix_and_cp_async(mma_rows):
    from builders.tvm.lower import runtime_dims
    from builders.base import shared_memory_misfit
    from builders.tvm.mma import MMA_CONFIGS
    from ptx_tools import feature_tags
    too_large = []
    for (group, arch), rows in mma_rows.items():
        dtype = "bfloat16" if "bf16" in group else "float16"
        short = {"float16": "f16", "bfloat16": "bf16"}[dtype]
        batch, m, n, k = GEMM[group]
        # a tile must divide M and N, and K into at least as many chunks as pipeline stages
        expected = [c for c in MMA_CONFIGS if n % c.block_n == 0 and m % c.block_m == 0
                    and k % c.block_k == 0 and k // c.block_k >= c.stages]
        assert len(expected) >= 6
        assert [r.name.split("_small_")[1] for r in rows] == [c.key for c in expected]
        for row, config in zip(rows, expected):
            misfit = shared_memory_misfit(arch, max(launch.dynamic_smem for launch in row.launches))
            if misfit:
                assert row.status == "not_applicable" and misfit in row.status_message
                too_large.append((group, arch, config.key))
            else:
                assert row.status == "built", row.status_message[:800]
            assert row.arch == arch and row.group_id == f"tvm/{group}"
            assert f"mma.sync.aligned.m16n8k16.row.col.f32.{short}.{short}.f32" in row.ptx
            assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in row.ptx
            # B row-major (K x N) loads transposed; a conv's filter (N x K) does not
            assert ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in row.ptx) != group.startswith("conv")
            assert {"mma.sync", "ldmatrix", "cp.async"} <= set(feature_tags(row.ptx))
            assert row.variant["tensor_core"] is True
            assert row.variant["intrinsic"] == (f"mma.sync m16n8k16 {short}.{short}.f32 "
                                                f"(ldmatrix, cp.async {config.stages} stages)")
            assert row.variant["block_tile"] == [config.block_m, config.block_n, config.block_k]
            assert row.problem.params["accumulator"] == "float32"
            assert {b.dtype for b in row.problem.buffers} == {dtype}
            # the fragments live in registers: no stack frame, no spills
            (res,) = row.resources
            assert res.stack == 0 and res.spill_stores == 0 and res.spill_loads == 0, res
            (launch,), (passed,) = row.launches, row.provenance["tvm_runtime_launches"]
            assert (launch.grid, launch.block) == runtime_dims(passed)
            assert launch.dynamic_smem == passed["tirx.use_dyn_shared_memory"] > 0
            assert launch.grid == ((m // config.block_m) * (n // config.block_n), batch, 1)
            assert launch.block == (32, config.warps, 1)
            # the stages' A and B tiles (rows padded by 8 elements) fit the dynamic shared memory
            staged = 2 * config.stages * (config.block_m * (config.block_k + 8) + config.block_k * (config.block_n + 8))
            assert launch.dynamic_smem >= staged
            assert sorted(a.buffer for a in launch.args) == sorted(b.name for b in row.problem.buffers)
        assert len({r.ptx_hash for r in rows}) == len(rows)
    # every tile of MMA_CONFIGS fits sm_80's 163 KiB (the largest, 256x128x64 in 3 stages, 159 KiB)
    assert too_large == []


def test_bf16_intrinsics_are_tvms_float16_ones_with_the_dtype_swapped():
    """The constructors that register the bfloat16 ldmatrix and mma intrinsics give, for
    float16, exactly the intrinsics the TVM wheel registers."""
    pytest.importorskip("tvm")
    import tvm
    import tvm.s_tir.tensor_intrin  # noqa: F401
    from tvm.s_tir import TensorIntrin
    from tvm.s_tir.tensor_intrin import cuda as intrin
    from builders.tvm import mma
    pairs = ((intrin.LDMATRIX_f16_A_DYN_INTRIN, mma._ldmatrix_intrin("float16", "A")),
             (intrin.LDMATRIX_f16_B_DYN_INTRIN, mma._ldmatrix_intrin("float16", "B")),
             (intrin.MMA_f16f16f32_INTRIN, mma._mma_intrin("float16")))
    for name, (desc, impl) in pairs:
        registered = TensorIntrin.get(name)
        for theirs, ours in ((registered.desc, desc), (registered.impl, impl)):
            tvm.ir.assert_structural_equal(theirs.with_attr("global_symbol", "f"), ours.with_attr("global_symbol", "f"))
    names = mma.register_intrinsics("bfloat16")
    desc = TensorIntrin.get(names["compute"]).desc
    script = desc.script()
    assert script.count('"bfloat16", scope="warp"') == 2 and '"float16"' not in script


def test_tiles_that_do_not_fit_are_left_out_and_bad_tiles_refused():
    from builders.tvm.mma import MMA_CONFIGS, MmaConfig, configs_for
    from builders.tvm.workloads import WORKLOADS
    by_id = {w.group_id: w for w in WORKLOADS}
    assert configs_for(by_id["tvm/matmul_fp16/large"]) == list(MMA_CONFIGS)
    assert configs_for(by_id["tvm/matmul_bf16/small"]) == list(MMA_CONFIGS)
    batch_small = configs_for(by_id["tvm/batch_matmul_fp16/small"])
    assert batch_small and all(c.block_n <= 128 and c.block_m <= 128 for c in batch_small)
    assert configs_for(by_id["tvm/matmul_fp32/small"]) == []
    assert "fewer than 4 pipeline stages" in MmaConfig(64, 64, 64, 32, 32, 4).unfit(256, 256, 128)
    with pytest.raises(ValueError, match="warp tile must divide the block tile"):
        MmaConfig(128, 128, 32, 48, 64, 3).check()
    with pytest.raises(ValueError, match="at least 2 stages"):
        MmaConfig(128, 128, 32, 64, 64, 1).check()


def test_a_tvm_that_cannot_tensorize_gives_build_failed_mma_rows_naming_the_fix(monkeypatch):
    pytest.importorskip("tvm")
    from builders.base import BuildOptions
    from builders.tvm import TvmBuilder, schedules
    monkeypatch.setattr(schedules, "tensorize_blocker",
                        lambda: "apache-tvm-ffi 9.9 crashes save_json: install apache-tvm-ffi==0.1.14.post0")
    builder = TvmBuilder(BuildOptions(archs=["sm_80"], extra={"tensor_cores": "only",
                                                                "workloads": ["matmul_bf16/small"]}))
    (item,) = builder.work_items()
    rows = builder.build(item)
    assert rows and all(r.status == "build_failed" and not r.ptx for r in rows)
    assert rows[0].status_message.startswith("tvm/matmul_bf16/small mma/b128x128x32/w64x64/s3: apache-tvm-ffi 9.9")


def test_conv2d_nhwc_problem_is_the_te_programs_function():
    """The registry's conv2d_fprop reference, on the workload's Problem, equals the TE
    program's formula (cross-correlation over the zero-padded NHWC input, KRSC filter)
    evaluated by direct loops, so the mma members are judged against what they compute."""
    import numpy as np
    from dataset_spec.problems import get_op
    from builders.tvm.mma import configs_for, workload_dims
    from builders.tvm.workloads import Workload, problem
    w = Workload("conv2d_nhwc_fp16", "tiny", "conv2d_fprop", (2, 5, 6, 3, 4, 3))
    prob = problem(w)
    rng = np.random.default_rng(3)
    x, filt = rng.normal(size=(2, 5, 6, 3)), rng.normal(size=(4, 3, 3, 3))
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    direct = np.zeros((2, 5, 6, 4))
    for p in range(5):
        for q in range(6):
            window = padded[:, p:p + 3, q:q + 3, :]                     # n, r, s, c
            direct[:, p, q, :] = np.einsum("nrsc,krsc->nk", window, filt)
    ref = get_op(prob.op).reference({"x": x, "w": filt}, prob)["y"]
    np.testing.assert_allclose(ref, direct, rtol=1e-12, atol=1e-12)
    assert workload_dims(w) == (2 * 5 * 6, 4, 27) and configs_for(w) == []   # no tile divides it


def test_every_warp_buffer_is_lowered_to_registers(monkeypatch):
    """TVM 0.27's LowerWarpMemory lowers only the first warp buffer of a sequence: without
    lower._lower_every_warp_buffer the A and B fragments stay whole-warp arrays (32 lanes x 8
    elements x 4 fragments x 2 pipeline copies), with it each thread holds its own 8 x 4 x 2.
    If a newer wheel lowers them all by itself, the first half fails: drop the workaround."""
    pytest.importorskip("tvm")
    import re
    from builders.tvm import lower as lowering
    from builders.tvm.mma import MMA_CONFIGS, mma_schedule
    from builders.tvm.schedules import cuda_target, prim_func
    from builders.tvm.workloads import WORKLOADS, build_te
    w = next(w for w in WORKLOADS if w.group_id == "tvm/matmul_fp16/small")
    sch = mma_schedule(prim_func(build_te(w), w.symbol), w, MMA_CONFIGS[0].key)
    assert not sch.error, sch.error

    def fragments(cuda):
        return sorted(re.findall(r"half ([AB])_shared_dyn_warp_ptr\[(\d+)\]", cuda))

    fixed = lowering.lower(sch.mod, cuda_target("sm_80"), sch.pass_config).cuda
    assert fragments(fixed) == [("A", "64"), ("B", "64")]
    assert "__builtin_assume(threadIdx.x < 32);" in fixed
    monkeypatch.setattr(lowering, "_lower_every_warp_buffer", lambda device_mod, warp_buffers: device_mod)
    assert fragments(lowering.lower(sch.mod, cuda_target("sm_80"), sch.pass_config).cuda) == [("A", "2048"),
                                                                                              ("B", "2048")]


def test_shared_memory_beyond_the_arch_limit_is_named():
    """A member whose dynamic shared memory exceeds what one block of the arch may opt in to
    (the conv's 256x128x64 three-stage tile on sm_80) is not runnable there: the row says why."""
    from builders.base import shared_memory_misfit
    assert shared_memory_misfit("sm_80", 159 * 1024) == ""
    assert shared_memory_misfit("sm_90a", 163.5 * 1024) == ""
    message = shared_memory_misfit("sm_80", 163.5 * 1024)
    assert "163.5 KiB" in message and "sm_80 allows 163 KiB" in message
