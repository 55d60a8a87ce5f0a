"""Lower a TileLang program to CUDA C and a launch recipe, read from TileLang's compiled
artifact (``tilelang.lower``: no GPU, no compiler run).

The device module gives each kernel's parameters (buffer pointers, or ``grid_constant``
CUtensorMap descriptors) and the launch TileLang planned (``thread_extent``,
``dyn_shared_memory_buf``). The host module is the code TileLang's runtime would run: it
encodes each descriptor with ``__tvm_tensormap_create_tiled`` (the arguments of
``cuTensorMapEncodeTiled``) and calls each kernel with its arguments and launch values
(``tirx.kernel_launch_params``). The row's launches come from the host calls; ``lower``
checks them against the device module's plan, so a disagreement is a LoweringError, not a
wrong row.
"""
from __future__ import annotations

from dataclasses import dataclass, field

AXES = ("x", "y", "z")
TENSORMAP_CREATE = "__tvm_tensormap_create_tiled"
SET_DEVICE = "__tvm_set_device"


class LoweringError(RuntimeError):
    """TileLang's artifact is outside what a row can hold, or its host and device disagree."""


@dataclass
class KernelCall:
    entry: str
    args: list                  # per kernel parameter: ("buffer", name, None) or ("tensormap", name, encode dict)
    grid: tuple
    block: tuple
    dynamic_smem: int
    launch_values: dict = field(default_factory=dict)   # tag -> value, as the host passes them


@dataclass
class Lowered:
    cuda: str
    calls: list


def cuda_target(arch: str):
    from tilelang import tvm
    return tvm.target.Target({"kind": "cuda", "arch": arch})


def lower(func, arch: str) -> Lowered:
    """CUDA C and kernel calls of the TileLang PrimFunc ``func`` for ``arch``."""
    import tilelang
    target = cuda_target(arch)
    with target:   # TileLang's passes read the target from the context
        artifact = tilelang.lower(func, target=target)
    return Lowered(artifact.kernel_source, kernel_calls(artifact.host_mod, artifact.device_mod))


def _packed_calls(host_mod) -> list:
    from tilelang import tvm
    tx = tvm.tirx
    calls = []

    def visit(node):
        if isinstance(node, tx.Call) and getattr(node.op, "name", "") == "tirx.tvm_call_packed":
            calls.append(node)
    for func in host_mod.functions.values():
        tx.stmt_functor.post_order_visit(func.body, visit)
    return calls


def _int(value, what: str) -> int:
    from tilelang import tvm
    tx = tvm.tirx
    if not isinstance(value, tx.IntImm):
        raise LoweringError(f"{what} is {value}, not a constant")
    return int(value.value)


def tensormap_encode(args: list) -> dict:
    """The encode arguments of one ``__tvm_tensormap_create_tiled`` call, its name,
    descriptor and address left out: dtype, rank, rank dims, rank strides in bytes (the first is
    the element size, which cuTensorMapEncodeTiled does not take), rank box dims, rank
    element strides, interleave, swizzle, L2 promotion, OOB fill."""
    rank = _int(args[1], "tensormap rank")
    if len(args) != 2 + 4 * rank + 4:
        raise LoweringError(f"{TENSORMAP_CREATE} with rank {rank} has {len(args)} arguments")
    ints = [_int(a, "tensormap argument") for a in args[2:]]
    dims, strides, box, elem = (ints[i * rank:(i + 1) * rank] for i in range(4))
    interleave, swizzle, l2, oob = ints[4 * rank:]
    return {"data_type": _int(args[0], "tensormap dtype"), "rank": rank, "global_dim": dims,
            "global_strides": strides[1:], "box_dim": box, "element_strides": elem,
            "interleave": interleave, "swizzle": swizzle, "l2_promotion": l2, "oob_fill": oob}


def kernel_calls(host_mod, device_mod) -> list:
    """Every kernel call of the host module, in order, with its arguments mapped to buffers
    and descriptors, checked against the device module's launch plan."""
    from tilelang import tvm
    tx = tvm.tirx
    kernels = {gv.name_hint: func for gv, func in device_mod.functions.items()}
    descriptors, out = {}, []
    for call in _packed_calls(host_mod):
        name = str(call.args[0].value)
        rest = list(call.args[1:])
        if name == SET_DEVICE:
            continue
        if name == TENSORMAP_CREATE:
            desc, address = rest[0], rest[3]
            if not isinstance(desc, tx.Var) or not isinstance(address, tx.Var):
                raise LoweringError(f"{TENSORMAP_CREATE}: descriptor or address is not a variable")
            descriptors[desc.name] = (address.name, tensormap_encode(rest[1:3] + rest[4:]))
            continue
        func = kernels.get(name)
        if func is None:
            raise LoweringError(f"the host calls {name!r}, which is neither a kernel nor a known runtime call")
        out.append(_kernel_call(name, func, rest, descriptors))
    if not out:
        raise LoweringError("the host code launches no kernel")
    return out


def _kernel_call(name: str, func, rest: list, descriptors: dict) -> KernelCall:
    from tilelang import tvm
    tx = tvm.tirx
    params = list(func.params)
    args = []
    for param, value in zip(params, rest):
        if not isinstance(value, tx.Var):
            raise LoweringError(f"{name}: argument for {param.name} is {value}, not a buffer or descriptor")
        if "grid_constant" in str(getattr(param, "type_annotation", "")):
            if value.name not in descriptors:
                raise LoweringError(f"{name}: descriptor {value.name} is never encoded by the host")
            buffer, encode = descriptors[value.name]
            args.append(("tensormap", buffer, encode))
        else:
            args.append(("buffer", value.name, None))
    tags = [str(t) for t in func.attrs["tirx.kernel_launch_params"]]
    values = [_int(v, f"{name} launch value") for v in rest[len(params):]]
    if len(values) != len(tags):
        raise LoweringError(f"{name}: {len(values)} launch values for tags {tags}")
    passed = dict(zip(tags, values))
    grid = tuple(passed.get(f"blockIdx.{a}", 1) for a in AXES)
    block = tuple(passed.get(f"threadIdx.{a}", 1) for a in AXES)
    smem = passed.get("tirx.use_dyn_shared_memory", 0)
    planned = {str(k): int(v) for k, v in func.attrs["thread_extent"].items()}
    planned_grid = tuple(planned.get(f"blockIdx.{a}", 1) for a in AXES)
    planned_block = tuple(planned.get(f"threadIdx.{a}", 1) for a in AXES)
    planned_smem = int(func.attrs.get("dyn_shared_memory_buf", 0) or 0)
    if (grid, block, smem) != (planned_grid, planned_block, planned_smem):
        raise LoweringError(f"{name}: the host launches grid {grid} block {block} smem {smem}, the device "
                            f"module plans {planned_grid} {planned_block} {planned_smem}")
    return KernelCall(name, args, grid, block, smem, passed)
