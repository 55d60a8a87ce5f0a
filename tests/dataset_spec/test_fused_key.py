"""One key across sources for functions of networks (dataset_spec/fused.py): the key is what
a problem's float64 reference computes, whatever its buffer names, order or shapes; a
different function gets another; a group several sources state gets one problem that bounds
with the largest error scale; and an Inductor kernel and a TVM task of one model share a key."""
from __future__ import annotations

import numpy as np
import pytest

from dataset_spec.canonical import canonical_problem
from dataset_spec.fused import sources_of, unify
from dataset_spec.model import Arg, Buffer, Distribution, KernelRecord, Launch, Problem, make_kernel_id
from dataset_spec.ops import get_op

NORMAL = Distribution("normal", {"mean": 0.0, "std": 1.0})


def _custom(pid: str, names: tuple, body: str, shape=(4, 8), scale: str = "") -> Problem:
    """A custom problem out = body over inputs named ``names`` (numpy), its reference inside."""
    a, b, out = names
    source = (f"import numpy as np\n\ndef reference(inputs, problem):\n    {a}, {b} = inputs['{a}'], inputs['{b}']\n"
              f"    return {{'{out}': ({body}).reshape(problem.buffer('{out}').shape)}}\n")
    if scale:
        source += (f"\n\ndef reference_error_scale(inputs, problem):\n    {a}, {b} = inputs['{a}'], inputs['{b}']\n"
                   f"    return {{'{out}': ({scale}).reshape(problem.buffer('{out}').shape)}}\n")
    buffers = [Buffer(a, "float16", shape, "in", NORMAL), Buffer(b, "float16", shape, "in", NORMAL),
               Buffer(out, "float16", shape, "out")]
    return Problem(pid, "custom", buffers, {"reference": "reference:reference", "reference_source": source})


def test_names_order_and_shapes_do_not_change_the_key():
    first = _custom("one/k", ("x", "y", "z"), "x - 2 * y")
    # the same function, its inputs named and ordered the other way round, over a flat buffer
    second = _custom("two/t", ("p", "q", "r"), "q - 2 * p", shape=(32,))
    second.buffers = [second.buffers[1], second.buffers[0], second.buffers[2]]
    one, two = canonical_problem(first), canonical_problem(second)
    assert one.problem_id == two.problem_id and one.problem_id.startswith("function/fused/float16/i2o1/N32/")
    # the canonical names follow the function: x and q are the operand that is not doubled
    from dataset_spec.fused import network_function
    assert network_function(first)[1]["x"] == network_function(second)[1]["q"]
    assert network_function(first)[1]["y"] == network_function(second)[1]["p"]


def test_another_function_or_role_has_another_key():
    base = canonical_problem(_custom("a/k", ("x", "y", "z"), "x - 2 * y")).problem_id
    assert canonical_problem(_custom("b/k", ("x", "y", "z"), "x - y")).problem_id != base
    assert canonical_problem(_custom("c/k", ("x", "y", "z"), "x - 2.001 * y")).problem_id != base
    in_place = _custom("d/k", ("x", "y", "z"), "x - 2 * y")
    in_place.params["reference_source"] = in_place.params["reference_source"].replace("'z'", "'x'")
    in_place.buffers = [Buffer("x", "float16", (4, 8), "inout", NORMAL), in_place.buffers[1]]
    assert canonical_problem(in_place).problem_id != base   # written in place: another storage contract


def test_unified_problem_keeps_the_first_values_and_the_largest_error_scale():
    tight = canonical_problem(_custom("a/k", ("x", "y", "z"), "x + y", scale="np.abs(x) + np.abs(y)"))
    loose = canonical_problem(_custom("b/k", ("p", "q", "r"), "p + q", scale="100 * (np.abs(p) + np.abs(q))"))
    unified = unify([tight, loose])
    assert unified.problem_id == tight.problem_id and len(sources_of(unified)) == 2
    assert unify([loose, tight]).digest() == unified.digest()   # the order of the rows does not matter
    rng = np.random.default_rng(0)
    inputs = {"in0": rng.standard_normal((4, 8)), "in1": rng.standard_normal((4, 8))}
    op = get_op("custom")
    reference = op.reference(inputs, unified)
    np.testing.assert_allclose(reference["out0"], inputs["in0"] + inputs["in1"])
    np.testing.assert_allclose(op.scales(inputs, unified, reference)["out0"],
                               100 * (np.abs(inputs["in0"]) + np.abs(inputs["in1"])))


