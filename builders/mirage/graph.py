"""Parse Mirage muGraph JSON files into plain dataclasses, checking what the lowering relies on.

A file is a JSON list of muGraphs; a muGraph is a list of kernel-level operators
(``kn_*``); a ``kn_customized_op`` carries a thread-block graph (``bgraph``) of ``tb_*``
operators. ``load_file`` returns one ``MuGraph`` or one ``MuGraphError`` per list element,
so one bad muGraph never hides the others; a file that is not a muGraph list raises
``MuGraphFileError``. Both messages name the file, and muGraph errors the index and op.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from dataset_spec.errors import PtxdsError
from dataset_spec.mugraph import RENAMED_OPS

# Mirage's data_type codes for half precision: 921 in the older DataType enum of
# include/mirage/type.h, 941 in the newer one (which renumbered every type).
FLOAT16_CODES = (921, 941)
# the other codes of either enum, so a rejection names the type the file meant
DTYPE_NAMES = {900: "int8 (older enum)", 910: "uint16 (older enum)", 920: "bfloat16 (older enum) or int4 (newer)",
               930: "float32 (older enum) or float8 (newer)", 935: "int8 (newer enum)",
               940: "float64 (older enum) or bfloat16 (newer)", 945: "uint16 (newer enum)",
               950: "float32 (newer enum)", 960: "float64 (newer enum)", 999: "unknown"}
AXES = ("x", "y", "z")

KN_OPS = ("kn_input_op", "kn_output_op", "kn_customized_op", "kn_matmul_op", "kn_exp_op",
          "kn_silu_op", "kn_add_op", "kn_mul_op", "kn_div_op")
TB_OPS = ("tb_input_op", "tb_output_op", "tb_matmul_op", "tb_exp_op", "tb_silu_op", "tb_add_op",
          "tb_mul_op", "tb_div_op", "tb_rms_norm_op", "tb_accum_nored_op", "tb_accum_red_ld_sum_op",
          "tb_accum_redtox_ld_sum_op", "tb_accum_red_ld_rms_op")
ACCUM_OPS = ("tb_accum_nored_op", "tb_accum_red_ld_sum_op", "tb_accum_redtox_ld_sum_op",
             "tb_accum_red_ld_rms_op")
UNARY = ("exp", "silu")
BINARY = ("add", "mul", "div")


def broadcast_shape(a: tuple, b: tuple):
    """numpy's broadcast of two shapes (aligned from the right), or None."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.insert(0, max(x, y))
    return tuple(out)


def broadcast_strides(shape: tuple, out: tuple) -> list:
    """Element strides of row-major ``shape`` read at each index of ``out``: 0 where
    ``shape`` broadcasts (a missing or size-1 dim)."""
    strides, step = [0] * len(out), 1
    for i in range(1, len(shape) + 1):
        if shape[-i] != 1:
            strides[-i] = step
        step *= shape[-i]
    return strides


class MuGraphFileError(PtxdsError, ValueError):
    """The file is not a list of muGraphs."""


class MuGraphError(PtxdsError, ValueError):
    """One muGraph cannot be lowered; the message names the file, the index and the op."""

    def __init__(self, file: str, index: int, op: str, reason: str):
        super().__init__(f"{file}: muGraph {index}: op {op}: {reason}")
        self.file, self.index, self.op, self.reason = file, index, op, reason


@dataclass(frozen=True)
class Tensor:
    guid: int
    shape: tuple
    after_accum: bool = False


@dataclass
class TbOp:
    """One thread-block operator. ``kind`` drops the ``tb_`` and ``_op`` affixes."""
    kind: str
    inputs: list
    outputs: list
    dtensor: Optional[Tensor] = None  # the device tensor of tb_input / tb_output
    dim_map: dict = field(default_factory=dict)  # input_map / output_map: axis -> dim or -1
    forloop_dim: int = -1


@dataclass
class BlockGraph:
    grid: tuple
    block: tuple
    forloop_range: int
    reduction_dimx: int
    smem_size: int
    ops: list


