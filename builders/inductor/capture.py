"""Capture: the Triton kernels Inductor writes for one model's graph, each with its own
reference cut from that graph, written as a folder that ``ptxds build --source inductor``
reads (docs/inductor.md).

``capture_model(spec, out_dir)`` traces the model's forward with fake CUDA tensors
(``make_fx`` over ``functional_call``: weights and inputs are graph inputs), compiles it with
Inductor's ``compile_fx`` under ``codegen_only`` and stops once the wrapper code is written.
While Inductor writes code, hooks record each Triton kernel's source and its call (which
graph buffer each ``in_ptr``/``out_ptr``/``in_out_ptr`` is, and the numels). Each buffer is
the value of one FX node of the post-grad graph (its ``origin_node``, or the placeholder of a
graph input); a kernel's reference is the FX subgraph that computes its output nodes from its
input nodes (kernel.py, reference.py, call.yaml per kernel, see ``write_kernel``). A kernel
whose buffers cannot all be tied to FX nodes, or whose reference cannot be evaluated, is left
out with its reason in ``capture.json``.
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import re
import runpy
import shutil
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from builders.inductor.codegen_only import TARGETS, codegen_only

RUNTIME_FILE = Path(__file__).with_name("reference_runtime.py")


class _Stop(Exception):
    """Raised by the hook once the wrapper code is written: nothing is loaded or run."""


@dataclass
class KernelCall:
    """One Triton kernel of the graph as Inductor calls it."""
    name: str
    source: str
    params: list            # runtime parameter names, in order
    call_args: list         # the graph buffer or number passed to each
    reads: dict             # kernel param -> buffer name read through it (held before the kernel)
    writes: dict            # kernel param -> buffer name written through it
    inductor_meta: dict = field(default_factory=dict)


class _Recorder:
    def __init__(self):
        self.sources: dict = {}
        self.calls: dict = {}
        self.nodes: dict = {}   # kernel name -> the buffers it computes, in order
        self.graph = None
        self.wrapper = ""


def _install_hooks(recorder: _Recorder, patches):
    from torch._inductor.codegen.triton import TritonKernel, TritonScheduling
    from torch._inductor.graph import GraphLowering
    from torch._inductor.scheduler import BaseSchedulerNode

    define_kernel = TritonScheduling.define_kernel
    call_kernel = TritonKernel.call_kernel

    def hooked_define(self, src_code, node_schedule, kernel):
        name = define_kernel(self, src_code, node_schedule, kernel)
        recorder.sources.setdefault(name, src_code.replace("Placeholder.KERNEL_NAME", name)
                                    .replace("Placeholder.DESCRIPTIVE_NAME", name))
        recorder.nodes.setdefault(name, [n.node.get_name() for n in node_schedule  # buffer names, not op names
                                         if isinstance(n, BaseSchedulerNode) and n.node is not None])
        return name

    def hooked_call(self, name, node=None, deallocate_ws=True):
        from torch._inductor.codegen.common import InplacedBuffer
        arg_defs, call_args, _, _ = self.args.python_argdefs()
        call_args = list(call_args)
        self.add_numel_to_call_args(name, call_args, [])
        reads, writes = {}, {}
        for outer, inner in self.args.input_buffers.items():
            if isinstance(inner, str) and outer not in self.args.inplace_buffers:
                reads[inner] = outer
        for outer, inner in self.args.output_buffers.items():
            if isinstance(inner, str) and outer not in self.args.inplace_buffers:
                writes[inner] = outer
        inplaced_all = {v.inner_name: v for v in self.args.inplace_buffers.values() if isinstance(v, InplacedBuffer)}
        computed = set(recorder.nodes.get(name, ()))  # define_kernel ran just before this call
        for inplaced in inplaced_all.values():
            # a buffer the kernel computes itself and then overwrites with a later value (a
            # LayerNorm written over the embedding sum it normalises, a mean over its sum) is
            # no input: what it held before the kernel is never read
            if inplaced.other_names[0] not in computed:
                reads[inplaced.inner_name] = inplaced.other_names[0]
            writes[inplaced.inner_name] = inplaced.other_names[-1]
        if name not in recorder.calls:
            recorder.calls[name] = KernelCall(name, "", [a.name for a in arg_defs], [str(c) for c in call_args],
                                              reads, writes, dict(self.inductor_meta_common()))
        return call_kernel(self, name, node, deallocate_ws)

    def hooked_lines(self, wrapper_code):
        recorder.graph = self
        recorder.wrapper = getattr(wrapper_code, "value", str(wrapper_code))
        raise _Stop()

    patches.set(TritonScheduling, "define_kernel", hooked_define)
    patches.set(TritonKernel, "call_kernel", hooked_call)
    patches.set(GraphLowering, "_compile_to_module_lines", hooked_lines)


def inductor_kernels(fn, example_inputs, target: str = "h100", backward: bool = False):
    """The recorder of Inductor's compile of ``fn`` (an FX GraphModule of ATen ops over fake
    CUDA tensors) for ``target``; no autotuning, no cudagraphs. A forward goes through
    ``compile_fx`` (Inductor's inference settings); a ``backward`` graph (aot_autograd's
    partition, see ``trace_backward``) goes straight to ``compile_fx_inner`` with
    ``is_backward`` as aot_autograd's backward compiler hands it over."""
    import torch
    import torch._inductor.config as inductor_config
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner
    from torch._inductor.virtualized import V

    from builders.inductor.codegen_only import _Patches

    recorder, patches = _Recorder(), _Patches()
    with codegen_only(TARGETS[target]), inductor_config.patch(
            compile_threads=1, max_autotune=False, coordinate_descent_tuning=False, fx_graph_cache=False,
            autotune_local_cache=False, **{"triton.cudagraphs": False}):
        _install_hooks(recorder, patches)
        try:
            if backward:
                mode = example_inputs[0].fake_mode
                with mode, V.set_fake_mode(mode), torch._guards.tracing(torch._guards.TracingContext(mode)):
                    compile_fx_inner(fn, example_inputs, static_input_idxs=[], is_backward=True, graph_id=0)
            else:
                compile_fx(fn, example_inputs)
        except Exception as exc:  # our stop arrives wrapped in Inductor's error
            if recorder.graph is None:
                raise
            del exc
        finally:
            patches.undo()
    return recorder


# ----------------------------------------------------------------------------- FX subgraphs
def _buffer_node(graph, name: str):
    """The post-grad FX node whose value buffer ``name`` holds, or None."""
    if name in graph.graph_inputs:
        for node in graph.module.graph.nodes:
            if node.op == "placeholder" and node.name == name:
                return node
        return None
    buffer = graph.name_to_buffer.get(name)
    if buffer is None:
        return None
    node = buffer.get_origin_node() if hasattr(buffer, "get_origin_node") else None
    if node is None and hasattr(buffer, "data"):
        node = getattr(buffer.data, "origin_node", None)
    return node if node is not None else _extern_operand_node(graph, name)


