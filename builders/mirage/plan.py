"""Lower a parsed muGraph to a launch plan: device buffers, and per kernel its grid, block,
shared-memory layout and an ordered list of steps in three phases (``pre``: before the
for-loop, ``loop``: every iteration, ``post``: after it).

The plan is the single reading of the muGraph's semantics: ``interpret.py`` executes it
with numpy and ``cuda.py`` prints it as CUDA C, so a map or loop mistake shows up on the
CPU before any GPU run. Ambiguous readings are written down in docs/mirage.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from builders.base import MAX_DYNAMIC_SMEM

from .graph import AXES, BINARY, UNARY, MuGraph, MuGraphError

SMEM_ALIGN = 16           # ldmatrix and 16-byte cp.async need 16-byte aligned rows
SMEM_LIMITS = {arch: MAX_DYNAMIC_SMEM[arch] for arch in ("sm_80", "sm_90a")}  # the targets' opt-in limits
MAX_STAGES = 3            # shared-memory stages of a pipelined for-loop tile load


@dataclass(frozen=True)
class Tile:
    """Where one block's tile lies in a device tensor: per tensor dim, the grid axis that
    partitions it (or None) and whether the for-loop walks it."""
    buffer: str
    tensor_shape: tuple
    tile_shape: tuple
    axis_of_dim: tuple          # per dim: "x"/"y"/"z" or None
    forloop_dim: int = -1
    forloop_range: int = 1

    def starts(self, block: tuple, iteration: int = 0) -> tuple:
        """First element of the tile, per dim, for block (bx, by, bz) and a loop iteration."""
        out = []
        for d, (axis, size) in enumerate(zip(self.axis_of_dim, self.tile_shape)):
            start = 0
            if axis is not None:
                span = size * (self.forloop_range if d == self.forloop_dim else 1)
                start += block[AXES.index(axis)] * span
            if d == self.forloop_dim:
                start += iteration * size
            out.append(start)
        return tuple(out)

    @property
    def cp_async_ok(self) -> bool:
        """Whether every tile row is whole 16-byte chunks at 16-byte aligned addresses."""
        strides, step = [], 1
        for d in reversed(self.tensor_shape):
            strides.insert(0, step)
            step *= d
        return self.tile_shape[-1] % 8 == 0 and all(s % 8 == 0 for s in strides[:-1])


@dataclass
class SmemBuf:
    name: str
    shape: tuple
    dtype: str  # "half" or "float"
    offset: int = 0
    stages: int = 1  # copies of a pipelined load's tile, used round-robin by the for-loop

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * (2 if self.dtype == "half" else 4)

    @property
    def stage_bytes(self) -> int:
        """Bytes between two stages (one tile, rounded up to the alignment)."""
        return -(-self.nbytes // SMEM_ALIGN) * SMEM_ALIGN

    @property
    def footprint(self) -> int:
        return self.stage_bytes * self.stages


@dataclass
class Step:
    """One block-wide operation. ``op``: load, store, matmul, exp, silu, add, mul, div,
    rms_norm, zero, accum_nored, accum_red_ld_sum, accum_redtox_ld_sum, accum_red_ld_rms,
    finalize (accumulator -> half), finalize_rms (sqrt(sum / count) -> half)."""
    op: str
    phase: str
    inputs: tuple = ()
    outputs: tuple = ()
    tile: Optional[Tile] = None
    param: int = 0  # reduction_dimx (redtox) or element count (finalize_rms)


@dataclass
class KernelPlan:
    """One launch. ``kind`` is ``customized`` or a pre-defined op (matmul, exp, ...);
    ``params`` lists the device buffers in kernel-parameter order."""
    kind: str
    grid: tuple
    block: tuple
    params: list
    forloop_range: int = 1
    smem: dict = field(default_factory=dict)   # name -> SmemBuf
    steps: list = field(default_factory=list)
    smem_bytes: int = 0
    shapes: dict = field(default_factory=dict)  # buffer -> shape, for pre-defined ops
    stages: int = 1  # for-loop pipeline depth: tile loads run stages - 1 iterations ahead

    @property
    def pipelined_loads(self) -> list:
        """The for-loop's tile loads that run ahead of the compute (cp.async into
        ``stages`` round-robin buffers); empty when the loop is not pipelined."""
        return self.stageable_loads if self.stages > 1 else []

    @property
    def stageable_loads(self) -> list:
        """The for-loop's tile loads that 16-byte cp.async can copy (pipelining candidates)."""
        return [s for s in self.steps if s.op == "load" and s.phase == "loop" and s.tile.cp_async_ok]


