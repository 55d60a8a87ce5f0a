"""TVM members of captured Inductor kernels (``ptxds build --source tvm-models
--inductor-capture DIR``): each kernel folder's ``graph(...)`` (its post-grad FX subgraph,
reference.py) is exported as a module of the kernel's own dtypes and fused by TVM as a model
block is (frontend.py, tasks.py). When TVM makes exactly one computing task of it whose inputs
and outputs are the kernel's buffers (tasks that copy a buffer unchanged are views), that
task's schedules become members of the kernel's function: their rows state the kernel's own
buffers, bind each TIR parameter to one of them, and carry the task's own float64 reference
and error bound (reference_runtime.py) under the kernel's buffer names, so ``ptxds merge``
keys both sources' rows alike (dataset_spec/fused.py).

Inductor writes some epilogues in place (role ``inout``); TVM writes out of place. In a
pointwise kernel the TVM member's input and output parameter are both bound to the inout
buffer (each element is read, then written, by the thread that computes it); in-place
buffers of other kernels are left out. Every kernel left out has its reason
(``KernelSkipped``)."""
from __future__ import annotations

import functools
import json
import types
from dataclasses import dataclass
from pathlib import Path

from dataset_spec.model import Problem

TORCH_DTYPES = ("float16", "bfloat16", "float32", "float64", "int64", "int32", "int8", "uint8", "bool")


class KernelSkipped(Exception):
    """A captured kernel TVM does not compute as one task of its own buffers (the reason)."""


@dataclass
class KernelTask:
    """One captured Inductor kernel and the TVM task that computes its function."""
    model: str                  # the capture's model folder (gpt2-float16-b4s256)
    kernel: str                 # Inductor's kernel name
    task: object                # tasks.Task (name: the kernel's; func: the fused PrimFunc)
    problem: Problem            # the TVM rows' problem: the kernel's buffers, the task's reference
    bindings: dict              # TIR parameter -> the kernel's buffer
    heuristic: str


def _reference_module(folder: Path):
    import torch
    module = types.ModuleType("inductor_reference")
    exec(compile((folder / "reference.py").read_text(), str(folder / "reference.py"), "exec"), module.__dict__)
    module.device = lambda *args, **kwargs: torch.device("cpu")  # the graph's factories name the GPU
    return module


def storage_order(size, stride):
    """The dims of a dense view in storage order (outermost first: channels-last NCHW is
    [0, 2, 3, 1]), or None when the view is not a permutation of dense storage."""
    order = sorted(range(len(size)), key=lambda d: (-int(stride[d]), d))
    step = 1
    for d in reversed(order):
        if int(size[d]) != 1 and int(stride[d]) != step:
            return None
        step *= int(size[d])
    return order


def export_kernel(module, problem: Problem):
    """torch.export of ``module.graph`` over the kernel's buffers in their own dtypes: a
    contiguous input is its buffer reshaped, another one a strided view of its storage.
    Half-precision inputs are computed in float32 and outputs rounded to their buffer's
    dtype once, as PyTorch's opmath and Inductor's kernels do (the graph's own casts still
    round): in float16 TVM would hold the graph's constants (GELU's 0.044715) in float16,
    another function than the graph's."""
    import torch
    wide = (torch.float16, torch.bfloat16)
    out_dtypes = [getattr(torch, problem.buffer(name).dtype) for name in module.OUTPUTS]
    inputs = []
    for name, (size, stride, _) in module.INPUTS.items():
        buffer = problem.buffer(name)
        order = storage_order(size, stride) if buffer.numel == int(torch.Size(size).numel()) else None
        inputs.append((buffer, list(size), list(stride), order))
    out_orders = []
    for name, (size, stride, numel) in module.OUTPUTS.items():
        order = storage_order(size, stride)
        if order is None or int(torch.Size(size).numel()) != int(numel):
            raise KernelSkipped(f"output {name} is a strided view of its storage")
        out_orders.append(order)

    def view(b, size, stride, order):
        if order is None:
            return torch.as_strided(b.reshape(-1), size, stride)
        inverse = sorted(range(len(order)), key=order.__getitem__)
        return b.reshape([size[d] for d in order]).permute(inverse)

    class KernelGraph(torch.nn.Module):
        def forward(self, *buffers):
            views = [view(b, *layout) for b, (_, *layout) in zip(buffers, inputs)]
            out = module.graph(*[v.float() if v.dtype in wide else v for v in views])
            out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            out = [o.to(d) if o.is_floating_point() and o.dtype != d else o for o, d in zip(out, out_dtypes)]
            return tuple(o.permute(order) for o, order in zip(out, out_orders))  # storage order

    args = tuple(torch.zeros(b.shape, dtype=getattr(torch, b.dtype if b.dtype in TORCH_DTYPES else "float32"))
                 for b, *_ in inputs)
    with torch.no_grad():
        program = torch.export.export(KernelGraph(), args)
    return program.run_decompositions()