def _extern_operand_node(graph, name: str):
    """The FX node whose value buffer ``name`` holds when Inductor made the buffer to give an
    extern kernel an operand in the layout it requires (flash attention's query and key
    after the rotary embedding): the extern op's FX argument at the buffer's position. None
    when no extern kernel takes the buffer itself as an operand."""
    import torch.utils._pytree as pytree
    from torch._inductor import ir

    for op in getattr(graph, "operations", []):
        if not isinstance(op, ir.ExternKernel) or isinstance(op, ir.MultiOutput):
            continue
        operands = [i.get_name() if isinstance(i, ir.Buffer) else None for i in op.inputs]
        if name not in operands:
            continue
        fx_node = op.origin_node
        if fx_node is None:
            matches = [n for n in op.origins if n.target is getattr(op, "op_overload", None)]
            fx_node = matches[0] if len(matches) == 1 else None
        if fx_node is None:
            return None
        fx_args = [a for a in pytree.tree_leaves((fx_node.args, fx_node.kwargs)) if hasattr(a, "op")]
        return fx_args[operands.index(name)] if len(fx_args) == len(operands) else None
    return None


def _layout(graph, name: str) -> tuple:
    """(size, stride, offset, torch dtype) of graph buffer ``name`` as static ints."""
    buffer = graph.get_buffer(name)
    layout = buffer.get_layout()
    return ([int(s) for s in layout.size], [int(s) for s in layout.stride], int(layout.offset), layout.dtype)


def extent(size: list, stride: list) -> int:
    """Elements from the first to the last one a strided view reaches, plus one."""
    return 1 + sum((s - 1) * t for s, t in zip(size, stride)) if all(size) else 0


def dense(size: list, stride: list) -> bool:
    """Whether the view covers its extent exactly once (a permutation of a contiguous layout)."""
    pairs = sorted((t, s) for s, t in zip(size, stride) if s != 1)
    expected = 1
    for t, s in pairs:
        if t != expected:
            return False
        expected *= s
    return True


def subgraph(outputs: list, inputs: list) -> list:
    """The nodes that compute ``outputs`` from ``inputs``, in graph order; raises ValueError
    naming a graph input or random op the walk reaches outside ``inputs``."""
    keep, stack, seen = [], list(outputs), set(inputs)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.op == "placeholder":
            raise ValueError(f"the kernel's outputs depend on graph input {node.name}, which it does not read")
        if node.op != "call_function":
            raise ValueError(f"node {node.name} is a {node.op}")
        if any(word in str(node.target) for word in ("rand", "philox", "bernoulli", "seed")):
            raise ValueError(f"node {node.name} ({node.target}) is random")
        keep.append(node)
        stack.extend(node.all_input_nodes)
    order = {n: i for i, n in enumerate(outputs[0].graph.nodes)}
    return sorted(keep, key=order.__getitem__)


def subgraph_graph(nodes: list, inputs: list, outputs: list):
    """An FX graph ``graph(*inputs) -> tuple(outputs)`` of copies of the nodes."""
    import torch.fx as fx

    graph = fx.Graph()
    env = {}
    for node in inputs:
        env[node] = graph.placeholder(node.name)
    for node in nodes:
        env[node] = graph.node_copy(node, lambda n: env[n])
    graph.output(tuple(env[n] for n in outputs))
    return graph


def graph_code(graph) -> str:
    """Python text of an FX graph as ``def graph(...)``: FX's own code."""
    code = graph.python_code(root_module="self").src
    code = code.replace("def forward(self, ", "def graph(").replace("def forward(self)", "def graph()")
    return textwrap.dedent(code).strip() + "\n"


def subgraph_code(nodes: list, inputs: list, outputs: list) -> str:
    """Python text of ``graph(*inputs) -> tuple(outputs)``: FX's own code of the nodes."""
    return graph_code(subgraph_graph(nodes, inputs, outputs))


def portable_graph(graph, in_nodes: list) -> tuple:
    """(graph, decomposed op names): ``graph`` unchanged when every op it calls is one of the
    minimum torch's (builders/inductor/portable_ops.py); else the graph traced again with
    each other op replaced by its decomposition (Inductor's ``prims.prepare_softmax_online``
    becomes amax, sub, exp and sum). Raises ValueError naming an op without one."""
    import torch
    import torch.fx as fx
    from torch.fx.experimental.proxy_tensor import make_fx

    from builders.inductor.portable_ops import MINIMUM_TORCH, decomposition, is_portable

    unportable = {n.target for n in graph.nodes if n.op == "call_function" and not is_portable(n.target)}
    if not unportable:
        return graph, []
    table = {}
    for target in unportable:
        table[target] = decomposition(target)
        if table[target] is None:
            raise ValueError(f"{target} is not an op of torch {MINIMUM_TORCH} and has no decomposition")
    cpu = torch.device("cpu")
    for node in graph.nodes:
        node.args, node.kwargs = _on_device(node.args, cpu), _on_device(node.kwargs, cpu)
    values = [n.meta["val"] for n in in_nodes]
    examples = [torch.empty_strided(v.shape, v.stride(), dtype=v.dtype) for v in values]
    traced = make_fx(fx.GraphModule(torch.nn.Module(), graph), decomposition_table=table,
                     tracing_mode="fake")(*examples).graph
    left = sorted({str(n.target) for n in traced.nodes if n.op == "call_function" and not is_portable(n.target)})
    if left or any(n.op == "get_attr" for n in traced.nodes):
        raise ValueError(f"decomposing {sorted(map(str, unportable))} left {left or 'a constant'} "
                         f"outside torch {MINIMUM_TORCH}")
    named = fx.Graph()  # the placeholders keep the post-grad graph's names
    env = {}
    placeholders = [n for n in traced.nodes if n.op == "placeholder"]
    for node, original in zip(placeholders, in_nodes):
        env[node] = named.placeholder(original.name)
    cuda = torch.device("cuda", 0)
    for node in traced.nodes:
        if node.op == "call_function":
            env[node] = named.node_copy(node, lambda n: env[n])
            env[node].args, env[node].kwargs = _on_device(env[node].args, cuda), _on_device(env[node].kwargs, cuda)
        elif node.op == "output":
            named.output(_map_nodes(node.args[0], env))
    return named, sorted(map(str, unportable))


def _map_nodes(value, env):
    if isinstance(value, (list, tuple)):
        return tuple(_map_nodes(v, env) for v in value)
    return env.get(value, value) if hasattr(value, "op") else value