@dataclass
class BufferPlan:
    name: str
    shape: tuple
    role: str  # in, out, scratch


@dataclass
class GraphPlan:
    buffers: list
    kernels: list

    def buffer(self, name: str) -> BufferPlan:
        return next(b for b in self.buffers if b.name == name)


def lower(graph: MuGraph, input_names: list, output_name: str, arch: str = "sm_80") -> GraphPlan:
    """The launch plan of ``graph`` for ``arch`` (whose shared-memory limit decides the
    for-loop's pipeline depth); inputs get ``input_names`` (file order), the output
    ``output_name``, intermediate device tensors ``scratch0``, ``scratch1``, ..."""
    if arch not in SMEM_LIMITS:
        raise ValueError(f"mirage lowering: unknown arch {arch!r}; use one of {', '.join(SMEM_LIMITS)}")
    if len(input_names) != len(graph.inputs):
        raise MuGraphError(graph.file, graph.index, "kn_input_op",
                           f"{len(graph.inputs)} inputs, the group's operator has {len(input_names)}")
    names, buffers = {}, []
    for tensor, name in zip(graph.inputs, input_names):
        names[tensor.guid] = name
        buffers.append(BufferPlan(name, tensor.shape, "in"))
    out_guid = graph.outputs[0].guid
    kernels = []
    for op in graph.ops:
        for t in op.outputs:
            if t.guid in names:
                raise MuGraphError(graph.file, graph.index, f"kn_{op.kind}_op", f"writes tensor {t.guid} twice")
            name = output_name if t.guid == out_guid else f"scratch{sum(b.role == 'scratch' for b in buffers)}"
            names[t.guid] = name
            buffers.append(BufferPlan(name, t.shape, "out" if t.guid == out_guid else "scratch"))
        if op.kind == "customized":
            kernels.append(_lower_customized(graph, op, names, SMEM_LIMITS[arch]))
        else:
            kernels.append(_lower_predefined(graph, op, names))
    return GraphPlan(buffers, kernels)


# ----------------------------------------------------------------------------- kn_* ops

ELEMENTWISE_BLOCK = 256
MATMUL_BLOCK = 128