def _one_task(final):
    """(PrimFunc name, [main parameter index per input], [output index per task output]) of
    the one computing call of a fused Relax main; raises KernelSkipped otherwise."""
    import tvm
    from tvm import relax

    from .program import UnsupportedTir, tir_program
    from .tasks import _bindings, _callee, _copies_unchanged, _param_sources
    main = final["main"]
    alias = {str(p.name): ("param", i) for i, p in enumerate(main.params)}
    computed, items = [], {}
    for name, value in _bindings(main):
        if isinstance(value, relax.TupleGetItem) and str(getattr(value.tuple_value, "name", "")) in alias:
            alias[name] = alias[str(value.tuple_value.name)] + (value.index,)
            continue
        if isinstance(value, relax.Tuple):
            items[name] = [alias.get(str(getattr(f, "name", "")), ("other",)) for f in value.fields]
            continue
        callee = _callee(value)
        func = final.functions.get(final.get_global_var(callee)) if callee else None
        if not isinstance(func, tvm.tirx.PrimFunc):
            raise KernelSkipped(f"main binds {type(value).__name__} {name} outside a TIR call")
        args = [alias.get(str(getattr(a, "name", "")), ("other",)) for a in _param_sources(value)]
        try:
            program = tir_program(func)
        except UnsupportedTir as exc:
            raise KernelSkipped(f"its float64 reference cannot be stated: {exc}") from None
        if len(args) == 1 and args[0][0] != "other" and _copies_unchanged(program):
            alias[name] = args[0]
            continue
        if any(a[0] != "param" or len(a) != 2 for a in args):
            raise KernelSkipped(f"TVM task {callee} reads a value the kernel does not hold "
                                "(a constant or another task's)")
        computed.append(callee)
        alias[name] = ("task",)
        arguments = [a[1] for a in args]
    if len(computed) != 1:
        raise KernelSkipped(f"TVM fuses it into {len(computed)} computing tasks")
    result = main.body.body
    fields = items.get(str(getattr(result, "name", "")))
    if fields is None:
        raise KernelSkipped("main does not return a tuple")
    outputs = []
    for index, where in enumerate(fields):
        if where[0] != "task":
            raise KernelSkipped(f"output {index} is not the task's")
        outputs.append((where[1] if len(where) > 1 else 0, index))
    return computed[0], arguments, [o for _, o in sorted(outputs)]


def in_place_misfit(folder: Path) -> str:
    """Why a kernel's in-place buffers keep TVM members out ('' when they do not): TVM
    writes out of place, which shares a buffer only where each element is read and written
    by one thread (a pointwise kernel)."""
    from builders.triton_jit.description import load_description
    heuristic = json.loads((Path(folder) / "inductor.json").read_text())["heuristic"]
    inout = [b.name for b in load_description(Path(folder) / "call.json").problem.buffers if b.role == "inout"]
    if not inout or heuristic == "pointwise":
        return ""
    return f"it writes {', '.join(inout)} in place outside a pointwise kernel"


def kernel_task(folder: Path) -> KernelTask:
    """The TVM task of the Inductor kernel captured in ``folder``; raises KernelSkipped."""
    from builders.triton_jit.description import load_description

    from .frontend import import_exported
    from .program import tir_program
    from .tasks import Task, fuse
    folder = Path(folder)
    info = json.loads((folder / "inductor.json").read_text())
    from builders.inductor.builder import with_graph_params
    kernel_problem = load_description(folder / "call.json").problem
    with_graph_params(kernel_problem, info)  # the kernel's own draws (its rows' problem)
    misfit = in_place_misfit(folder)
    if misfit:
        raise KernelSkipped(misfit)
    module = _reference_module(folder)
    try:
        program = export_kernel(module, kernel_problem)
        imported = import_exported(program, {n: "activation" for n in module.INPUTS})
        _, _, final = fuse(imported.module)
    except KernelSkipped:
        raise
    except Exception as exc:  # torch.export's and TVM's own error types
        last = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
        raise KernelSkipped(f"TVM cannot import its graph: {last[:200]}") from None
    name, arguments, outputs = _one_task(final)
    func = final[name].with_attr("global_symbol", name)
    tir = tir_program(func)
    inputs = [p for p in tir["params"] if p not in tir["outputs"]]
    buffer_names, output_names = list(module.INPUTS), list(module.OUTPUTS)
    bindings = {p: buffer_names[i] for p, i in zip(inputs, arguments)}
    bindings.update({p: output_names[i] for p, i in zip(tir["outputs"], outputs)})
    roles = {p: info["graph_inputs"].get(bindings[p], "activation") for p in inputs}
    task = Task(info["kernel"], func, tir, list(info["aten_ops"]), list(info["layers"]),
                list(info.get("in_nodes", [])) + list(info.get("out_nodes", [])), roles)
    problem = member_problem(kernel_problem, tir, bindings, f"TVM task {name} of Inductor kernel {info['kernel']}")
    check_same_function(kernel_problem, problem)
    return KernelTask(info["model"], info["kernel"], task, problem, bindings, info["heuristic"])