# ----------------------------------------------------------------------------- kernel files
def plain_kernel(source: str, name: str) -> str:
    """The kernel module with Inductor's autotune decorator and driver call taken out: imports
    and the ``@triton.jit`` function, as Triton's JIT compiles it."""
    tree = ast.parse(source)
    body = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and "set_driver_to_gpu" in ast.unparse(stmt):
            continue
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            stmt.decorator_list = [d for d in stmt.decorator_list if ast.unparse(d) == "triton.jit"]
        body.append(stmt)
    lines = source.splitlines()
    text = []
    for stmt in body:
        start = (stmt.decorator_list[0].lineno if isinstance(stmt, ast.FunctionDef) and stmt.decorator_list
                 else stmt.lineno)
        if isinstance(stmt, ast.FunctionDef):
            text.append("@triton.jit")
            start = stmt.lineno
        text.extend(lines[start - 1:stmt.end_lineno])
    return "\n".join(text) + "\n"


def autotune_configs(source: str) -> tuple:
    """(heuristic name, [config dicts], the kernel's inductor_meta) Inductor's runtime would autotune for this kernel: the
    union of its default list and its max-autotune list, each config marking which lists
    hold it. Reads the kernel's own decorator by importing its module with Inductor's
    ``cached_autotune`` recording the configs instead of building an autotuner."""
    from torch._inductor.runtime import triton_heuristics

    found, metas = {}, {}
    lists = {"default": source,
             "max_autotune": source.replace("'max_autotune': False", "'max_autotune': True")
             .replace("'max_autotune_pointwise': False", "'max_autotune_pointwise': True")}
    original = triton_heuristics.cached_autotune
    heuristic = re.search(r"@triton_heuristics\.(\w+)\(", source).group(1)
    try:
        for label, text in lists.items():
            recorded = []

            def recording(size_hints, configs, *args, **kwargs):
                recorded.extend(configs)
                metas.setdefault(label, dict(kwargs.get("inductor_meta") or {}))
                return lambda fn: fn

            triton_heuristics.cached_autotune = recording
            with tempfile.TemporaryDirectory() as folder:  # triton.jit reads its function's file
                path = Path(folder) / "kernel.py"
                path.write_text(text)
                runpy.run_path(str(path))
            for config in recorded:
                entry = {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}
                key = json.dumps(entry, sort_keys=True)
                found.setdefault(key, {"config": entry, "lists": []})["lists"].append(label)
    finally:
        triton_heuristics.cached_autotune = original
    return heuristic, list(found.values()), metas.get("default", {})


GRID_AXES = (("xnumel", "XBLOCK"), ("ynumel", "YBLOCK"), ("znumel", "ZBLOCK"))


MAX_Y_GRID = 65535  # CUDA's grid y limit (Inductor's get_max_y_grid)


def grid_expressions(inductor_meta: dict, params: list) -> list:
    """The launch grid as call-description expressions (Inductor's Grid1D/2D/3D, and
    Grid2DWithYZOverflow: y blocks beyond CUDA's limit folded into z)."""
    kind = inductor_meta.get("grid_type")
    axes = {"Grid1D": 1, "Grid2D": 2, "Grid3D": 3, "Grid2DWithYZOverflow": 2}.get(kind)
    if axes is None:
        raise ValueError(f"grid type {kind} is not launched by this source yet")
    grid = []
    for numel, block in GRID_AXES[:axes]:
        grid.append(f"cdiv({numel}, {block})" if block in params else numel)
    if kind == "Grid2DWithYZOverflow":
        folds = f"cdiv({grid[1]}, {MAX_Y_GRID})"
        grid = [grid[0], f"cdiv({grid[1]}, {folds})", folds]
    return grid


def check_grid(inductor_meta: dict, grid: list, numels: dict, configs: list) -> None:
    """Each config's grid from our expressions equals Inductor's own GridExpr."""
    from builders.triton.expressions import evaluate
    from torch._inductor.runtime.triton_heuristics import GridExpr
    for entry in configs:
        config = entry["config"]
        theirs = GridExpr.from_meta(inductor_meta, config).eval_slow({**numels, **config})
        ours = [evaluate(e, {**numels, **config}) for e in grid]
        if tuple(ours) != tuple(theirs[:len(ours)]) or any(t != 1 for t in theirs[len(ours):]):
            raise ValueError(f"grid {ours} differs from Inductor's {theirs} for config {config}")


# a bool buffer is one byte a value, 0 or 1: the row states it as uint8 (Triton loads it
# through the kernel's own ``.to(tl.int1)``) and the reference reads it back as bool
DTYPE_NAMES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
               "int64": "int64", "int32": "int32", "bool": "uint8", "int8": "int8", "uint8": "uint8"}


def _dtype_name(dtype) -> str:
    name = str(dtype).replace("torch.", "")
    if name not in DTYPE_NAMES:
        raise ValueError(f"buffer dtype {name} is not supported")
    return DTYPE_NAMES[name]


def _kind(dtype_name: str) -> str:
    return "float" if dtype_name.startswith(("float", "bfloat")) else "bool" if dtype_name == "bool" else "int"


def _kind_of(dtype) -> str:
    """float, bool or int: how the reference rebuilds a buffer of this torch dtype."""
    return _kind(str(dtype).replace("torch.", ""))


class NoGraphValue(ValueError):
    """A buffer of the kernel holds no FX node's value (in that layout): its reference comes
    from Inductor's IR instead (ir_reference.py)."""


def describe_kernel(graph, call: KernelCall, roles: dict, model: str, nodes: list = (),
                    accumulators: list = ()) -> dict:
    """Everything the kernel's folder holds, as plain values: its reference is the FX subgraph
    between the values it reads and writes, or, where a buffer holds no FX node's value (or
    the kernel adds into ``accumulators``, buffers other kernels fill), the IR of the ``nodes``
    it computes (``describe_from_ir``); raises ValueError saying why the kernel cannot be a
    group."""
    try:
        if accumulators:
            raise NoGraphValue(f"the kernel adds into {', '.join(accumulators)}, which other kernels fill")
        return describe_from_graph(graph, call, roles)
    except NoGraphValue as exc:
        if not nodes:
            raise
        try:
            return describe_from_ir(graph, call, roles, list(nodes), list(accumulators))
        except ValueError as ir_exc:
            raise ValueError(f"{exc}; from the IR: {ir_exc}") from None


