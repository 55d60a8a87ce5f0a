"""The tvm source: rows assemble, launch dims equal the launch values TVM's host code
passes to its CUDA runtime, the build is deterministic under a seed, a schedule TVM
cannot lower becomes a build_failed row, and the new ops' references match direct loops."""
from __future__ import annotations

import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem
from dataset_spec.problems import get_op
from helpers import tvm_tensor_cores_or_skip

SMALL = ("softmax/small", "row_sum/small", "conv2d_bias_relu/small", "matmul_fp16/small")


@pytest.fixture(scope="module")
def tvm_rows(tmp_path_factory):
    pytest.importorskip("tvm")
    import os
    os.environ["PTXDS_TVM_CACHE"] = str(tmp_path_factory.mktemp("tvm-cache"))
    from builders.base import BuildOptions
    from builders.tvm import TvmBuilder
    from ptxds.pipeline import build_and_finalize
    builder = TvmBuilder(BuildOptions(archs=["sm_80"], extra={"schedules": 2, "workloads": list(SMALL),
                                                                "tensor_cores": False}))
    items = builder.work_items()
    assert len(items) == len(SMALL)
    return builder, items, {item.key: build_and_finalize(builder, item, False) for item in items}


def test_every_row_assembles_with_tvm_launch_dims(tvm_rows):
    from builders.tvm.lower import runtime_dims
    _, _, rows = tvm_rows
    for records in rows.values():
        built = [r for r in records if r.status == "built"]
        assert len(built) == 2, [(r.name, r.status, r.status_message[:200]) for r in records]
        assert len({r.ptx_hash for r in built}) == 2   # distinct members
        for r in built:
            assert r.resources and r.arch == "sm_80"   # ptxas accepted every entry
            runtime = r.provenance["tvm_runtime_launches"]
            assert len(runtime) == len(r.launches)
            for launch, passed in zip(r.launches, runtime):
                assert f".entry {launch.entry}(" in r.ptx
                assert (launch.grid, launch.block) == runtime_dims(passed)
            names = {b.name for b in r.buffers()}
            assert all(a.buffer in names for launch in r.launches for a in launch.args)


def test_multi_kernel_softmax_uses_scratch(tvm_rows):
    _, _, rows = tvm_rows
    softmax = [r for recs in rows.values() for r in recs if r.group_id == "tvm/softmax/small"]
    multi = [r for r in softmax if len(r.launches) > 1]
    for r in multi:
        assert r.scratch and all(b.role == "scratch" for b in r.scratch)


def test_build_is_deterministic_under_a_seed(tvm_rows):
    from ptxds.pipeline import build_and_finalize
    builder, items, rows = tvm_rows
    item = next(i for i in items if i.group_id == "tvm/row_sum/small")
    again = build_and_finalize(builder, item, False)
    assert [r.kernel_id for r in again] == [r.kernel_id for r in rows[item.key]]
    assert all(r.variant.get("trace") or r.variant["generator"] == "dlight" for r in again)


def test_a_schedule_tvm_cannot_lower_is_a_build_failed_row(monkeypatch):
    pytest.importorskip("tvm")
    import tvm
    from builders.base import BuildOptions
    from builders.tvm import TvmBuilder, schedules
    from builders.tvm.workloads import build_te, WORKLOADS

    def unscheduled(func, target, seed, index, tensor_core_inputs=False, spaces=None):
        # no thread binding: TVM's GPU memory check refuses the program
        return schedules.Schedule("metaschedule", f"raw/{index}", {"generator": "none", "index": index},
                                  tvm.IRModule({"main": func}))

    monkeypatch.setattr(schedules, "candidates", unscheduled)
    builder = TvmBuilder(BuildOptions(archs=["sm_80"], extra={"schedules": 1, "workloads": ["row_sum/small"]}))
    records = builder.build(builder.work_items()[0])
    assert records and all(r.status == "build_failed" for r in records)
    assert "tvm/row_sum/small" in records[0].status_message and len(records[0].status_message) > 40


def test_unknown_workload_is_one_clear_error():
    from builders.tvm.builder import selected_workloads
    with pytest.raises(ValueError, match="no TVM workload matches"):
        selected_workloads(["nope"])


def _naive_conv(x, w, pad):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, k, h, wd))
    for i in range(h):
        for j in range(wd):
            out[:, :, i, j] = np.einsum("ncrs,kcrs->nk", xp[:, :, i:i + r, j:j + s], w)
    return out