SHIM = '''

# The task's parameters bound to the Inductor kernel's buffers (builders/tvm_models/inductor_kernels.py)
BINDINGS = json.loads({bindings})


def _task_inputs(inputs):
    program = _program()
    return {{p: np.asarray(inputs[b]) for p, b in BINDINGS.items() if p not in program["outputs"]}}


def reference(inputs, problem):
    outputs, _ = _run(_task_inputs(inputs), errors=False)
    return {{BINDINGS[n]: v.v.to(torch.float64).numpy().reshape(problem.buffer(BINDINGS[n]).shape)
            for n, v in outputs.items()}}


def reference_error_scale(inputs, problem):
    outputs, _ = _run(_task_inputs(inputs), errors=True)
    return {{BINDINGS[n]: (torch.broadcast_to(v.e, v.v.shape) / U32).numpy().reshape(problem.buffer(BINDINGS[n]).shape)
            for n, v in outputs.items()}}
'''


def member_problem(kernel_problem: Problem, tir: dict, bindings: dict, title: str) -> Problem:
    """The kernel's buffers (names, roles, draws, input domain) with the TVM task's own
    float64 reference and error scale as their function."""
    from .reference import reference_source
    source = reference_source(tir, title) + SHIM.format(bindings=json.dumps(json.dumps(bindings)))
    params = {"reference": "reference:reference", "reference_source": source, "reduction_length": 1}
    for key in ("input_range", "stress_specials", "nonnegative_inputs"):
        if key in kernel_problem.params:
            params[key] = kernel_problem.params[key]
    return Problem(kernel_problem.problem_id, "custom", list(kernel_problem.buffers), params)


def check_same_function(kernel_problem: Problem, problem: Problem) -> None:
    """Both problems key to one function of networks (what ``ptxds merge`` will find), and
    the task's reference states its error scale; raises KernelSkipped otherwise."""
    from dataset_spec.fused import network_function

    theirs, ours = network_function(kernel_problem), network_function(problem)
    if theirs is None or ours is None:
        raise KernelSkipped("its function has no cross-source key (dataset_spec/fused.py)")
    if theirs[0].problem_id != ours[0].problem_id:
        raise KernelSkipped(f"TVM's task keys to {ours[0].problem_id}, the kernel to {theirs[0].problem_id}")
    try:
        check_reference(problem)
    except Exception as exc:  # the reference module's own errors
        raise KernelSkipped(f"the task's reference fails: {type(exc).__name__}: {exc}"[:300]) from None


def check_reference(problem: Problem) -> None:
    """The reference evaluates, with its error scale, on one normal draw of every input
    (an in-place buffer's too)."""
    import numpy as np

    from dataset_spec.ops import get_op
    rng = np.random.default_rng(0)
    inputs = {}
    for b in problem.buffers:
        if b.role in ("in", "inout"):
            if b.init is not None and b.init.kind == "randint":
                inputs[b.name] = rng.integers(b.init.params["low"], b.init.params["high"], b.shape).astype(np.float64)
            else:
                inputs[b.name] = rng.standard_normal(b.shape)
    op = get_op("custom")
    op.bounds(inputs, problem, op.reference(inputs, problem))


@functools.lru_cache(maxsize=8)
def cached_kernel_task(folder: str):
    """``kernel_task`` once a process: a KernelTask, or the KernelSkipped it raised."""
    try:
        return kernel_task(Path(folder))
    except KernelSkipped as exc:
        return exc