def describe_from_graph(graph, call: KernelCall, roles: dict) -> dict:
    """describe_kernel's reference from the post-grad FX graph."""
    args = dict(zip(call.params, call.call_args))
    pointers = [p for p in call.params if p in call.reads or p in call.writes]
    buffers, inputs, outputs, in_nodes, out_nodes = [], {}, {}, [], []
    for param in pointers:
        # an in-place buffer is read in the layout of the value it held and written in the
        # layout of the value it gets (an addmm's [256, 96] rewritten as a channels-last image)
        views = {direction: (names[param], _layout(graph, names[param]))
                 for direction, names in (("read", call.reads), ("write", call.writes)) if param in names}
        for name, (size, stride, offset, dtype) in views.values():
            if offset:
                raise ValueError(f"{param} ({name}) starts at element {offset} of its storage")
        dtypes = {_dtype_name(layout[3]) for _, layout in views.values()}
        if len(dtypes) > 1:
            raise ValueError(f"{param} is read as {' and written as '.join(sorted(dtypes))}")
        dtype_name, kind = dtypes.pop(), _kind_of(next(iter(views.values()))[1][3])
        numel = max(extent(layout[0], layout[1]) for _, layout in views.values())
        role = "inout" if len(views) == 2 else "in" if "read" in views else "out"
        size, stride = next(iter(views.values()))[1][:2]
        one_layout = len({(tuple(layout[0]), tuple(layout[1])) for _, layout in views.values()}) == 1
        shape = size if one_layout and stride == _contiguous(size) else [numel]
        buffer = {"name": param, "dtype": dtype_name, "shape": shape or [1], "role": role}
        if role == "out" and not dense(size, stride):
            # the kernel writes part of a buffer (its slice of a concatenation): the row states
            # the buffer inout, so the elements it leaves keep their drawn values (the reference's
            # too), while a written element that is left wrong or unwritten still differs
            buffer.update(role="inout", shape=[numel], init={"kind": "normal", "params": {"mean": 0.0, "std": 1.0}})
        if "read" in views:
            name, (size, stride, _, _) = views["read"]
            node = _buffer_node(graph, name)
            if node is None:
                raise NoGraphValue(f"buffer {name} ({param}) is no FX node's value")
            in_nodes.append(node)
            inputs[param] = (*_value_layout(node, size, stride, name), kind)
            buffer["init"], buffer["graph_role"] = _init(node, roles, dtype_name, kind)
        if "write" in views:
            name, (size, stride, _, _) = views["write"]
            node = _buffer_node(graph, name)
            if node is None:
                raise NoGraphValue(f"buffer {name} ({param}) is no FX node's value")
            out_nodes.append(node)
            outputs[param] = (*_value_layout(node, size, stride, name), numel)
        buffers.append(buffer)
    if not out_nodes:
        raise ValueError("the kernel writes no buffer")
    if len(set(in_nodes)) != len(in_nodes):
        raise ValueError("two kernel arguments hold the same graph value")
    try:
        nodes = subgraph(out_nodes, in_nodes)
    except ValueError as exc:
        scatters = sorted({str(n.target) for n in out_nodes if _is_scatter(n)})
        if scatters:  # Inductor fills a scatter's accumulator in a kernel of its own
            raise ValueError(f"it only fills the accumulator of {', '.join(scatters)} (a constant), which "
                             f"another kernel adds into ({exc})") from None
        raise
    numels = {p: int(args[p]) for p in call.params if p not in pointers}
    graph_ops = sorted({str(n.target) for n in nodes})
    portable, decomposed = portable_graph(subgraph_graph(nodes, in_nodes, out_nodes), in_nodes)
    return {"buffers": buffers, "inputs": inputs, "outputs": outputs, "numels": numels,
            "in_nodes": [n.name for n in in_nodes], "out_nodes": [n.name for n in out_nodes],
            "code": graph_code(portable), "graph_ops": graph_ops, "decomposed": decomposed,
            "aten_ops": sorted({str(n.target) for n in portable.nodes if n.op == "call_function"}),
            "layers": sorted({_layer(n) for n in nodes} - {""})}


def describe_from_ir(graph, call: KernelCall, roles: dict, nodes: list, accumulators: list = ()) -> dict:
    """describe_kernel's reference from Inductor's IR of the buffers the kernel computes
    (builders/inductor/ir_reference.py): every buffer is its flat storage; an accumulator is
    read as well as written (the kernel adds into what it holds)."""
    from builders.inductor.ir_reference import kernel_graph

    args = dict(zip(call.params, call.call_args))
    pointers = [p for p in call.params if p in call.reads or p in call.writes]
    reads = {p: call.reads[p] if p in call.reads else call.writes[p] for p in pointers
             if p in call.reads or p in accumulators}
    writes = {p: call.writes[p] for p in pointers if p in call.writes}
    if not writes:
        raise ValueError("the kernel writes no buffer")
    if len(set(reads.values())) != len(reads):
        raise ValueError("two kernel arguments read the same buffer")
    for param, name in writes.items():
        size, stride, offset, _ = _layout(graph, name)
        if param not in reads and (offset or not dense(size, stride)):
            raise ValueError(f"{param} ({name}) is written in part; the rest of its storage is not the kernel's")
    inplace = {writes[p]: reads[p] for p in writes if p in reads and writes[p] != reads[p]}
    ir_graph, numels = kernel_graph(graph, nodes, reads, writes, inplace)
    placeholders = [n for n in ir_graph.nodes if n.op == "placeholder"]
    buffers, inputs, outputs = [], {}, {}
    for param in pointers:
        names = [d[param] for d in (reads, writes) if param in d]
        dtypes = {_dtype_name(graph.get_buffer(n).get_dtype()) for n in names}
        if len(dtypes) > 1:
            raise ValueError(f"{param} is read as {' and written as '.join(sorted(dtypes))}")
        dtype_name, kind = dtypes.pop(), _kind_of(graph.get_buffer(names[0]).get_dtype())
        numel = max(numels[n] for n in names)
        role = "inout" if len(names) == 2 else "in" if param in reads else "out"
        buffer = {"name": param, "dtype": dtype_name, "shape": [numel], "role": role}
        if param in reads:
            inputs[param] = ([numels[reads[param]]], [1], kind)
            node = _buffer_node(graph, reads[param]) if param not in accumulators else None
            if node is not None:
                buffer["init"], buffer["graph_role"] = _init(node, roles, dtype_name, kind)
            elif kind == "float":  # an intermediate only Inductor computes (a partial sum), an accumulator
                buffer["init"] = {"kind": "normal", "params": {"mean": 0.0, "std": 1.0}}
                buffer["graph_role"] = "accumulator" if param in accumulators else "intermediate"
            elif kind == "bool":  # a partial any()
                buffer["init"], buffer["graph_role"] = {"kind": "randint", "params": {"low": 0, "high": 2}}, \
                    "intermediate"
            else:
                raise ValueError(f"integer buffer {reads[param]} ({param}) has no known range")
        if param in writes:
            outputs[param] = ([numel], [1], numel)
        buffers.append(buffer)
    numbers = {p: int(args[p]) for p in call.params if p not in pointers}
    portable, decomposed = portable_graph(ir_graph, placeholders)
    origins = {o for n in nodes for o in getattr(graph.get_buffer(n), "origins", ())}
    return {"buffers": buffers, "inputs": inputs, "outputs": outputs, "numels": numbers,
            "in_nodes": list(reads.values()), "out_nodes": list(writes.values()), "code": graph_code(portable),
            "graph_ops": sorted({str(n.target) for n in ir_graph.nodes if n.op == "call_function"}),
            "decomposed": decomposed, "reference": "ir",
            "aten_ops": sorted({str(o.target) for o in origins if o.op == "call_function"}),
            "layers": sorted({_layer(o) for o in origins} - {""})}