@dataclass
class KnOp:
    """One kernel-level operator; ``bgraph`` only for ``customized``."""
    kind: str
    inputs: list
    outputs: list
    bgraph: Optional[BlockGraph] = None


@dataclass
class MuGraph:
    file: str
    index: int
    inputs: list   # Tensors of kn_input_op, in file order
    outputs: list  # Tensors of kn_output_op
    ops: list      # KnOps other than input/output, in file order

    def knobs(self) -> dict:
        """The schedule as plain data, for the row's ``variant``."""
        kernels = []
        for op in self.ops:
            if op.bgraph is None:
                kernels.append({"op": f"kn_{op.kind}_op",
                                "inputs": [list(t.shape) for t in op.inputs]})
                continue
            g = op.bgraph
            kernels.append({
                "op": "kn_customized_op", "grid": list(g.grid), "block": list(g.block),
                "forloop_range": g.forloop_range, "reduction_dimx": g.reduction_dimx,
                "smem_size": g.smem_size,
                "input_maps": [_map_knob(t) for t in g.ops if t.kind == "input"],
                "output_maps": [_map_knob(t) for t in g.ops if t.kind == "output"],
                "tb_ops": [f"tb_{t.kind}_op" for t in g.ops if t.kind not in ("input", "output")],
            })
        return {"mugraph": self.index, "kernels": kernels}


def _map_knob(op: TbOp) -> dict:
    knob = {"tensor": list(op.dtensor.shape), "map": dict(op.dim_map)}
    if op.kind == "input":
        knob["forloop_dim"] = op.forloop_dim
        knob["tile"] = list(op.outputs[0].shape)
    else:
        knob["tile"] = list(op.inputs[0].shape)
    return knob


# ----------------------------------------------------------------------------- loading

