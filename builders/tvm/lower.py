"""Lower a scheduled TIR module to CUDA C and a launch recipe, with TVM's own pipeline.

``lower`` runs the steps of ``tvm.tirx.build`` up to code generation (bind the target, the
default TIR pipeline, split host from device, finalise both), prints the device module as
CUDA C, and reads the launches from the IR: per kernel, grid and block from the device
function's ``thread_extent`` bindings, and the order, arguments and intermediate buffers
from the host function, which calls each kernel with ``call_ffi_kernel`` after
allocating the buffers that pass values between kernels. ``runtime_launches`` reads the
launch values the host passes to TVM's CUDA runtime at those calls (what TVM itself would
launch), for the test that compares the two.
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field

import tvm
import tvm.tirx as tx
from tvm.target import Target
from tvm.tirx.build import codegen_build, split_host_device_mods

AXES = ("x", "y", "z")


class LoweringError(RuntimeError):
    """TVM could not lower a schedule, or the lowered program is outside what a row can hold."""


@dataclass
class KernelLaunch:
    entry: str
    args: list                 # buffer names, in kernel-parameter order
    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)
    dynamic_smem: int = 0


@dataclass
class Lowered:
    cuda: str
    launches: list
    scratch: list = field(default_factory=list)   # (name, dtype, shape) of host-allocated buffers
    runtime: list = field(default_factory=list)   # per launch: {tag: value} the host passes to TVM's runtime


def _children(stmt):
    for name in ("seq", "body", "then_case", "else_case"):
        value = getattr(stmt, name, None)
        if value is None:
            continue
        if isinstance(value, tx.Stmt):
            yield value
        else:
            try:
                for item in value:
                    if isinstance(item, tx.Stmt):
                        yield item
            except TypeError:
                pass


def _walk(stmt):
    yield stmt
    for child in _children(stmt):
        yield from _walk(child)


def _thread_extents(func) -> dict:
    """{thread tag: extent} of a device function's ``thread_extent`` bindings."""
    extents = {}
    for stmt in _walk(func.body):
        if isinstance(stmt, tx.AttrStmt) and stmt.attr_key == "thread_extent":
            tag = stmt.node.thread_tag
            value = stmt.value
            if not isinstance(value, tx.IntImm):
                raise LoweringError(f"{tag} extent {value} is not a constant")
            if tag in extents and extents[tag] != int(value):
                raise LoweringError(f"{tag} bound to both {extents[tag]} and {int(value)}")
            extents[tag] = int(value)
    return extents


def _dims(extents: dict, prefix: str) -> tuple:
    return tuple(extents.get(f"{prefix}.{a}", 1) for a in AXES)


def _kernel_calls(host_mod):
    for func in host_mod.functions.values():
        for stmt in _walk(func.body):
            if isinstance(stmt, tx.Evaluate) and isinstance(stmt.value, tvm.ir.Call) \
                    and getattr(stmt.value.op, "name", "") == "tirx.call_ffi_kernel":
                yield stmt.value


def _allocations(host_mod) -> list:
    out = []
    for func in host_mod.functions.values():
        for stmt in _walk(func.body):
            if isinstance(stmt, tx.AllocBuffer):
                buf = stmt.buffer
                out.append((buf.name, str(buf.dtype), tuple(int(s) for s in buf.shape)))
    return out


def _launch_param_tags(call) -> list:
    attrs = call.attrs
    for key in ("launch_params", "launch_param_tags"):
        value = getattr(attrs, key, None)
        if value is not None:
            return [str(v) for v in value]
    raise LoweringError(f"no launch_params on {call}")


def _warp_buffers(device_mod) -> int:
    return sum(1 for func in device_mod.functions.values() for stmt in _walk(func.body)
               if isinstance(stmt, tx.AllocBuffer) and stmt.buffer.scope() == "warp")


def _lower_every_warp_buffer(device_mod, warp_buffers: int):
    """TVM 0.27's LowerWarpMemory lowers only the first warp-scope buffer of a statement
    sequence to per-thread registers (it hands the rest of the sequence to that buffer's
    rewriter and stops); a second warp buffer (mma.sync's A and B fragments beside the
    accumulator) would stay a whole-warp array in local memory. Each run lowers the next one,
    and the finalising passes run it once more; with at most one warp buffer this is a no-op."""
    for _ in range(warp_buffers - 1):
        device_mod = tx.transform.LowerWarpMemory()(device_mod)
    return device_mod