MAX_BUFFER_ELEMENTS = 2 ** 26  # one float64 copy is 512 MiB; the domain search holds several


def check_reference_size(buffers: list) -> None:
    """Refuses a kernel with a buffer of more than MAX_BUFFER_ELEMENTS elements: its float64
    reference and domain search would take gigabytes (Mixtral's expert-weight gather at 4 x 256
    tokens is 2^29)."""
    for buffer in buffers:
        numel = math.prod(buffer["shape"])
        if numel > MAX_BUFFER_ELEMENTS:
            raise ValueError(f"buffer {buffer['name']} holds {numel} elements, beyond the {MAX_BUFFER_ELEMENTS} a "
                             f"float64 reference is evaluated for; capture the model at a smaller size")


def _is_scatter(node) -> bool:
    """Whether an FX node accumulates into its output at computed indices (index_put with
    accumulate, scatter_add, index_add): Inductor splits such a node over several kernels."""
    return any(word in str(node.target) for word in ("index_put", "scatter", "index_add"))


def _contiguous(size: list) -> list:
    stride, step = [], 1
    for s in reversed(size):
        stride.append(step)
        step *= s
    return list(reversed(stride))


def _value_layout(node, size: list, stride: list, name: str) -> tuple:
    """(size, stride) of the FX node's value in the buffer's storage: the buffer's own layout,
    or, for a contiguous buffer that views the node's value under another shape (a bmm's
    [b*h, s, s] read as [b, h, s, s]), the node's shape over the same contiguous storage."""
    value = node.meta.get("val")
    if value is None or not hasattr(value, "shape"):
        raise ValueError(f"buffer {name}'s FX node {node.name} has no single tensor value")
    shape = [int(s) for s in value.shape]
    if shape == list(size):
        return list(size), list(stride)
    if stride == _contiguous(size) and math.prod(shape) == math.prod(size):
        return shape, _contiguous(shape)
    kept = [(s, t) for s, t in zip(size, stride) if s != 1]
    if [s for s in shape if s != 1] == [s for s, _ in kept]:
        # the same dims less the ones of size 1 (a padded [1, 16, 683] buffer of a [16, 683] value)
        strides = iter(t for _, t in kept)
        return shape, [1 if s == 1 else next(strides) for s in shape]
    raise NoGraphValue(f"buffer {name} is {list(size)} with strides {list(stride)} but its FX node "
                     f"{node.name} is {shape}")


def _init(node, roles: dict, dtype_name: str, kind: str) -> tuple:
    """(the buffer's input distribution, its role in the model) for a value the kernel reads."""
    role = roles.get(node.name, "activation") if node.op == "placeholder" else "activation"
    if role.startswith("indices:"):
        return {"kind": "randint", "params": {"low": 0, "high": int(role.split(":")[1])}}, role
    if kind == "bool":
        return {"kind": "randint", "params": {"low": 0, "high": 2}}, role
    if kind == "int":
        span = index_range(node)
        if span is None:
            raise ValueError(f"integer value {node.name} ({role}) has no known range")
        return {"kind": "randint", "params": {"low": 0, "high": span}}, f"indices:{span}"
    return {"kind": "normal", "params": {"mean": 0.0, "std": 1.0}}, role


def index_range(node):
    """n when ``node`` holds indices along a dimension of size n that an op chose (the
    indices of ``topk``, ``sort``, ``max.dim``/``min.dim``, ``argmax``/``argmin``: an MoE
    router's experts), else None."""
    import operator

    import torch
    aten = torch.ops.aten
    source, dim = None, None
    if node.op == "call_function" and node.target is operator.getitem and node.args[1] == 1:
        chooser = node.args[0]
        if getattr(chooser, "target", None) in (aten.topk.default, aten.sort.default, aten.max.dim, aten.min.dim):
            position = {aten.topk.default: 2}.get(chooser.target, 1)
            dim = chooser.args[position] if len(chooser.args) > position else chooser.kwargs.get("dim", -1)
            source = chooser.args[0]
    elif node.op == "call_function" and node.target in (aten.argmax.default, aten.argmin.default):
        source, dim = node.args[0], node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    value = getattr(source, "meta", {}).get("val")
    if value is None or dim is None:
        return None
    return int(value.shape[dim])