def load_file(path) -> list:
    """One MuGraph or MuGraphError per element of the file's list."""
    path = Path(path)
    name = path.name
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise MuGraphFileError(f"{name}: cannot read: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MuGraphFileError(f"{name}: not JSON: {exc}") from None
    if not isinstance(data, list) or not data or not all(isinstance(g, list) for g in data):
        raise MuGraphFileError(f"{name}: not a muGraph list (expected a JSON list of lists of "
                               f"kn_* operators, got {_describe(data)})")
    graphs = []
    for index, raw in enumerate(data):
        try:
            graphs.append(parse_mugraph(raw, name, index))
        except MuGraphError as exc:
            graphs.append(exc)
    return graphs


def _describe(data) -> str:
    if isinstance(data, list):
        return "an empty list" if not data else f"a list of {type(data[0]).__name__}"
    return f"a JSON {type(data).__name__}"


def parse_mugraph(raw: list, file: str, index: int) -> MuGraph:
    inputs, outputs, ops = [], [], []
    for position, op in enumerate(raw):
        op_type = op.get("op_type", "?") if isinstance(op, dict) else "?"

        def fail(reason, op_type=op_type):
            raise MuGraphError(file, index, op_type, reason)

        if not isinstance(op, dict):
            fail(f"operator {position} is not a JSON object")
        if op_type not in KN_OPS:
            fail(f"not supported by the lowering (supported kernel ops: {', '.join(KN_OPS)})")
        try:
            if op_type == "kn_input_op":
                tensor = _tensor(op["output_tensors"][0])
                _check_contiguous(tensor, op.get("input_strides"), fail)
                inputs.append(tensor)
            elif op_type == "kn_output_op":
                tensor = _tensor(op["input_tensors"][0])
                _check_contiguous(tensor, op.get("output_strides"), fail)
                outputs.append(tensor)
            elif op_type == "kn_customized_op":
                ops.append(KnOp("customized", [_tensor(t) for t in op["input_tensors"]],
                                [_tensor(t) for t in op["output_tensors"]],
                                _block_graph(op["bgraph"], fail)))
            else:
                ops.append(KnOp(op_type[3:-3], [_tensor(t) for t in op["input_tensors"]],
                                [_tensor(t) for t in op["output_tensors"]]))
        except (KeyError, IndexError, TypeError) as exc:
            fail(f"malformed operator ({type(exc).__name__}: {exc})")
        except _TbError as exc:
            raise MuGraphError(file, index, exc.op, exc.reason) from None
    if not inputs or len(outputs) != 1:
        raise MuGraphError(file, index, "kn_output_op",
                           f"needs at least one input and exactly one output, got "
                           f"{len(inputs)} and {len(outputs)}")
    graph = MuGraph(file, index, inputs, outputs, ops)
    _check_kernel_ops(graph)
    return graph


class _TbError(Exception):
    def __init__(self, op: str, reason: str):
        super().__init__(reason)
        self.op, self.reason = op, reason


def _tensor(raw: dict, after_accum=None) -> Tensor:
    dtype = raw.get("data_type")
    if dtype not in FLOAT16_CODES:
        meaning = DTYPE_NAMES.get(dtype, "not a Mirage data type")
        raise _TbError("tensor", f"tensor {raw.get('guid')} has data_type {dtype} ({meaning}); only "
                       f"float16 (921 in Mirage's older type enum, 941 in the newer) is supported")
    shape = tuple(int(d) for d in raw["dim"][:int(raw["num_dims"])])
    if not shape or any(d < 1 for d in shape):
        raise _TbError("tensor", f"tensor {raw.get('guid')} has shape {shape}")
    return Tensor(int(raw["guid"]), shape, bool(raw.get("after_accum", False)))


def _check_contiguous(tensor: Tensor, strides, fail) -> None:
    expected, step = [], 1
    for d in reversed(tensor.shape):
        expected.insert(0, step)
        step *= d
    if strides is not None and list(strides) != expected:
        fail(f"tensor {tensor.guid} {tensor.shape} has strides {strides}; only row-major "
             f"contiguous tensors ({expected}) are supported")


def _dim3(raw: dict) -> tuple:
    return tuple(int(raw[a]) for a in AXES)


def _block_graph(raw: dict, fail) -> BlockGraph:
    ops = []
    for t in raw["operators"]:
        kind = t.get("op_type", "?")
        kind = RENAMED_OPS.get(kind, kind)
        if kind not in TB_OPS:
            raise _TbError(kind, f"not supported by the lowering (supported block ops: {', '.join(TB_OPS)})")
        op = TbOp(kind[3:-3], [_tensor(x) for x in t.get("input_tensors", [])],
                  [_tensor(x) for x in t.get("output_tensors", [])])
        if kind == "tb_input_op":
            op.dtensor, op.dim_map, op.forloop_dim = (_tensor(t["dtensor"]), dict(t["input_map"]),
                                                      int(t["forloop_dim"]))
        elif kind == "tb_output_op":
            op.dtensor, op.dim_map = _tensor(t["dtensor"]), dict(t["output_map"])
        ops.append(op)
    graph = BlockGraph(_dim3(raw["grid_dim"]), _dim3(raw["block_dim"]), int(raw["forloop_range"]),
                       int(raw.get("reduction_dimx", 64)), int(raw.get("smem_offset", 0)), ops)
    _check_block_graph(graph)
    return graph


# ----------------------------------------------------------------------------- checks

def _check_block_graph(g: BlockGraph) -> None:
    """Shapes and maps must agree, or the lowering would read or write the wrong tile."""
    if g.block[1:] != (1, 1) or g.block[0] % 32 or not 32 <= g.block[0] <= 1024:
        raise _TbError("kn_customized_op", f"block_dim {g.block}: only 1-D blocks of whole warps are supported")
    if g.forloop_range < 1:
        raise _TbError("kn_customized_op", f"forloop_range {g.forloop_range} < 1")
    for op in g.ops:
        name = f"tb_{op.kind}_op"
        if op.kind == "input":
            _check_map(name, op.dtensor.shape, op.outputs[0].shape, op.dim_map, g, op.forloop_dim)
        elif op.kind == "output":
            _check_map(name, op.dtensor.shape, op.inputs[0].shape, op.dim_map, g, -1)
            if not op.inputs[0].after_accum:
                raise _TbError(name, "stores a tensor that is not the result of an accumulation")
        elif op.kind == "matmul":
            a, b = op.inputs[0].shape, op.inputs[1].shape
            want = a[:-1] + b[-1:]
            if len(a) != len(b) or a[:-2] != b[:-2] or a[-1] != b[-2] or op.outputs[0].shape != want:
                raise _TbError(name, f"shapes {a} @ {b} -> {op.outputs[0].shape} do not form a matmul")
        elif op.kind in UNARY or op.kind == "rms_norm":
            if op.outputs[0].shape != op.inputs[0].shape:
                raise _TbError(name, f"output shape {op.outputs[0].shape} != input {op.inputs[0].shape}")
        elif op.kind in BINARY:
            a, b = op.inputs[0].shape, op.inputs[1].shape
            if broadcast_shape(a, b) != op.outputs[0].shape:
                raise _TbError(name, f"shapes {a} and {b} do not broadcast to {op.outputs[0].shape}")
        elif op.kind.startswith("accum"):
            x, y = op.inputs[0].shape, op.outputs[0].shape
            last = {"accum_nored": x[-1], "accum_red_ld_sum": 1, "accum_red_ld_rms": 1,
                    "accum_redtox_ld_sum": g.reduction_dimx}[op.kind]
            if y != x[:-1] + (last,) or x[-1] % last:
                raise _TbError(name, f"reduces {x} to {y}; expected {x[:-1] + (last,)}")


def _check_map(name, dshape, tile, dim_map, g: BlockGraph, forloop_dim) -> None:
    if len(dshape) != len(tile):
        raise _TbError(name, f"tile {tile} and tensor {dshape} differ in rank")
    expected = list(dshape)
    used = []
    for axis, extent in zip(AXES, g.grid):
        dim = int(dim_map.get(axis, -1))
        if dim >= len(dshape):
            raise _TbError(name, f"map {dim_map} names dim {dim} of a rank-{len(dshape)} tensor")
        if dim >= 0:
            if dim in used:
                raise _TbError(name, f"map {dim_map} partitions dim {dim} twice")
            used.append(dim)
            expected[dim] //= extent
        elif extent > 1 and name == "tb_output_op":
            raise _TbError(name, f"grid axis {axis} ({extent} blocks) is not mapped: blocks would race")
    if forloop_dim >= 0:
        if forloop_dim >= len(dshape):
            raise _TbError(name, f"forloop_dim {forloop_dim} of a rank-{len(dshape)} tensor")
        expected[forloop_dim] //= g.forloop_range
    if tuple(expected) != tuple(tile):
        raise _TbError(name, f"tile {tile} does not match tensor {dshape} split by map {dim_map}, "
                       f"forloop_dim {forloop_dim} (expected {tuple(expected)})")
    for d, (whole, part) in enumerate(zip(dshape, tile)):
        parts = whole // part if part else 0
        if part * parts != whole:
            raise _TbError(name, f"dim {d} of {dshape} is not a multiple of the tile {tile}")


def _check_kernel_ops(graph: MuGraph) -> None:
    """Every tensor a kernel reads exists before it runs (the list is in launch order)."""
    known = {t.guid for t in graph.inputs}
    for op in graph.ops:
        name = f"kn_{op.kind}_op"
        for t in op.inputs:
            if t.guid not in known:
                raise MuGraphError(graph.file, graph.index, name, f"reads tensor {t.guid} before any op writes it")
        if op.kind in ("matmul",):
            a, b = op.inputs[0].shape, op.inputs[1].shape
            if len(a) != len(b) or a[:-2] != b[:-2] or a[-1] != b[-2]:
                raise MuGraphError(graph.file, graph.index, name, f"shapes {a} @ {b} do not form a matmul")
        if op.kind in BINARY:
            a, b = op.inputs[0].shape, op.inputs[1].shape
            if broadcast_shape(a, b) != op.outputs[0].shape:
                raise MuGraphError(graph.file, graph.index, name,
                                   f"shapes {a} and {b} do not broadcast to {op.outputs[0].shape}")
        known.update(t.guid for t in op.outputs)
    if graph.outputs[0].guid not in known:
        raise MuGraphError(graph.file, graph.index, "kn_output_op", "its tensor is never written")