def test_conv_and_depthwise_references_match_direct_loops():
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=(2, 3, 6, 5)), rng.normal(size=(4, 3, 3, 3)), rng.normal(size=4)
    conv = Problem("c", "conv2d_bias_relu", [Buffer("X", "float32", x.shape), Buffer("W", "float32", w.shape),
                                             Buffer("bias", "float32", (4,)), Buffer("Y", "float32", (2, 4, 6, 5), "out")],
                   {"padding": 1})
    inputs = {"X": x, "W": w, "bias": b}
    ref = get_op("conv2d_bias_relu").reference(inputs, conv)["Y"]
    np.testing.assert_allclose(ref, np.maximum(_naive_conv(x, w, 1) + b.reshape(1, -1, 1, 1), 0), rtol=1e-12)
    scale = get_op("conv2d_bias_relu").error_scale(inputs, conv)["Y"]
    assert np.all(scale >= np.abs(_naive_conv(x, w, 1) + b.reshape(1, -1, 1, 1)) - 1e-12)
    assert get_op("conv2d_bias_relu").reduction_length(conv) == 27

    dw = rng.normal(size=(3, 1, 3, 3))
    depthwise = Problem("d", "depthwise_conv2d", [Buffer("X", "float32", x.shape), Buffer("W", "float32", dw.shape),
                                                  Buffer("Y", "float32", x.shape, "out")], {"padding": 1})
    ref = get_op("depthwise_conv2d").reference({"X": x, "W": dw}, depthwise)["Y"]
    for ch in range(3):
        np.testing.assert_allclose(ref[:, ch:ch + 1], _naive_conv(x[:, ch:ch + 1], dw[ch:ch + 1], 1), rtol=1e-12)