def _layer(node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        return list(stack.values())[-1][0] if isinstance(list(stack.values())[-1], tuple) else str(list(stack)[-1])
    return ""


def reference_module(kernel: str, model: str, described: dict) -> str:
    """The reference module text of one kernel: its graph, buffer map and the runtime."""
    what = ("Inductor's IR of buffers" if described.get("reference") == "ir" else "the post-grad FX nodes")
    header = (f'"""Float64 reference of Inductor kernel {kernel} of {model}: {what}\n'
              f'{", ".join(described["out_nodes"])} computed from {", ".join(described["in_nodes"])}."""\n')
    inputs = {k: (list(v[0]), list(v[1]), v[2]) for k, v in described["inputs"].items()}
    outputs = {k: (list(v[0]), list(v[1]), v[2]) for k, v in described["outputs"].items()}
    runtime = RUNTIME_FILE.read_text()
    runtime = runtime[runtime.index('"""', 3) + 3:]  # the runtime's own docstring stays in its file
    return (header + "import torch\nfrom torch import device\ninf = float('inf')\nnan = float('nan')\n\n"
            f"INPUTS = {inputs!r}\nOUTPUTS = {outputs!r}\n\n\n{described['code']}\n{runtime}")


# the largest magnitude a value stored in a dtype may reach in the domain search: half the
# dtype's largest finite value, so the kernel's rounding of it cannot overflow
SAFE_MAGNITUDE = {"float16": 65504.0 / 2, "bfloat16": 3.3895313892515355e38 / 2, "float32": 3.4028234663852886e38 / 2}
DOMAIN_START, DOMAIN_LOW, DOMAIN_FLOOR = 2.0 ** 10, 2.0 ** -10, 2.0 ** -8


def input_domain(reference_source: str, buffers: list) -> dict:
    """{float input buffer: [lo, hi]}: the magnitudes the verifier's wide, edge and stress
    trials draw (``params.input_range``). hi is the largest (at most DOMAIN_START, the
    verifier's default) for which every value the graph stores in a narrow dtype, its
    outputs and its casts, stays below half that dtype's largest finite value on the
    adversarial inputs of ``dataset_spec.mugraph.search_domain``: a fused ``silu(a) * b``
    of float16 operands of 1024 overflows the float16 it is stored in, and no member can
    match a float64 reference there. Raises ValueError when even DOMAIN_FLOOR overflows."""
    import numpy as np
    import torch

    from dataset_spec.mugraph import FP16_SAFE, MuGraphSemanticsError, search_domain

    module = _reference_namespace(reference_source)
    floats = [b for b in buffers if b["role"] in ("in", "inout") and _kind(b["dtype"]) == "float"]
    if not floats:
        return {}
    rng = np.random.default_rng(0)
    fixed = {b["name"]: rng.integers(b["init"]["params"]["low"], b["init"]["params"]["high"], b["shape"])
             .astype(np.float64) for b in buffers if b["role"] in ("in", "inout") and b not in floats}
    stored = {b["name"]: b["dtype"] for b in buffers if b["role"] in ("out", "inout")}
    watcher = _narrow_values_mode(module)

    def peak(arrays):
        inputs = dict(fixed, **{b["name"]: np.array(a) for b, a in zip(floats, arrays)})
        watcher.ratio = 0.0
        with torch.no_grad(), watcher:
            outs = module._outputs(module.graph(*module._graph_inputs(inputs)))
        ratios = [watcher.ratio] + [_finite_peak(value) / SAFE_MAGNITUDE[stored[name]]
                                    for name, (value, *_) in outs.items() if stored[name] in SAFE_MAGNITUDE]
        return FP16_SAFE * max(ratios)

    def largest(arrays):
        """The search's pattern, and the same magnitude as random extremes (below)."""
        hi = max(float(np.abs(a).max()) for a in arrays)
        return max(peak(arrays), peak(random_extremes([b["shape"] for b in floats], hi, rng)))

    try:
        hi = search_domain(largest, [b["shape"] for b in floats], DOMAIN_START, DOMAIN_FLOOR)
    except MuGraphSemanticsError:
        raise ValueError(f"no input magnitude >= {DOMAIN_FLOOR} keeps the kernel's stored values finite") from None
    hi = math.floor(hi * 2 ** 10) / 2 ** 10  # a short number, never above the one searched
    return {b["name"]: [DOMAIN_LOW, hi] for b in floats}


def random_extremes(shapes: list, hi: float, rng) -> list:
    """Every element +-hi, +-DOMAIN_LOW or 0 at random: the buffers' extremes against each
    other, as the verifier's wide and edge draws place them (a batch norm's variance at 0 under
    an input and a weight at hi, which the search's patterns, one magnitude for every buffer,
    miss)."""
    return [rng.choice([-hi, -DOMAIN_LOW, 0.0, DOMAIN_LOW, hi], size=tuple(shape)) for shape in shapes]


def _reference_namespace(reference_source: str):
    import types
    module = types.ModuleType("reference")
    exec(compile(reference_source, "<reference>", "exec"), module.__dict__)
    return module


def _finite_peak(value) -> float:
    import torch
    finite = value[torch.isfinite(value)] if value.is_floating_point() else value
    return float(finite.abs().max()) if finite.numel() else 0.0


def _narrow_values_mode(module):
    """The reference's Float64 mode, also keeping ``ratio``: the largest finite magnitude of a
    value the graph casts to a float dtype, over that dtype's SAFE_MAGNITUDE, and of an
    exponential, over float32's (Inductor computes it in float32: SiLU's backward takes
    exp(-x), which float32 holds only for x above -88)."""
    import torch
    aten = torch.ops.aten
    casts = (torch.ops.prims.convert_element_type.default, aten._to_copy.default)
    growing = (aten.exp.default, aten.exp2.default, aten.expm1.default, aten.sinh.default, aten.cosh.default)

    class NarrowValues(module.Float64):
        ratio = 0.0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = super().__torch_dispatch__(func, types, args, kwargs)
            dtype = args[1] if func is casts[0] else (kwargs or {}).get("dtype") if func is casts[1] else None
            if func in growing:
                dtype = torch.float32
            safe = SAFE_MAGNITUDE.get(str(dtype).replace("torch.", ""))
            if safe is not None:
                self.ratio = max(self.ratio, _finite_peak(out) / safe)
            return out

    return NarrowValues()


def write_kernel(folder: Path, kernel: str, model: str, described: dict, source: str, plain: str,
                 heuristic: str, configs: list, grid: list, dtype: str) -> None:
    """kernel.py, reference.py, call.json and inductor.json of one kernel."""
    folder.mkdir(parents=True, exist_ok=True)
    reference = reference_module(kernel, model, described)
    params = {"reference": "reference:reference", "reduction_length": 1}
    domain = input_domain(reference, described["buffers"])
    if domain:
        params["input_range"] = domain
    (folder / "kernel.py").write_text(plain)
    (folder / "reference.py").write_text(reference)
    problem = {"problem_id": f"{model}/{kernel}", "op": "custom", "params": params,
               "buffers": [{k: v for k, v in b.items() if k != "graph_role"} for b in described["buffers"]]}
    args = {b["name"]: b["name"] for b in described["buffers"]}
    args.update(described["numels"])
    call = {"kernel": f"kernel.py:{kernel}", "problem": problem, "vars": described["numels"],
            "args": args, "grid": grid, "configs": [c["config"] for c in configs]}
    (folder / "call.json").write_text(json.dumps(call, indent=1) + "\n")
    provenance = {"kernel": kernel, "model": model, "dtype": dtype, "heuristic": heuristic,
                  "config_lists": [c["lists"] for c in configs], "aten_ops": described["aten_ops"],
                  "graph_ops": described["graph_ops"], "decomposed": described["decomposed"],
                  "layers": described["layers"], "graph_inputs": {b["name"]: b.get("graph_role") for b in
                                                                   described["buffers"] if "graph_role" in b},
                  "in_nodes": described["in_nodes"], "out_nodes": described["out_nodes"],
                  "reference": described.get("reference", "fx"),
                  "inductor_source_sha256": hashlib.sha256(source.encode()).hexdigest()}
    (folder / "inductor.json").write_text(json.dumps(provenance, indent=1) + "\n")
    (folder / "inductor_source.py").write_text(source)


# ----------------------------------------------------------------------------- one model
def trace_model(spec):
    """(ATen FX graph of the model's forward, moved to the CUDA device; fake CUDA example
    inputs; {placeholder name: role}). Weights come first as graph inputs, then the model's
    inputs. The graph is traced over fake CPU tensors (a CPU-only torch cannot index a fake
    CUDA tensor), with attention as the CUDA build dispatches it (cuda_attention.py), and
    every device it names is then made ``cuda:0``."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from builders.inductor.cuda_attention import cuda_attention_mode
    from builders.inductor.cuda_lowering import convolution_decompositions
    from builders.inductor.models import build_block

    module, inputs = build_block(spec)
    state = dict(list(module.named_parameters()) + list(module.named_buffers()))
    names = list(state)
    cpu_inputs = [torch.zeros(shape, dtype=dtype) for role, shape, dtype in inputs.values()]

    def forward(*flat):
        params = dict(zip(names, flat[:len(names)]))
        return torch.func.functional_call(module, params, tuple(flat[len(names):]))

    with torch.no_grad(), cuda_attention_mode():
        gm = make_fx(forward, tracing_mode="fake", decomposition_table=convolution_decompositions())(
            *[t.detach() for t in state.values()], *cpu_inputs)
    cuda = torch.device("cuda", 0)
    for node in gm.graph.nodes:
        node.args = _on_device(node.args, cuda)
        node.kwargs = _on_device(node.kwargs, cuda)
    gm.recompile()
    mode = FakeTensorMode()
    with mode:
        example = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=cuda)
                   for t in list(state.values()) + cpu_inputs]
    placeholders = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    roles = {}
    for placeholder, name in zip(placeholders, names + list(inputs)):
        roles[placeholder] = state_role(name, state[name]) if name in state else inputs[name][0]
    return gm, example, roles


def state_role(name: str, tensor) -> str:
    """The role of a parameter or buffer: ``weight:<name>``, or for an integer buffer (BERT's
    ``position_ids``, an arange) ``indices:<n>``, n one past its largest value: a kernel
    reading it gathers rows below n, so its trials draw indices there."""
    import torch
    if tensor.is_floating_point() or tensor.dtype == torch.bool or not tensor.numel() or int(tensor.min()) < 0:
        return f"weight:{name}"
    return f"indices:{int(tensor.max()) + 1}"


def trace_backward(spec, target: str = "h100"):
    """(ATen FX graph of the model's training backward on the CUDA device; fake CUDA example
    inputs; {placeholder name: role}), as aot_autograd makes it for Inductor: the joint
    forward-backward graph is traced with Inductor's decompositions (``make_fx`` of
    ``torch.autograd.grad`` over ``functional_call``, attention as in ``trace_model``), and
    Inductor's ``partition_fn`` (joint-graph passes, then the min-cut rematerialisation
    partitioner) splits it. The backward's inputs are the parameters and model inputs it
    reads (their forward roles), the activations the forward saves (``saved:<node>``) and the
    incoming gradient of the output (``gradient``)."""
    import torch
    from torch._inductor.compile_fx import partition_fn
    from torch._inductor.decomposition import select_decomp_table
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from builders.inductor.cuda_attention import cuda_attention_mode
    from builders.inductor.cuda_lowering import convolution_decompositions
    from builders.inductor.models import build_block

    module, inputs = build_block(spec)
    state = dict(list(module.named_parameters()) + list(module.named_buffers()))
    names = list(state)
    primals = [t.detach() for t in state.values()] + [torch.zeros(shape, dtype=dtype)
                                                      for role, shape, dtype in inputs.values()]
    with FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad(), cuda_attention_mode():
        out = torch.func.functional_call(module, dict(zip(names, primals)), tuple(primals[len(names):]))
    tangent = torch.zeros(out.shape, dtype=out.dtype)

    trainable = len(dict(module.named_parameters()))  # buffers (rotary frequencies, BN statistics) are not

    def joint(primals, tangents):
        primals = [p.detach().requires_grad_(p.is_floating_point() and not trainable <= i < len(names))
                   for i, p in enumerate(primals)]
        out = torch.func.functional_call(module, dict(zip(names, primals[:len(names)])),
                                         tuple(primals[len(names):]))
        return (out, *torch.autograd.grad(out, [p for p in primals if p.requires_grad], tangents))

    with torch.enable_grad(), cuda_attention_mode():
        gm = make_fx(joint, tracing_mode="fake", decomposition_table={
            **select_decomp_table(), **convolution_decompositions()})(primals, [tangent])
    _to_cuda(gm)
    with codegen_only(TARGETS[target]):
        _, backward = partition_fn(gm, None, num_fwd_outputs=1)
    example = _to_cuda(backward)
    forward_roles = [state_role(n, t) for n, t in state.items()] + [role for role, _, _ in inputs.values()]
    joint_nodes = {n.name: n for n in gm.graph.nodes}
    roles = {}
    for node in backward.graph.nodes:
        if node.op == "placeholder":
            roles[node.name] = (forward_roles[int(node.name.split("_")[1]) - 1] if node.name.startswith("primals_")
                                else "gradient" if node.name.startswith("tangents_")
                                else _saved_role(joint_nodes.get(node.name), forward_roles))
        elif node.op == "call_function":  # Inductor names its kernels after these (descriptive names)
            node.meta.setdefault("original_aten", node.target)
    return backward, example, roles


VIEW_TARGETS = ("slice", "view", "expand", "unsqueeze", "squeeze", "select", "reshape", "clone", "permute",
                "_to_copy", "convert_element_type", "alias")


def _saved_role(node, forward_roles: list) -> str:
    """The role of an activation the forward saves for the backward: ``indices:<n>`` when it
    is a view of a model input or buffer of indices (BERT's sliced position ids), else
    ``saved:<node>``."""
    current = node
    while current is not None and current.op == "call_function" and \
            (str(current.target).split(".") + [""])[1] in VIEW_TARGETS:  # aten.slice.Tensor
        current = current.args[0] if current.args and hasattr(current.args[0], "op") else None
    if current is not None and current.op == "placeholder" and current.name.startswith("primals_"):
        role = forward_roles[int(current.name.split("_")[1]) - 1]
        if role.startswith("indices:"):
            return role
    return f"saved:{node.name}" if node is not None else "saved"


def _to_cuda(gm) -> list:
    """Makes every device ``gm`` names ``cuda:0`` and every value's metadata a fake CUDA
    tensor of the same layout (made, not propagated: a CPU-only torch cannot run some
    decompositions over fake CUDA tensors); returns the placeholders' values."""
    import torch
    import torch.utils._pytree as pytree
    from torch._subclasses.fake_tensor import FakeTensorMode

    cuda = torch.device("cuda", 0)
    mode = FakeTensorMode(allow_non_fake_inputs=True)

    def on_cuda(value):
        if not isinstance(value, torch.Tensor):
            return value
        with mode:
            return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype,
                                       device=cuda if value.device.type == "cpu" else value.device)

    for node in gm.graph.nodes:
        node.args, node.kwargs = _on_device(node.args, cuda), _on_device(node.kwargs, cuda)
        if "val" in node.meta:
            node.meta["val"] = pytree.tree_map(on_cuda, node.meta["val"])
    gm.recompile()
    return [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]


