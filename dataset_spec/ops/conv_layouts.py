"""Storage of conv tensors that are not plain channels-last real arrays: CUTLASS's
interleaved layouts and complex elements. The conv problem stays the logical one (NHWC
activations and outputs, KRSC filters); these functions convert between it and what the
buffers hold.

Interleaved (``params.layout``): ``nc32hw32`` / ``nc64hw64`` activations and outputs are
CUTLASS's ``TensorNCxHWx<I>``, element (n, h, w, c) at
``c % I + I (w + W (h + H (c / I + (C / I) n)))``: an array (N, C/I, H, W, I). Their
filters are ``TensorCxRSKx<I>`` (``c32rsk32`` / ``c64rsk64``), element (k, r, s, c) at
``c % I + I (k + K (s + S (r + R (c / I))))``: an array (C/I, R, S, K, I)
(cutlass/layout/tensor.h, ``operator()`` and ``packed()`` of both), except that the filter's
output channels are stored permuted within each block of I (``filter_channel_slots``): the
interleaved epilogue writes its accumulators to the output without passing through shared
memory, so CUTLASS's interleaved kernels expect the filter reordered along K, as its tests
and examples do with ``cutlass::reorder_convK<I>`` before they launch them
(test/unit/conv/device/conv2d_testbed_interleaved.h; the reference conv there reads the
filter before the reorder). CUTLASS has interleaved kernels for fprop only, so the filter
is always an input.

Complex (``params.complex``): ``cutlass::complex<float>`` elements, real then imaginary
part, so a buffer is a real array with a last axis of 2 (as complex_gemm's interleaved
buffers are).
"""
from __future__ import annotations

import numpy as np

from ..model import SpecError

# activation/output layout -> (interleave, the matching filter layout)
INTERLEAVED = {"nc32hw32": (32, "c32rsk32"), "nc64hw64": (64, "c64rsk64")}
CHANNELS_LAST = ("nhwc", "ndhwc")


def interleave_of(layout: str) -> int:
    """The channel interleave I of an interleaved layout; 0 for channels-last."""
    if layout in CHANNELS_LAST:
        return 0
    if layout not in INTERLEAVED:
        raise SpecError(f"conv layout {layout!r} is unknown; use one of "
                        f"{', '.join(CHANNELS_LAST + tuple(INTERLEAVED))}")
    return INTERLEAVED[layout][0]


def interleaved_shape(logical: tuple, layout: str, is_filter: bool) -> tuple:
    """The storage array's shape for a logical (N, *spatial, C) or filter (K, *taps, C) shape."""
    step = interleave_of(layout)
    if not step:
        return tuple(logical)
    first, *middle, channels = logical
    if channels % step:
        raise SpecError(f"layout {layout} needs channel counts that are multiples of {step}, got {channels}")
    if is_filter:
        if first % step:
            raise SpecError(f"layout {layout} needs filter counts K that are multiples of {step}, got {first}")
        return (channels // step, *middle, first, step)
    return (first, channels // step, *middle, step)


def filter_channel_slots(count: int, step: int) -> np.ndarray:
    """Where output channel k of an interleaved filter is stored along K: slot[k].

    cutlass/util/host_reorder.h, ``reorder_column<Interleaved>`` (which ``reorder_convK``
    calls with ``Interleaved`` = the layout's I, on the filter seen as
    ``RowMajorInterleaved<I>`` with ldm = stride(0) = I K, so only the column, K, moves)::

        const int InstructionShapeCol = 8;
        const int ElementsPerThread = InstructionShapeCol / 4;
        const int ReorderedElementsPerThread = Interleaved / 4;
        dest.at({k, (n / Interleaved) * Interleaved +
                        ((n % ReorderedElementsPerThread) / ElementsPerThread) *
                            InstructionShapeCol +
                        ((n % Interleaved) / ReorderedElementsPerThread) *
                            ElementsPerThread +
                        (n % ElementsPerThread)}) = src.at({k, n});
    """
    instruction_cols = 8
    per_thread = instruction_cols // 4
    reordered_per_thread = step // 4
    n = np.arange(count)
    return ((n // step) * step + ((n % reordered_per_thread) // per_thread) * instruction_cols
            + ((n % step) // reordered_per_thread) * per_thread + n % per_thread)


def logical_shape(storage: tuple, layout: str, is_filter: bool) -> tuple:
    """The inverse of ``interleaved_shape``."""
    if not interleave_of(layout):
        return tuple(storage)
    if is_filter:
        major, *middle, first, step = storage
    else:
        first, major, *middle, step = storage
    return (first, *middle, major * step)


def to_interleaved(logical: np.ndarray, layout: str, is_filter: bool) -> np.ndarray:
    """A logical channels-last array in the layout's storage order (a new array)."""
    step = interleave_of(layout)
    if not step:
        return logical
    rank = logical.ndim
    split = logical.reshape(logical.shape[:-1] + (logical.shape[-1] // step, step))
    # split axes: 0 = N or K, 1..rank-2 = spatial or taps, rank-1 = C / I, rank = I
    middle = tuple(range(1, rank - 1))
    order = (rank - 1, *middle, 0, rank) if is_filter else (0, rank - 1, *middle, rank)
    storage = split.transpose(order)
    if is_filter:
        reordered = np.empty(storage.shape, dtype=storage.dtype)  # C order, as the buffer is
        reordered[..., filter_channel_slots(storage.shape[-2], step), :] = storage
        return reordered
    return np.ascontiguousarray(storage)


def from_interleaved(storage: np.ndarray, layout: str, is_filter: bool) -> np.ndarray:
    """The logical channels-last array of a storage-order one (inverse of ``to_interleaved``)."""
    step = interleave_of(layout)
    if not step:
        return storage
    rank = storage.ndim - 1
    middle = tuple(range(1, rank - 1))
    order = (rank - 1, *middle, 0, rank) if is_filter else (0, rank - 1, *middle, rank)
    if is_filter:
        storage = storage[..., filter_channel_slots(storage.shape[-2], step), :]
    logical = storage.transpose(np.argsort(order))
    return np.ascontiguousarray(logical).reshape(logical.shape[:-2] + (logical.shape[-2] * step,))
