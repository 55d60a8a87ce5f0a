"""Kernel parameter packing: a Launch's args + device addresses -> one packed parameter buffer.

The layout follows PTX's parameter space: each parameter is aligned to its natural size
(scalars, pointers) or to its declared ``.align`` (by-value blobs: a ``__grid_constant__``
CUTLASS ``Params`` holding ``CUtensorMap`` descriptors is ``.align 64``). The packed buffer
plus each parameter's offset feed either the driver's kernelParams array or its extra buffer.

Blob patches write buffer addresses, or ``CUtensorMap`` descriptors that only a CUDA driver
can encode: the caller passes ``encode_tensormap(params, address) -> 128 bytes``
(``verify.device.driver.encode_tensor_map`` on a GPU; any function in tests).
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from dataset_spec.errors import PtxdsError
from dataset_spec.model import SCALAR_DTYPES, TENSORMAP_BYTES, Arg, Launch

TensorMapEncoder = Callable[[dict, int], bytes]


class ArgError(PtxdsError, ValueError):
    """A launch's arguments do not fit the kernel or the problem's buffers."""


@dataclass
class ParamDecl:
    """One ``.param`` of a PTX entry: its size in bytes and alignment."""
    name: str
    size: int
    align: int


@dataclass
class PackedParams:
    buffer: bytes
    offsets: list = field(default_factory=list)
    sizes: list = field(default_factory=list)


_PTX_TYPE_SIZES = {t: SCALAR_DTYPES[t] for t in SCALAR_DTYPES}
_PTX_TYPE_SIZES.update({"pred": 4})  # never a kernel param in practice; size for safety

_ENTRY_RE = re.compile(r"\.entry\s+([A-Za-z_$%][\w$]*)\s*\(", re.S)
_PARAM_RE = re.compile(
    r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(?:\.ptr\s+(?:\.\w+\s+)*?(?:\.align\s+\d+\s+)?)?"
    r"([A-Za-z_$%][\w$]*)\s*(?:\[\s*(\d+)\s*\])?")


def entry_params(ptx: str, entry: str) -> Optional[list]:
    """The ``.param`` declarations of ``entry`` in ``ptx``; None when the entry is not found.

    The ``.align`` after ``.ptr`` is the pointee's alignment, not the parameter's, so it is
    skipped; a pointer parameter is aligned to its own size (8).
    """
    for m in _ENTRY_RE.finditer(ptx):
        if m.group(1) != entry:
            continue
        depth, i = 1, m.end()
        while i < len(ptx) and depth:
            depth += {"(": 1, ")": -1}.get(ptx[i], 0)
            i += 1
        params = []
        for p in _PARAM_RE.finditer(ptx[m.end():i - 1]):
            align, ptype, name, count = p.groups()
            elem = _PTX_TYPE_SIZES.get(ptype)
            if elem is None:
                raise ArgError(f"entry {entry}: unknown param type .{ptype} for {name}")
            size = elem * (int(count) if count else 1)
            params.append(ParamDecl(name, size, int(align) if align else elem))
        return params
    return None


def _align_up(offset: int, align: int) -> int:
    return (offset + align - 1) // align * align


def _parse_int(value: str) -> int:
    """Decimal (exact, so 64-bit values survive), hex ``0x..``, or an integral float text."""
    text = value.strip().lower()
    try:
        return int(text)
    except ValueError:
        pass
    if text.lstrip("+-").startswith("0x"):
        return int(text, 16)
    number = float(text)
    if not number.is_integer():
        raise ArgError(f"integer scalar value {value!r} is not an integer")
    return int(number)


def scalar_bytes(dtype: str, value: str) -> bytes:
    """A scalar kernel argument's bytes (little-endian), value given as a decimal string."""
    if dtype in ("f32",):
        return struct.pack("<f", float(value))
    if dtype == "f64":
        return struct.pack("<d", float(value))
    if dtype == "f16":
        return np.float16(float(value)).tobytes()
    if dtype == "bf16":
        from ..trials.inputs import float_to_bits
        return float_to_bits(np.array([float(value)]), "bfloat16").astype("<u2").tobytes()
    size = SCALAR_DTYPES[dtype]
    number = _parse_int(value)
    bits = size * 8
    if not -(1 << (bits - 1)) <= number < (1 << bits):
        raise ArgError(f"scalar {dtype} value {value} does not fit in {bits} bits")
    return (number & ((1 << bits) - 1)).to_bytes(size, "little")


