"""The tvm source: rows assemble, launch dims equal the launch values TVM's host code
passes to its CUDA runtime, the build is deterministic under a seed, a schedule TVM
cannot lower becomes a build_failed row, and the new ops' references match direct loops."""
from __future__ import annotations

import numpy as np
import pytest

from dataset_spec.model import Buffer, Problem
from dataset_spec.problems import get_op

SMALL = ("softmax/small", "row_sum/small", "conv2d_bias_relu/small", "matmul_fp16/small")


@pytest.fixture(scope="module")
def tvm_rows(tmp_path_factory):
    pytest.importorskip("tvm")
    import os
    os.environ["PTXDS_TVM_CACHE"] = str(tmp_path_factory.mktemp("tvm-cache"))
    from builders.base import BuildOptions
    from builders.tvm import TvmBuilder
    from ptxds.pipeline import build_and_finalize
    builder = TvmBuilder(BuildOptions(archs=["sm_80"], extra={"schedules": 2, "workloads": list(SMALL)}))
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