def _on_device(value, device):
    """``value`` with every torch.device in it replaced by ``device``."""
    import torch
    if isinstance(value, torch.device):
        return device
    if isinstance(value, (list, tuple)):
        return type(value)(_on_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _on_device(v, device) for k, v in value.items()}
    return value


def capture_model(spec, out_dir, target: str = "h100") -> dict:
    """Capture every Triton kernel of ``spec``'s forward (or backward) into ``out_dir/<model>/<kernel>/``;
    returns the model's summary (kernels kept, kernels left out with reasons, seconds)."""
    import torch

    from builders.inductor.builder import CAPTURE_VERSION

    start = time.time()
    shutil.rmtree(Path(out_dir) / spec.name, ignore_errors=True)  # a capture again replaces the model's kernels
    gm, example, roles = trace_backward(spec, target) if spec.backward else trace_model(spec)
    # Inductor numbers its graph inputs arg0_1, ...: the same order as make_fx's placeholders
    recorder = inductor_kernels(gm, example, target, spec.backward)
    graph = recorder.graph
    graph_roles = {}
    for (_, role), node in zip(roles.items(), [n for n in graph.module.graph.nodes if n.op == "placeholder"]):
        graph_roles[node.name] = role
    kept, skipped = [], {}
    for name, call in recorder.calls.items():
        source = recorder.sources.get(name)
        folder = Path(out_dir) / spec.name / name
        try:
            if source is None:
                raise ValueError("its source was not recorded")
            call.params = [p for p in _params(source, name) if p not in _constexprs(source, name)]
            if len(call.params) != len(call.call_args):
                raise ValueError(f"the kernel takes {call.params} but is called with {call.call_args}")
            with codegen_only(TARGETS[target]):  # the kernel module is imported to read its configs
                heuristic, configs, meta = autotune_configs_for(source, name)
            mutated = [a for a in meta.get("mutated_arg_names", []) if not a.startswith("in_out_ptr")]
            if any(a not in call.writes or a in call.reads for a in mutated):
                raise ValueError(f"the kernel mutates {mutated}")
            # the rest are accumulators a scatter-add adds into (an embedding's gradient)
            described = describe_kernel(graph, call, graph_roles, spec.name, recorder.nodes.get(name, ()), mutated)
            check_reference_size(described["buffers"])
            grid = grid_expressions(meta, _params(source, name))
            check_grid(meta, grid, described["numels"], configs)
            write_kernel(folder, name, spec.name, described, source, plain_kernel(source, name),
                         heuristic, configs, grid, spec.dtype)
            check_reference(folder)
            kept.append(name)
        except Exception as exc:  # a kernel we cannot describe is left out, with its reason
            skipped[name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            shutil.rmtree(folder, ignore_errors=True)  # a build reads every folder it finds
    summary = {"model": spec.name, "graph": "backward" if spec.backward else "forward", "kernels": kept, "skipped": skipped, "target": target,
               "torch": torch.__version__, "seconds": round(time.time() - start, 1),
               "capture_version": CAPTURE_VERSION,
               "extern_kernels": sorted(set(re.findall(r"extern_kernels\.(\w+)", recorder.wrapper or ""))),
               "aten_fallbacks": sorted(set(re.findall(r"^[^#\n]*torch\.ops\.aten\.(\w+)\.", recorder.wrapper or "",
                                                       re.MULTILINE)))}
    (Path(out_dir) / spec.name).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / spec.name / "capture.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def _params(source: str, name: str) -> list:
    tree = ast.parse(source)
    [fn] = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == name]
    return [a.arg for a in fn.args.args]