def arg_bytes(arg: Arg, addresses: dict, encode_tensormap: Optional[TensorMapEncoder] = None) -> bytes:
    """One argument's bytes. ``addresses`` maps buffer name -> device address;
    ``encode_tensormap`` is needed only for blobs with tensormap patches."""
    if arg.kind == "buffer":
        if arg.buffer not in addresses:
            raise ArgError(f"arg refers to buffer {arg.buffer!r}, which is not among {sorted(addresses)}")
        return int(addresses[arg.buffer]).to_bytes(8, "little")
    if arg.kind == "null":
        return bytes(8)
    if arg.kind == "scalar":
        return scalar_bytes(arg.dtype, arg.value)
    blob = bytearray(arg.blob)
    for patch in arg.patches:
        if patch.buffer not in addresses:
            raise ArgError(f"blob patch refers to buffer {patch.buffer!r}, which is not among {sorted(addresses)}")
        value = (int(addresses[patch.buffer]) + int(patch.addend)) & ((1 << 64) - 1)
        if patch.kind == "tensormap":
            blob[patch.offset:patch.offset + TENSORMAP_BYTES] = _tensormap_bytes(patch, value, encode_tensormap)
        else:
            blob[patch.offset:patch.offset + 8] = value.to_bytes(8, "little")
    return bytes(blob)


def _tensormap_bytes(patch, address: int, encode_tensormap: Optional[TensorMapEncoder]) -> bytes:
    if encode_tensormap is None:
        raise ArgError(f"blob patch at {patch.offset} is a CUtensorMap: packing it needs a tensor "
                       f"map encoder (a CUDA driver)")
    data = bytes(encode_tensormap(patch.tensormap, address))
    if len(data) != TENSORMAP_BYTES:
        raise ArgError(f"tensor map encoder returned {len(data)} bytes, not {TENSORMAP_BYTES}")
    return data


def default_align(arg: Arg) -> int:
    """Alignment when the PTX declaration is not known: natural size, blobs 8 (a struct with
    a pointer inside, the common case, is 8-aligned)."""
    if arg.kind == "blob":
        return 8
    return arg.size


def pack_args(launch: Launch, addresses: dict, params: Optional[list] = None,
              encode_tensormap: Optional[TensorMapEncoder] = None) -> PackedParams:
    """Pack ``launch.args`` into one buffer. With ``params`` (from ``entry_params``) the
    count, each size and each alignment are checked against the kernel's declaration.
    ``encode_tensormap`` encodes the CUtensorMap patches of blobs (see the module doc)."""
    if params is not None:
        if len(params) != len(launch.args):
            raise ArgError(f"entry {launch.entry} declares {len(params)} params, the launch gives {len(launch.args)} args")
        for i, (decl, arg) in enumerate(zip(params, launch.args)):
            if decl.size != arg.size:
                raise ArgError(f"entry {launch.entry} param {i} ({decl.name}) is {decl.size} bytes, "
                               f"the {arg.kind} arg is {arg.size} bytes")
    buffer = bytearray()
    offsets, sizes = [], []
    for i, arg in enumerate(launch.args):
        align = params[i].align if params is not None else default_align(arg)
        offset = _align_up(len(buffer), max(align, 1))
        buffer.extend(bytes(offset - len(buffer)))
        data = arg_bytes(arg, addresses, encode_tensormap)
        offsets.append(offset)
        sizes.append(len(data))
        buffer.extend(data)
    return PackedParams(bytes(buffer), offsets, sizes)