def _row(problem: Problem, source: str, model: str) -> KernelRecord:
    launch = Launch("k", (1, 1, 1), (32, 1, 1), [Arg.buf(b.name) for b in problem.buffers])
    ptx_hash = f"{source}-{problem.problem_id}"
    return KernelRecord(group_id=f"{source}/{problem.problem_id}", source=source, variant={}, name="k",
                        arch="sm_80", ptx="", launches=[launch], problem=problem, build_key=ptx_hash,
                        ptx_hash=ptx_hash, kernel_id=make_kernel_id(ptx_hash, [launch], problem, "sm_80"),
                        provenance={"model": model})


@pytest.fixture(scope="module")
def layer_norms(tmp_path_factory):
    """(Inductor's, TVM's) problem of GPT-2's first LayerNorm at one size."""
    pytest.importorskip("tvm")
    import json

    from builders.inductor.capture import capture_models
    from builders.tvm_models.problem import task_problem
    from builders.tvm_models.tasks import model_tasks
    model = "gpt2_block:float16:1:16"
    root = tmp_path_factory.mktemp("capture")
    [summary] = capture_models(model, root)
    kernel = next(k for k in summary["kernels"] if k.startswith("triton_per_fused_native_layer_norm"))
    folder = root / summary["model"] / kernel
    call = json.loads((folder / "call.json").read_text())
    call["problem"]["params"]["reference_source"] = (folder / "reference.py").read_text()
    inductor = Problem.from_json(json.dumps(call["problem"]))
    found = model_tasks(model)
    tvm = task_problem(found.model, next(t for t in found.tasks if t.name == "layer_norm"))
    return inductor, tvm, summary["model"]


def test_inductor_kernel_and_tvm_task_of_one_model_share_a_key(layer_norms):
    inductor, tvm, model = layer_norms
    assert canonical_problem(inductor).problem_id == canonical_problem(tvm).problem_id
    from ptxds.merge import merge_rows
    rows, summary = merge_rows([[_row(inductor, "inductor", model)], [_row(tvm, "tvm-models", model)]])
    [(group, sources)] = summary.cross_source_groups.items()
    assert dict(sources) == {"inductor": 1, "tvm-models": 1}
    assert len({r.problem.digest() for r in rows}) == 1   # one problem judges both
    assert all(a.buffer in {"in0", "in1", "in2", "out0"} for r in rows for a in r.launches[0].args)
    assert {r.provenance["source_group_id"] for r in rows} == {f"inductor/{inductor.problem_id}",
                                                               f"tvm-models/{tvm.problem_id}"}
    assert all(r.group_id == group for r in rows)


def test_merged_layer_norm_bound_admits_both_sources_arithmetic(layer_norms):
    """TVM rounds LayerNorm's normalised value to float16 before the affine step, Inductor
    keeps float32 to the end: the group's bound is the larger of the two per element."""
    inductor, tvm, _ = layer_norms
    unified = unify([canonical_problem(inductor), canonical_problem(tvm)])
    rng = np.random.default_rng(1)
    inputs = {b.name: rng.standard_normal(b.shape) for b in unified.buffers if b.role == "in"}
    op = get_op("custom")
    reference = op.reference(inputs, unified)["out0"]
    scale = op.scales(inputs, unified, {"out0": reference})["out0"]
    for single in (canonical_problem(inductor), canonical_problem(tvm)):
        np.testing.assert_allclose(op.reference(inputs, single)["out0"], reference, rtol=1e-12, atol=1e-12)
        assert (scale >= op.scales(inputs, single, {"out0": reference})["out0"]).all()


def test_a_draw_one_source_asks_for_holds_for_the_merged_function():
    """A batch norm's running variance is drawn as magnitudes by one source's problem and
    its graph tests for NaN: the merged problem keeps both under its canonical names, so
    no trial holds a negative variance whose NaN the sources treat differently."""
    first = _custom("a/k", ("x", "var", "z"), "x / np.sqrt(var + 1e-5)")
    first.params.update(nonnegative_inputs=["var"], stress_specials=True)
    second = _custom("b/t", ("p", "q", "r"), "p / np.sqrt(q + 1e-5)")
    one, two = canonical_problem(first), canonical_problem(second)
    assert one.problem_id == two.problem_id
    from dataset_spec.fused import network_function
    canonical_var = network_function(first)[1]["var"]
    for merged in (unify([one, two]), unify([two, one])):
        assert merged.params["nonnegative_inputs"] == [canonical_var]
        assert merged.params["stress_specials"] is True
