"""Sub-byte integer dtypes packed several to a byte (int4, uint4, int2, uint2).

A packed buffer stores its elements in flat (row-major) order, ``8 // bits`` to a byte,
element ``i`` in byte ``i * bits // 8`` at bit ``i * bits % 8``: low bits first, as
CUTLASS's ``cutlass::int4b_t`` / ``int2b_t`` arrays store them (``subbyte_reference.h``
addresses element ``i`` at bit ``i * sizeof_bits`` of the storage). Rows are not padded:
an odd-length row shares its last byte with the next row, and the buffer's last byte may
hold fewer than ``8 // bits`` elements (its unused high bits are zero).
"""
from __future__ import annotations

import numpy as np

# name: (bits per element, signed)
PACKED_DTYPES = {"int4": (4, True), "uint4": (4, False), "int2": (2, True), "uint2": (2, False)}


def is_packed(dtype: str) -> bool:
    return dtype in PACKED_DTYPES


def element_bits(dtype: str) -> int:
    return PACKED_DTYPES[dtype][0]


def packed_nbytes(dtype: str, numel: int) -> int:
    """Bytes that ``numel`` elements of ``dtype`` occupy (the last byte may be partly used)."""
    return (int(numel) * element_bits(dtype) + 7) // 8


def element_range(dtype: str) -> tuple:
    """[low, high): the integers one element holds (int4: -8..7, uint2: 0..3)."""
    bits, signed = PACKED_DTYPES[dtype]
    return (-(1 << bits - 1), 1 << bits - 1) if signed else (0, 1 << bits)


def pack(values, dtype: str) -> np.ndarray:
    """Integer ``values`` (any shape, flattened row-major) -> packed bytes (uint8, 1-D).
    Values outside the element range are an error, not wrapped."""
    flat = np.asarray(values).reshape(-1)
    low, high = element_range(dtype)
    ints = np.rint(flat.astype(np.float64)).astype(np.int64) if flat.dtype.kind == "f" else flat.astype(np.int64)
    if ints.size and (ints.min() < low or ints.max() >= high):
        raise ValueError(f"{dtype} values must lie in [{low}, {high - 1}], got [{ints.min()}, {ints.max()}]")
    bits = element_bits(dtype)
    per_byte = 8 // bits
    codes = (ints & ((1 << bits) - 1)).astype(np.uint8)
    padded = np.zeros(packed_nbytes(dtype, ints.size) * per_byte, dtype=np.uint8)
    padded[:ints.size] = codes
    lanes = padded.reshape(-1, per_byte)
    out = np.zeros(lanes.shape[0], dtype=np.uint8)
    for lane in range(per_byte):
        out |= lanes[:, lane] << np.uint8(lane * bits)
    return out


def unpack(packed, dtype: str, numel: int) -> np.ndarray:
    """Packed bytes -> the first ``numel`` elements as int8 (signed) or uint8, 1-D."""
    data = np.ascontiguousarray(packed).reshape(-1).view(np.uint8)
    need = packed_nbytes(dtype, numel)
    if data.size < need:
        raise ValueError(f"{numel} {dtype} elements need {need} bytes, got {data.size}")
    bits, signed = PACKED_DTYPES[dtype]
    per_byte = 8 // bits
    mask = np.uint8((1 << bits) - 1)
    lanes = np.stack([(data[:need] >> np.uint8(lane * bits)) & mask for lane in range(per_byte)], axis=1)
    codes = lanes.reshape(-1)[:int(numel)]
    if not signed:
        return codes.astype(np.uint8)
    return (codes.astype(np.int16) - ((codes >> np.uint8(bits - 1)).astype(np.int16) << bits)).astype(np.int8)


def element_bytes(dtype: str, numel: int) -> np.ndarray:
    """The byte index of each of ``numel`` elements (int64, 1-D)."""
    return np.arange(int(numel), dtype=np.int64) * element_bits(dtype) // 8
