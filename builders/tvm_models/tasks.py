"""The tasks of one model block as MetaSchedule's task extraction finds them: Relax's
LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps and FuseTIR over the imported
block (frontend.py), then every PrimFunc of the module, structurally equal ones once (as
``ms.relax_integration.extract_tasks`` does), each with the region of the exported ATen
graph it computes (its ops in graph order and the layers they belong to).

A task is left out, with its reason in ``ModelTasks.skipped``, when it only rearranges
weights (TVM lifts such transforms out of the model), when it copies its input unchanged
(a reshape, a view at run time), when its float64 reference cannot be stated
(program.UnsupportedTir), or when an integer input has no range to draw from
(problem.input_inits).
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

from dataset_spec.errors import PtxdsError


class ModelImportError(PtxdsError, ValueError):
    """TVM's frontend or fusion passes reject a model."""


@dataclass
class Task:
    """One fused TIR function of a model."""
    name: str
    func: object                    # tvm.tirx.PrimFunc (unscheduled), global_symbol set
    program: dict                   # program.tir_program(func)
    aten_ops: list                  # ATen ops of its region, in graph order, each once
    layers: list                    # module paths the region belongs to
    nodes: list                     # FX node names of the region
    roles: dict                     # input buffer -> its role in the model (weight:<name>, activation, ...)
    calls: int = 1                  # call sites in the model (structurally equal tasks counted once)


@dataclass
class ModelTasks:
    model: str
    tasks: list
    skipped: dict = field(default_factory=dict)     # task name -> reason
    seconds: float = 0.0


LEGALIZE_PASSES = ("LegalizeOps", "AnnotateTIROpPattern", "FoldConstant")


def fuse(module):
    """(module after LEGALIZE_PASSES; after FuseOps; after FuseTIR): the passes of
    MetaSchedule's task extraction over a Relax model."""
    import tvm
    from tvm import relax
    legalized = tvm.transform.Sequential([getattr(relax.transform, name)() for name in LEGALIZE_PASSES])(module)
    fused = relax.transform.FuseOps()(legalized)
    final = tvm.transform.Sequential([relax.transform.FuseTIR(), relax.transform.DeadCodeElimination()])(fused)
    return legalized, fused, final


def _bindings(function):
    """(var name, value) of every binding of a Relax function, in order."""
    out = []
    for block in function.body.blocks:
        for binding in block.bindings:
            out.append((str(binding.var.name), binding.value))
    return out


def _callee(value) -> str:
    """The global function a Relax call binding calls (call_tir's PrimFunc, or a fused
    function), or ''."""
    from tvm import relax
    if not isinstance(value, relax.Call):
        return ""
    op = getattr(value.op, "name", "")
    if op == "relax.call_tir":
        return str(value.args[0].name_hint)
    if isinstance(value.op, relax.GlobalVar):
        return str(value.op.name_hint)
    return ""


def _param_sources(value) -> list:
    """The Relax arguments a call passes to its callee's parameters, in order."""
    from tvm import relax
    op = getattr(value.op, "name", "")
    if op == "relax.call_tir":
        args = value.args[1]
        return list(args.fields) if isinstance(args, relax.Tuple) else [args]
    return list(value.args)


def _signature(value) -> tuple:
    return (_callee(value), tuple(str(getattr(a, "name", "")) for a in _param_sources(value)))


def regions(legalized, fused, origins: dict) -> dict:
    """{PrimFunc name after FuseTIR: (FX node names of its region, [the main-function
    arguments of each call])}. FuseOps keeps the names of the bindings it moves into a fused
    function but not of its output binding, and renames the calls it writes in main: a
    binding is found in the unfused module by what it calls with which arguments."""
    from tvm import relax
    before = {}
    for name, value in _bindings(legalized["main"]):
        if _callee(value):
            before.setdefault(_signature(value), origins.get(name))
    inner = {}
    for gv, function in fused.functions.items():
        if isinstance(function, relax.Function) and function.attrs and "Primitive" in function.attrs:
            inner[str(gv.name_hint)] = [before.get(_signature(value)) for _, value in _bindings(function)]
    found: dict = {}
    for name, value in _bindings(fused["main"]):
        callee = _callee(value)
        if not callee:
            continue
        nodes = inner.get(callee, [origins.get(name)])
        entry = found.setdefault(callee, ([], []))
        entry[0].extend(n for n in nodes if n and n not in entry[0])
        entry[1].append([str(getattr(a, "name", "")) for a in _param_sources(value)])
    return found