def _constexprs(source: str, name: str) -> set:
    tree = ast.parse(source)
    [fn] = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == name]
    return {a.arg for a in fn.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}


def autotune_configs_for(source: str, name: str) -> tuple:
    """autotune_configs with each config's keys cut to the kernel's own constexpr parameters
    (as Inductor's autotuner drops XBLOCK when the kernel has none), then made unique."""
    heuristic, configs, meta = autotune_configs(source)
    params = _constexprs(source, name)
    unique = {}
    for entry in configs:
        config = {k: v for k, v in entry["config"].items() if k in params or k in ("num_warps", "num_stages")}
        key = json.dumps(config, sort_keys=True)
        lists = unique.setdefault(key, {"config": config, "lists": []})["lists"]
        lists.extend(x for x in entry["lists"] if x not in lists)
    return heuristic, list(unique.values()), meta


def check_reference(folder: Path) -> None:
    """The reference module loads and evaluates, with its error scale, on one normal draw."""
    import numpy as np

    from dataset_spec.model import Problem
    from dataset_spec.ops import get_op

    call = json.loads((folder / "call.json").read_text())
    problem = Problem.from_json(json.dumps(dict(call["problem"], params=dict(
        call["problem"]["params"], reference_source=(folder / "reference.py").read_text()))))
    rng = np.random.default_rng(0)
    inputs = {}
    for buffer in problem.buffers:
        if buffer.role in ("in", "inout"):
            if buffer.init and buffer.init.kind == "randint":
                inputs[buffer.name] = rng.integers(buffer.init.params["low"], buffer.init.params["high"],
                                                   buffer.shape).astype(np.float64)
            else:
                inputs[buffer.name] = rng.standard_normal(buffer.shape)
    op = get_op("custom")
    reference = op.reference(inputs, problem)
    op.bounds(inputs, problem, reference)


def capture_models(models: str, out_dir, target: str = "h100") -> list:
    """Capture each of the comma-separated ``models`` (models.ModelSpec.parse; ``library``
    stands for library_models.dataset_specs) into ``out_dir``; returns their summaries."""
    from builders.inductor.library_models import dataset_specs
    from builders.inductor.models import ModelSpec
    specs = []
    texts = [m.strip() for m in models.split(",") if m.strip()]
    texts = [spec for text in texts for spec in (dataset_specs() if text == "library" else [text])]
    for text in texts:
        try:
            specs.append(ModelSpec.parse(text))
        except ValueError as exc:
            from builders.inductor.builder import CaptureError
            raise CaptureError(f"--models: {exc}") from None
    return [capture_model(spec, out_dir, target) for spec in specs]
