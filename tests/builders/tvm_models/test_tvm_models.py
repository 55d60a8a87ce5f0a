"""The tvm-models source: a small model's TVM tasks built end to end on the CPU (every group
has at least two distinct members that ptxas accepts, launches name the problem's buffers,
rows name the model, layers and ATen ops), and each task's float64 reference evaluates on
the verifier's trials and bounds TVM's own CPU build of the same PrimFunc."""
from __future__ import annotations

import numpy as np
import pytest

MODEL = "gpt2_block:float32:1:16"
TASKS = ("layer_norm", "softmax", "gelu")   # a row reduction, a multi-block reduction, an elementwise chain


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    pytest.importorskip("tvm")
    import os
    os.environ["PTXDS_TVM_CACHE"] = str(tmp_path_factory.mktemp("tvm-cache"))
    from builders.base import BuildOptions
    from builders.tvm_models import TvmModelsBuilder
    from ptxds.pipeline import build_and_finalize
    builder = TvmModelsBuilder(BuildOptions(archs=["sm_80"], extra={"models": [MODEL], "schedules": 2}))
    items = [i for i in builder.work_items() if any(word in i.payload["task"] for word in TASKS)]
    assert len(items) == len(TASKS), [i.payload["task"] for i in builder.work_items()]
    return {item.payload["task"]: build_and_finalize(builder, item, False) for item in items}


def test_every_group_has_two_distinct_members_that_assemble(built):
    for task, records in built.items():
        members = [r for r in records if r.status == "built"]
        assert len(members) >= 2, [(r.name, r.status, r.status_message[:200]) for r in records]
        assert len({r.ptx_hash for r in members}) == len(members)
        assert {r.variant["generator"] for r in members} == {"dlight", "metaschedule"}
        for r in members:
            assert r.resources and r.arch == "sm_80"   # ptxas accepted every entry
            assert r.group_id == f"tvm-models/gpt2_block-float32-b1s16/{task}"
            names = {b.name for b in r.buffers()}
            assert all(a.buffer in names for launch in r.launches for a in launch.args)
            assert len({r.problem.digest() for r in records}) == 1


def test_rows_name_the_model_its_layers_and_aten_ops(built):
    layer_norm = next(records for task, records in built.items() if "layer_norm" in task)[0]
    assert layer_norm.provenance["model"] == "gpt2_block-float32-b1s16"
    assert layer_norm.provenance["aten_ops"] == ["aten.native_layer_norm.default"]
    assert set(layer_norm.provenance["layers"]) == {"ln_1", "ln_2"}   # one task, called twice
    assert layer_norm.provenance["calls"] == 2
    gelu = next(records for task, records in built.items() if "gelu" in task)[0]
    assert "aten.gelu.default" in gelu.provenance["aten_ops"]


def test_reference_evaluates_on_every_trial(built):
    from dataset_spec.ops import get_op
    from dataset_spec.trials import trial_count
    from verify.trials.inputs import make_trial_inputs
    op = get_op("custom")
    for records in built.values():
        problem = records[0].problem
        for trial in range(trial_count(problem)):
            inputs = make_trial_inputs(problem, records[0].group_id, trial)
            reference = op.reference(inputs.values, problem)
            bounds = op.bounds(inputs.values, problem, reference)
            assert set(reference) == {b.name for b in problem.buffers if b.role == "out"}
            for name, value in reference.items():
                assert value.shape == problem.buffer(name).shape
                assert np.isfinite(bounds[name][np.isfinite(value)]).all()


def test_reference_bounds_tvms_own_cpu_build_of_the_task(built):
    """The reference states the PrimFunc: TVM's LLVM build of the same function, in its own
    dtypes, lies within the bound on a verifier trial, and a 1% error would not."""
    import tvm

    from builders.tvm_models.tasks import model_tasks
    from dataset_spec.ops import get_op
    from verify.trials.inputs import make_trial_inputs
    op = get_op("custom")
    tasks = {t.name: t for t in model_tasks(MODEL).tasks}
    for name, records in built.items():
        problem = records[0].problem
        inputs = make_trial_inputs(problem, records[0].group_id, 0).values
        reference = op.reference(inputs, problem)
        bounds = op.bounds(inputs, problem, reference)
        executable = tvm.compile(tvm.IRModule({"main": tasks[name].func.with_attr("global_symbol", "main")}),
                                 target="llvm")
        args = [tvm.runtime.tensor(np.asarray(inputs[b.name] if b.role == "in" else np.zeros(b.shape))
                                   .astype(b.dtype)) for b in problem.buffers]
        executable["main"](*args)
        for b, arg in zip(problem.buffers, args):
            if b.role == "out":
                got = arg.numpy().astype(np.float64)
                assert (np.abs(got - reference[b.name]) <= bounds[b.name]).all(), name
                assert (np.abs(got * 1.01 - reference[b.name]) > bounds[b.name]).any(), name