def _lower_predefined(graph: MuGraph, op, names: dict) -> KernelPlan:
    params = [names[t.guid] for t in op.inputs] + [names[t.guid] for t in op.outputs]
    shapes = {names[t.guid]: t.shape for t in op.inputs + op.outputs}
    out = op.outputs[0].shape
    if op.kind == "matmul":
        a, b = op.inputs[0].shape, op.inputs[1].shape
        batch = 1
        for d in a[:-2]:
            batch *= d
        m, n = a[-2], b[-1]
        if out != a[:-1] + b[-1:]:
            raise MuGraphError(graph.file, graph.index, "kn_matmul_op", f"output {out} != {a[:-1] + b[-1:]}")
        grid = (-(-n // 64), -(-m // 64), batch)
        return KernelPlan("matmul", grid, (MATMUL_BLOCK, 1, 1), params, shapes=shapes)
    if op.kind in UNARY + BINARY:
        if op.kind in UNARY and out != op.inputs[0].shape:
            raise MuGraphError(graph.file, graph.index, f"kn_{op.kind}_op", f"output {out} != input {op.inputs[0].shape}")
        numel = 1
        for d in out:
            numel *= d
        grid = (min(-(-numel // ELEMENTWISE_BLOCK), 1024), 1, 1)
        return KernelPlan(op.kind, grid, (ELEMENTWISE_BLOCK, 1, 1), params, shapes=shapes)
    raise MuGraphError(graph.file, graph.index, f"kn_{op.kind}_op", "not supported by the lowering")


# ----------------------------------------------------------------------------- kn_customized_op

def _lower_customized(graph: MuGraph, op, names: dict, smem_limit: int) -> KernelPlan:
    g = op.bgraph
    F = g.forloop_range
    kernel = KernelPlan("customized", g.grid, g.block, [], forloop_range=F)
    smem_of: dict = {}      # tb tensor guid -> smem buffer name
    phase_of: dict = {}     # smem buffer name -> phase that produces it
    pre, loop, post_finalize, post_ops, stores = [], [], [], [], []

    def fail(tb, reason):
        raise MuGraphError(graph.file, graph.index, f"tb_{tb.kind}_op", reason)

    def smem(tensor, dtype="half") -> str:
        name = f"s{len(kernel.smem)}"
        kernel.smem[name] = SmemBuf(name, tensor.shape if hasattr(tensor, "shape") else tensor, dtype)
        return name

    def source(tb, tensor) -> str:
        if tensor.guid not in smem_of:
            fail(tb, f"reads tensor {tensor.guid} before it is produced")
        return smem_of[tensor.guid]

    def use_param(buffer: str) -> None:
        if buffer not in kernel.params:
            kernel.params.append(buffer)

    for tb in g.ops:
        if tb.kind == "input":
            buffer = names.get(tb.dtensor.guid)
            if buffer is None:
                fail(tb, f"loads device tensor {tb.dtensor.guid}, which is not an input of this kernel")
            use_param(buffer)
            tile = _tile(buffer, tb.dtensor.shape, tb.outputs[0].shape, tb.dim_map, tb.forloop_dim, F)
            name = smem(tb.outputs[0])
            smem_of[tb.outputs[0].guid] = name
            phase = "loop" if tb.forloop_dim >= 0 else "pre"
            phase_of[name] = phase
            (loop if phase == "loop" else pre).append(Step("load", phase, (), (name,), tile))
        elif tb.kind == "output":
            buffer = names[tb.dtensor.guid]
            use_param(buffer)
            src = source(tb, tb.inputs[0])
            tile = _tile(buffer, tb.dtensor.shape, tb.inputs[0].shape, tb.dim_map, -1, 1)
            stores.append(Step("store", "post", (src,), (), tile))
        elif tb.kind.startswith("accum"):
            x = source(tb, tb.inputs[0])
            y = tb.outputs[0]
            if phase_of[x] == "post":
                fail(tb, "accumulates a tensor computed after the for-loop")
            if tb.kind == "accum_nored" and F == 1:
                smem_of[y.guid] = x  # one iteration: the sum is the tensor itself
                continue
            acc = smem(y.shape, "float")
            pre.append(Step("zero", "pre", (), (acc,)))
            loop.append(Step(tb.kind, "loop", (x,), (acc,), param=g.reduction_dimx))
            out = smem(y)
            smem_of[y.guid] = out
            phase_of[out] = "post"
            if tb.kind == "accum_red_ld_rms":
                count = tb.inputs[0].shape[-1] * F
                post_finalize.append(Step("finalize_rms", "post", (acc,), (out,), param=count))
            else:
                post_finalize.append(Step("finalize", "post", (acc,), (out,)))
        elif tb.kind in ("matmul", "rms_norm") + UNARY + BINARY:
            srcs = tuple(source(tb, t) for t in tb.inputs)
            phases = {phase_of[s] for s in srcs}
            after = any(t.after_accum for t in tb.inputs) or "post" in phases
            if after and F > 1 and "loop" in phases:
                fail(tb, "mixes a per-iteration tile with an accumulated one after the for-loop")
            phase = "post" if after else "loop"
            out = smem(tb.outputs[0])
            smem_of[tb.outputs[0].guid] = out
            phase_of[out] = phase
            (post_ops if after else loop).append(Step(tb.kind, phase, srcs, (out,)))
        else:
            fail(tb, "not supported by the lowering")
    kernel.steps = pre + loop + post_finalize + post_ops + stores
    for step in stores:
        if phase_of[step.inputs[0]] == "loop" and F > 1:
            raise MuGraphError(graph.file, graph.index, "tb_output_op", "stores a per-iteration tile")
    kernel.params = [p for p in kernel.params if _is_input(p, op, names)] + \
                    [p for p in kernel.params if not _is_input(p, op, names)]
    kernel.smem_bytes = _allocate(kernel, smem_limit)
    if kernel.smem_bytes > smem_limit:
        raise MuGraphError(graph.file, graph.index, "kn_customized_op",
                           f"needs {kernel.smem_bytes} bytes of shared memory, more than {smem_limit}")
    _choose_stages(kernel, smem_limit)
    return kernel


def _choose_stages(kernel: KernelPlan, smem_limit: int) -> None:
    """The deepest pipeline (at most MAX_STAGES, at most the loop's iterations) whose
    staged tiles still fit the block's shared memory; none when even two do not fit."""
    staged = [kernel.smem[s.outputs[0]] for s in kernel.stageable_loads]
    if not staged or kernel.forloop_range < 2:
        return
    for stages in range(min(MAX_STAGES, kernel.forloop_range), 1, -1):
        for buf in staged:
            buf.stages = stages
        need = _allocate(kernel, smem_limit)
        if need <= smem_limit:
            kernel.stages, kernel.smem_bytes = stages, need
            return
    for buf in staged:
        buf.stages = 1
    kernel.smem_bytes = _allocate(kernel, smem_limit)


def _is_input(buffer: str, op, names: dict) -> bool:
    return any(names[t.guid] == buffer for t in op.inputs)


def _tile(buffer, tensor_shape, tile_shape, dim_map, forloop_dim, forloop_range) -> Tile:
    axis_of_dim = [None] * len(tensor_shape)
    for axis in AXES:
        dim = int(dim_map.get(axis, -1))
        if dim >= 0:
            axis_of_dim[dim] = axis
    return Tile(buffer, tuple(tensor_shape), tuple(tile_shape), tuple(axis_of_dim), forloop_dim,
                forloop_range)


def _allocate(kernel: KernelPlan, smem_limit: int = SMEM_LIMITS["sm_80"]) -> int:
    """Offsets for every shared buffer (all stages of a staged one, back to back). Buffers
    are placed one after the other, as Mirage does; when that exceeds the limit, a buffer
    reuses the space of buffers whose last use precedes its first definition (the loop body
    counts as live for its whole span; the pipeline's first loads are issued after the
    last step before the loop, so staged tiles need no earlier span)."""
    offset = 0
    for buf in kernel.smem.values():
        buf.offset = offset
        offset += buf.footprint
    if offset <= smem_limit:
        return offset
    return _allocate_by_liveness(kernel)


def _allocate_by_liveness(kernel: KernelPlan) -> int:
    first, last = {}, {}
    loop_steps = [i for i, s in enumerate(kernel.steps) if s.phase == "loop"]
    loop_span = (min(loop_steps), max(loop_steps)) if loop_steps else None
    for i, step in enumerate(kernel.steps):
        for name in step.inputs + step.outputs:
            first.setdefault(name, i)
            last[name] = i
    for name in list(first):
        if loop_span and kernel.forloop_range > 1:
            lo, hi = loop_span
            if first[name] <= hi and last[name] >= lo:  # live inside the loop: live for all of it
                first[name], last[name] = min(first[name], lo), max(last[name], hi)
    placed = []  # (start, end, first, last)
    top = 0
    for name in sorted(first, key=lambda n: first[n]):
        buf = kernel.smem[name]
        size = buf.footprint
        start, moved = 0, True
        while moved:  # first fit: bump past every time-overlapping buffer in the way
            moved = False
            for s, e, f, l in placed:
                overlaps_in_time = not (l < first[name] or f > last[name])
                if overlaps_in_time and start < e and s < start + size:
                    start, moved = e, True
        buf.offset = start
        placed.append((start, start + size, first[name], last[name]))
        top = max(top, start + size)
    return top
