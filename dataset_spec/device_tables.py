"""Device tables: input buffers whose contents the row itself defines.

A grouped GEMM kernel reads device arrays of problem shapes, strides and operand pointers.
A ``values`` table stores its integers in the row (``Buffer.init.params["values"]``); an
``addresses`` table lists ``[buffer, byte_offset]`` per element, and its contents exist
only once the verifier has allocated the row's buffers: ``table_storage(buffer,
addresses)`` turns an allocation map (buffer name -> device address) into the u64 array
to upload. Tables are inputs (read-only, checked unchanged after each run) but not
arguments of the function: the reference never reads an addresses table, and trials draw
neither kind (a values table is the same in every trial).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .model import DTYPES, Buffer, SpecError

_NUMPY_INTS = {("i", 1): np.int8, ("u", 1): np.uint8, ("i", 2): np.int16, ("u", 2): np.uint16,
               ("i", 4): np.int32, ("u", 4): np.uint32, ("i", 8): np.int64, ("u", 8): np.uint64}


def storage_type(dtype: str):
    size, kind = DTYPES[dtype]
    return _NUMPY_INTS[(kind, size)]


def is_address_table(buffer: Buffer) -> bool:
    return buffer.table == "addresses"


def table_storage(buffer: Buffer, addresses: Optional[dict] = None) -> np.ndarray:
    """The exact storage array of a device table, shaped like the buffer. An addresses
    table needs ``addresses`` (buffer name -> device address of the run's placement)."""
    kind = buffer.table
    if kind is None:
        raise SpecError(f"buffer {buffer.name} is not a device table (init kind {buffer.init and buffer.init.kind})")
    target = storage_type(buffer.dtype)
    if kind == "values":
        return np.array(buffer.init.params["values"], dtype=target).reshape(buffer.shape)
    if addresses is None:
        raise SpecError(f"table {buffer.name} holds device addresses: it needs the allocation map")
    words = []
    for name, offset in buffer.init.params["entries"]:
        if name not in addresses:
            raise SpecError(f"table {buffer.name} points into buffer {name!r}, which has no address "
                            f"(allocated: {sorted(addresses)})")
        words.append((int(addresses[name]) + int(offset)) & ((1 << 64) - 1))
    return np.array(words, dtype=np.uint64).view(target).reshape(buffer.shape)


def values_table(name: str, dtype: str, values) -> Buffer:
    """An input buffer holding ``values`` (a flat or nested list of ints) exactly."""
    flat = np.asarray(values).reshape(-1)
    shape = np.shape(values) or (1,)
    from .model import Distribution
    return Buffer(name, dtype, tuple(shape), "in", Distribution("values", {"values": [int(v) for v in flat]}))


def address_table(name: str, entries) -> Buffer:
    """An input buffer of u64 device addresses: ``entries`` lists ``(buffer, byte_offset)``."""
    from .model import Distribution
    plain = [[str(b), int(o)] for b, o in entries]
    return Buffer(name, "uint64", (len(plain),), "in", Distribution("addresses", {"entries": plain}))