def _bound_lane_index(cuda: str, launches: list) -> str:
    """Each kernel's body starts by telling nvcc that threadIdx.x stays below the block's x
    extent. LowerWarpMemory turns a fragment's register index into
    ``(threadIdx.x * 8 + 256 * f + 4) / 256``, which TVM's canonical simplifier leaves as it
    is; without the bound nvcc cannot fold it to ``f`` either, and the fragments (indexed by
    it) go to local memory."""
    for launch in launches:
        head = re.compile(r"(__global__ void (?:__launch_bounds__\(\d+\) )?" + re.escape(launch.entry)
                          + r"\([^;{]*\) \{\n)")
        cuda, found = head.subn(lambda m: m.group(1) + f"  __builtin_assume(threadIdx.x < {launch.block[0]});\n",
                                cuda, count=1)
        if not found:  # TVM's codegen wrote the kernel's head in a form this does not know
            raise LoweringError(f"cannot find the head of kernel {launch.entry} in the CUDA source to bound threadIdx.x")
    return cuda


def lower(mod, target: Target, pass_config: dict | None = None) -> Lowered:
    """CUDA C and launches of a scheduled module ``mod`` (one PrimFunc ``main``);
    ``pass_config`` sets options of TVM's lowering passes (``tirx.use_async_copy``)."""
    host = Target("llvm" if tvm.runtime.enabled("llvm") else "c")
    target = target.with_host(host)
    # without options, the caller's pass context (TVM's default) applies, as before
    context = tvm.transform.PassContext(config=dict(pass_config)) if pass_config else contextlib.nullcontext()
    with context:
        mod = tx.transform.BindTarget(target)(mod)
        pipeline, finalize_host, finalize_device = tx.get_default_tir_pipeline(target)
        mod = pipeline(mod)
        host_mod, device_mods = split_host_device_mods(mod)
        if len(device_mods) != 1:
            raise LoweringError(f"expected one CUDA device module, got {len(device_mods)}")
        (device_target, device_mod), = device_mods.items()
        warp_buffers = _warp_buffers(device_mod)
        device_mod = _lower_every_warp_buffer(device_mod, warp_buffers)
        device_mod = finalize_device()(device_mod)
    cuda = codegen_build(device_mod, device_target).inspect_source()
    kernels = {gv.name_hint: func for gv, func in device_mod.functions.items()}
    launches, runtime = [], []
    for call in _kernel_calls(host_mod):
        entry = str(call.args[0].value)
        func = kernels.get(entry)
        if func is None:
            raise LoweringError(f"host calls {entry}, which the device module lacks")
        params = []
        for p in func.params:
            if not str(p.name).endswith("_ptr") or "handle" not in str(p.ty):
                raise LoweringError(f"{entry}: parameter {p.name} ({p.ty}) is not a buffer pointer")
            params.append(str(p.name)[:-len("_ptr")])
        extents = _thread_extents(func)
        tags = _launch_param_tags(call)
        values = [int(v) for v in call.args[1 + len(params):]]
        if len(values) != len(tags):
            raise LoweringError(f"{entry}: {len(values)} launch values for tags {tags}")
        passed = dict(zip(tags, values))
        runtime.append(passed)
        launches.append(KernelLaunch(entry, params, _dims(extents, "blockIdx"), _dims(extents, "threadIdx"),
                                     passed.get("tirx.use_dyn_shared_memory", 0)))
    if not launches:
        raise LoweringError("the lowered program launches no kernel")
    if warp_buffers > 1:
        cuda = _bound_lane_index(cuda, launches)
    return Lowered(cuda, launches, _allocations(host_mod), runtime)


def runtime_dims(passed: dict) -> tuple:
    """(grid, block) as TVM's CUDA runtime reads them from a kernel call's launch values."""
    return (tuple(passed.get(f"blockIdx.{a}", 1) for a in AXES),
            tuple(passed.get(f"threadIdx.{a}", 1) for a in AXES))