def _copies_unchanged(program: dict) -> bool:
    """Whether the task's one output is its one input in the same storage order."""
    import numpy as np
    inputs = [p for p in program["params"] if p not in program["outputs"]]
    if len(inputs) != 1 or len(program["outputs"]) != 1:
        return False
    source, target = program["buffers"][inputs[0]], program["buffers"][program["outputs"][0]]
    if source["dtype"] != target["dtype"] or int(np.prod(source["shape"])) != int(np.prod(target["shape"])):
        return False
    from .reference import evaluate_program
    count = int(np.prod(source["shape"]))  # signed, distinct values: a relu is no copy
    numbered = ((np.arange(count, dtype=np.float64) - count // 2) * 1.5).reshape(source["shape"])
    out = evaluate_program(program, {inputs[0]: numbered})[program["outputs"][0]]
    return bool((out.reshape(-1) == numbered.reshape(-1)).all())


def extract_tasks(spec) -> ModelTasks:
    """The tasks of ``spec``'s block (a models.ModelSpec)."""
    import tvm
    from tvm_ffi import structural_equal

    from .frontend import import_block
    from .problem import TaskProblemError, input_inits
    from .program import UnsupportedTir, tir_program

    start = time.time()
    try:
        imported = import_block(spec)
        legalized, fused, final = fuse(imported.module)
    except Exception as exc:  # TVM raises its own error types
        first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise ModelImportError(f"TVM cannot import model {spec.name}: {first[:300]}",
                               "leave it out of --models (TVM's torch frontend lacks what it needs)") from None
    found = regions(legalized, fused, imported.origins)
    main_params = {str(p.name): imported.input_roles.get(str(p.name), "activation")
                   for p in fused["main"].params}
    tasks, skipped, seen = [], {}, []
    for gv, func in final.functions.items():
        if not isinstance(func, tvm.tirx.PrimFunc):
            continue
        name = str(gv.name_hint)
        nodes, calls = found.get(name, ([], []))
        duplicate = next((t for t in seen if structural_equal(t.func, func)), None)
        if duplicate is not None:
            duplicate.calls += max(1, len(calls))
            duplicate.nodes.extend(n for n in nodes if n not in duplicate.nodes)
            continue
        try:
            program = tir_program(func)
        except UnsupportedTir as exc:
            skipped[name] = f"its float64 reference cannot be stated: {exc}"
            continue
        roles = {}
        inputs = [p for p in program["params"] if p not in program["outputs"]]
        for call in calls[:1]:
            for param, arg in zip(inputs, call):
                roles[param] = main_params.get(arg, "activation")
        task = Task(name, func.with_attr("global_symbol", name), program, [], [], list(nodes),
                    {p: roles.get(p, "activation") for p in inputs}, max(1, len(calls)))
        seen.append(task)
        if inputs and all(role.startswith("weight:") for role in task.roles.values()):
            skipped[name] = "it only rearranges weights (TVM transforms parameters once, outside the model's run)"
            continue
        if _copies_unchanged(program):
            skipped[name] = "it copies its input unchanged (a reshape: a view at run time)"
            continue
        try:
            input_inits(task)
        except TaskProblemError as exc:
            skipped[name] = str(exc)
            continue
        tasks.append(task)
    order = {n: i for i, n in enumerate(imported.nodes)}
    for task in tasks:
        task.nodes = sorted(set(task.nodes), key=lambda n: order.get(n, len(order)))
        task.aten_ops = list(dict.fromkeys(imported.nodes[n]["target"] for n in task.nodes if n in imported.nodes))
        task.layers = sorted({imported.nodes[n]["layer"] for n in task.nodes if n in imported.nodes} - {""})
    return ModelTasks(spec.name, tasks, skipped, round(time.time() - start, 1))


@functools.lru_cache(maxsize=4)
def model_tasks(model: str) -> ModelTasks:
    """``extract_tasks`` of a model named as ``ModelSpec.parse`` reads it, once a process."""
    from builders.inductor.models import ModelSpec
    return extract_tasks(ModelSpec.parse(model))