def test_batch_matmul_and_row_sum_references():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 5, 6))
    bmm = Problem("b", "batch_matmul", [Buffer("A", "float32", a.shape), Buffer("B", "float32", b.shape),
                                        Buffer("C", "float32", (3, 4, 6), "out")])
    ref = get_op("batch_matmul").reference({"A": a, "B": b}, bmm)["C"]
    np.testing.assert_allclose(ref, np.stack([a[i] @ b[i] for i in range(3)]), rtol=1e-12)
    assert get_op("batch_matmul").reduction_length(bmm) == 5
    x = rng.normal(size=(7, 9))
    rs = Problem("r", "row_sum", [Buffer("x", "float32", x.shape), Buffer("out", "float32", (7,), "out")])
    np.testing.assert_allclose(get_op("row_sum").reference({"x": x}, rs)["out"], x.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(get_op("row_sum").error_scale({"x": x}, rs)["out"], np.abs(x).sum(axis=1))
    lo, hi = get_op("row_sum").domain(rs, "x")
    assert 0 < lo < hi <= 3.41e38 / 4 / 9


@pytest.fixture(scope="module")
def tensor_core_rows(tmp_path_factory):
    tvm_tensor_cores_or_skip(tmp_path_factory, "tvm-tc-cache")
    from builders.base import BuildOptions
    from builders.tvm import TvmBuilder
    from ptxds.pipeline import build_and_finalize
    builder = TvmBuilder(BuildOptions(archs=["sm_80"], extra={"tensor_cores": "only",
                                                                "workloads": ["matmul_fp16/small"]}))
    items = builder.work_items()
    # the WMMA item; the mma.sync item beside it is tests/builders/tvm/test_tvm_mma.py's
    assert [i.key for i in items] == ["tvm/matmul_fp16/small/sm_80/tensorcore", "tvm/matmul_fp16/small/sm_80/mma"]
    return build_and_finalize(builder, items[0], False)


def test_tensor_core_members_of_matmul_fp16_build_with_wmma(tensor_core_rows):
    from builders.tvm.lower import runtime_dims
    from builders.tvm.workloads import TENSOR_CORE_SCHEDULES
    from ptx_tools import feature_tags
    assert [r.name.split("_small_")[1] for r in tensor_core_rows] == [key for key, *_ in TENSOR_CORE_SCHEDULES]
    for row in tensor_core_rows:
        assert row.status == "built", row.status_message[:500]
        assert row.group_id == "tvm/matmul_fp16/small" and row.resources
        assert row.variant["tensor_core"] is True and row.variant["intrinsic"].startswith("wmma")
        assert "wmma" in feature_tags(row.ptx) and "wmma.mma.sync" in row.ptx
        # float16 operands, float32 accumulation: the problem the CUDA-core members share
        assert row.problem.params["accumulator"] == "float32"
        assert {b.name: b.dtype for b in row.problem.buffers} == {"A": "float16", "B": "float16", "D": "float16"}
        (launch,), (passed,) = row.launches, row.provenance["tvm_runtime_launches"]
        assert f".entry {launch.entry}(" in row.ptx
        assert (launch.grid, launch.block) == runtime_dims(passed)
        assert launch.dynamic_smem == passed["tirx.use_dyn_shared_memory"] > 0
        assert [a.buffer for a in launch.args] == ["A", "B", "D"]
    assert len({r.ptx_hash for r in tensor_core_rows}) == len(tensor_core_rows)
    # the retiled members launch what their tile says: 256 / (16 x warps x fragments) blocks a side
    for row in tensor_core_rows[1:]:
        t = row.variant["tile"]
        (launch,) = row.launches
        assert sorted(launch.grid[:2]) == sorted((256 // (16 * t["warps_m"] * t["fragments_m"]),
                                                  256 // (16 * t["warps_n"] * t["fragments_n"])))
        assert launch.block == (32, t["warps_m"] * t["warps_n"], 1)


def test_tensor_core_items_leave_cuda_core_keys_alone():
    pytest.importorskip("tvm")
    from builders.base import BuildOptions
    from builders.tvm import TvmBuilder
    plain = TvmBuilder(BuildOptions(archs=["sm_80"], extra={"tensor_cores": False})).work_items()
    full = TvmBuilder(BuildOptions(archs=["sm_80"])).work_items()
    assert "tvm/matmul_fp16/small/sm_80/n10/s0" in [i.key for i in plain]
    assert [i.key for i in full if not i.payload.get("tensor_core")] == [i.key for i in plain]
    extra = {i.key for i in full} - {i.key for i in plain}
    assert extra == {f"tvm/{w}/{s}/sm_80/tensorcore" for w in ("matmul_fp16", "batch_matmul_fp16")
                     for s in ("small", "large")} | {
                        f"tvm/{w}/{s}/sm_80/mma" for w in ("matmul_fp16", "matmul_bf16", "batch_matmul_fp16",
                                                           "conv2d_nhwc_fp16")
                        for s in ("small", "large")}
    with pytest.raises(ValueError, match="none of the selected workloads has tensor-core members"):
        TvmBuilder(BuildOptions(archs=["sm_80"], extra={"tensor_cores": "only", "workloads": ["row_sum"]})).work_items()


def test_a_tvm_that_cannot_tensorize_gives_build_failed_rows_naming_the_fix(monkeypatch):
    pytest.importorskip("tvm")
    from builders.base import BuildOptions
    from builders.tvm import TvmBuilder, schedules
    monkeypatch.setattr(schedules, "tensorize_blocker",
                        lambda: "apache-tvm-ffi 9.9 crashes save_json: install apache-tvm-ffi==0.1.14.post0")
    builder = TvmBuilder(BuildOptions(archs=["sm_80"], extra={"tensor_cores": "only",
                                                                "workloads": ["batch_matmul_fp16/small"]}))
    rows = builder.build(builder.work_items()[0])
    assert rows and all(r.status == "build_failed" and not r.ptx for r in rows)
    assert rows[0].status_message.startswith("tvm/batch_matmul_fp16/small dlight-tc/wmma: apache-tvm-ffi 9.9")
    assert all("apache-tvm-ffi==0.1.14.post0" in r.status_message for r in rows)


@pytest.mark.skip(reason="reproducer: MetaSchedule's cuda-tensorcore design spaces of the float16 matmul fail "
                         "to lower in apache-tvm 0.27.0.post1 (LowerIntrin: 'tvm_access_ptr element type must "
                         "match the source buffer', float16 vs float32); unskip to check a newer wheel")
def test_metaschedule_tensor_core_space_lowers():
    import tvm.s_tir.tensor_intrin  # noqa: F401
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms
    from builders.tvm.lower import lower
    from builders.tvm.schedules import cuda_target, prim_func
    from builders.tvm.workloads import WORKLOADS, build_te
    w = next(w for w in WORKLOADS if w.group_id == "tvm/matmul_fp16/small")
    func, target = prim_func(build_te(w), w.symbol), cuda_target("sm_80")
    generator = ms.space_generator.PostOrderApply(sch_rules="cuda-tensorcore", postprocs="cuda-tensorcore",
                                                  mutator_probs={})
    context = ms.TuneContext(mod=func, target=target, space_generator=generator, num_threads=1, rand_state=1)
    space = context.generate_design_space()[0]
    for seed in range(40):
        sch = s_tir.Schedule(context.mod, seed=seed, debug_mask="none")
        s_tir.Trace(space.trace.insts, {}).apply_to_schedule(sch, remove_postproc=True)
        if all(post.apply(sch) for post in context.space_generator.postprocs):
            assert "mma" in lower(sch.mod, target).cuda
            return
    pytest.fail("no sample passed the postprocessors")


def test_workloads_option_takes_commas_and_repeats_alike():
    """The docs' `--workloads matmul_fp16/small,batch_matmul_fp16/small` picks both groups."""
    from builders.tvm.builder import selected_workloads
    both = ["tvm/matmul_fp16/small", "tvm/rmsnorm/small"]
    assert [w.group_id for w in selected_workloads(["matmul_fp16/small,rmsnorm/small"])] == both
    assert [w.group_id for w in selected_workloads(("matmul_fp16/small", "rmsnorm/small"))] == both
    with pytest.raises(Exception, match="no TVM workload matches"):
        selected_workloads(["matmul_fp16/tiny,nothing"])
