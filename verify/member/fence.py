"""Fenced device buffers through CUDA's virtual memory API (cuMemCreate / cuMemMap / cuMemSetAccess).

Each buffer's physical memory is mapped several times: a read-write alias that uploads,
downloads and fills use, and two kernel views, each with a read-only guard page beside it:

- placement ``after``: the buffer ends where a guard page starts (its start rounded down to
  16 bytes, the alignment kernels may assume; the up to 15 bytes between its end and the
  page are checked like the arena's guards);
- placement ``before``: the buffer starts right after a guard page (another follows its
  last page).

Inputs are read-only in both views. A kernel that writes an input (even to restore it) or
writes past an end (even the bytes it read there) faults at once; the fault is sticky, so
the worker exits and the parent attributes it with another run (``worker.GpuWorker``).
Guard pages are readable: they hold each run's random guard fill, so reads past an end
show up as outputs that change with the fill. One physical guard page serves every
mapping. Where the device lacks the virtual memory API, ``load_row`` falls back to the
guarded arena (``driver.GuardedBuffer``) and says so.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..device.driver import DeviceBuffer, check, cu
from ..trials.inputs import GUARD_FILL_BYTES

PLACEMENTS = ("after", "before")
VECTOR_ALIGN = 16


def vmm_support(device) -> str:
    """'' when the device supports the virtual memory API, else why not."""
    attr = getattr(cu.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", None)
    if attr is None:
        return "the driver bindings lack VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED"
    try:
        if not check(cu.cuDeviceGetAttribute(attr, device), "cuDeviceGetAttribute(VMM)"):
            return "the device does not support the virtual memory API"
    except Exception as exc:  # an old driver may not know the attribute
        return f"the virtual memory API cannot be queried ({exc})"
    return ""


def _round_up(value: int, step: int) -> int:
    return (value + step - 1) // step * step


class _Mappings:
    """Reserved address ranges and their mappings, released in reverse order."""

    def __init__(self, ordinal: int):
        self.ordinal = ordinal
        self.ranges: list = []   # (base, size)
        self.maps: list = []     # (address, size)

    def reserve(self, size: int) -> int:
        base = check(cu.cuMemAddressReserve(size, 0, 0, 0), "cuMemAddressReserve")
        self.ranges.append((int(base), size))
        return int(base)

    def map(self, address: int, size: int, handle, read_only: bool) -> None:
        check(cu.cuMemMap(cu.CUdeviceptr(address), size, 0, handle, 0), "cuMemMap")
        self.maps.append((address, size))
        desc = cu.CUmemAccessDesc()
        desc.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        desc.location.id = self.ordinal
        desc.flags = (cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READ if read_only
                      else cu.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        check(cu.cuMemSetAccess(cu.CUdeviceptr(address), size, [desc], 1), "cuMemSetAccess")

    def release(self) -> None:
        for address, size in reversed(self.maps):
            check(cu.cuMemUnmap(cu.CUdeviceptr(address), size), "cuMemUnmap")
        for base, size in reversed(self.ranges):
            check(cu.cuMemAddressFree(cu.CUdeviceptr(base), size), "cuMemAddressFree")
        self.maps, self.ranges = [], []


def _allocation_prop(ordinal: int):
    prop = cu.CUmemAllocationProp()
    prop.type = cu.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = cu.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = ordinal
    return prop


class GuardPage:
    """The one physical guard page of a worker, with a read-write alias that each run's
    guard fill is written through: its first bytes follow every buffer's end, its last
    bytes precede every buffer's start."""

    def __init__(self, ordinal: int):
        self.ordinal = ordinal
        self.prop = _allocation_prop(ordinal)
        self.granularity = int(check(cu.cuMemGetAllocationGranularity(
            self.prop, cu.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity"))
        self.size = max(self.granularity, _round_up(2 * GUARD_FILL_BYTES, self.granularity))
        self.handle = check(cu.cuMemCreate(self.size, self.prop, 0), "cuMemCreate(guard)")
        self.mappings = _Mappings(ordinal)
        self.alias = self.mappings.reserve(self.size)
        self.mappings.map(self.alias, self.size, self.handle, read_only=False)
        middle = np.random.default_rng(0).integers(0, 256, self.size, dtype=np.uint8)
        check(cu.cuMemcpyHtoD(cu.CUdeviceptr(self.alias), middle.ctypes.data, self.size), "cuMemcpyHtoD(guard)")

    def fill(self, fill: np.ndarray) -> None:
        """Write one run's guard fill at both ends of the page."""
        fill = np.ascontiguousarray(fill, dtype=np.uint8)
        for start in (self.alias, self.alias + self.size - fill.size):
            check(cu.cuMemcpyHtoD(cu.CUdeviceptr(start), fill.ctypes.data, fill.size), "cuMemcpyHtoD(guard fill)")

    def free(self) -> None:
        if self.handle is not None:
            self.mappings.release()
            check(cu.cuMemRelease(self.handle), "cuMemRelease(guard)")
            self.handle = None


class FencedBuffer(DeviceBuffer):
    """A buffer of ``nbytes`` with its own physical memory, an alias for copies (``ptr``
    follows the current placement) and one kernel view per placement. ``read_only``: the
    kernel views forbid writes (inputs). ``fence_ends``: the guard pages are read-only
    (False only to tell which fence a fault hit)."""

    def __init__(self, page: GuardPage, nbytes: int, read_only: bool, fence_ends: bool = True):
        self.page = page
        self.nbytes = int(nbytes)
        self.read_only = read_only
        self.fence_ends = fence_ends
        gran = page.granularity
        self.data_size = _round_up(max(self.nbytes, 1), gran)
        self.handle = check(cu.cuMemCreate(self.data_size, page.prop, 0), "cuMemCreate")
        self.mappings = _Mappings(page.ordinal)
        try:
            self.alias = self.mappings.reserve(self.data_size)
            self.mappings.map(self.alias, self.data_size, self.handle, read_only=False)
            after = self.mappings.reserve(self.data_size + page.size)
            self.mappings.map(after, self.data_size, self.handle, read_only)
            self.mappings.map(after + self.data_size, page.size, page.handle, fence_ends)
            # a guard page after the data too: a size that fills whole pages leaves no slack there
            before = self.mappings.reserve(2 * page.size + self.data_size)
            self.mappings.map(before, page.size, page.handle, fence_ends)
            self.mappings.map(before + page.size, self.data_size, self.handle, read_only)
            self.mappings.map(before + page.size + self.data_size, page.size, page.handle, fence_ends)
        except BaseException:
            self.free()
            raise
        # The "after" start is rounded down to 16 bytes: kernels may assume that alignment.
        after_offset = (self.data_size - self.nbytes) // VECTOR_ALIGN * VECTOR_ALIGN
        self.offsets = {"after": after_offset, "before": 0}
        self.views = {"after": after + after_offset, "before": before + page.size}
        self.placement = "after"
        self.ptr = cu.CUdeviceptr(self.alias + after_offset)

    @property
    def address(self) -> int:
        return self.views[self.placement]

    def kernel_address(self, placement: str) -> int:
        return self.views[placement]

    def place(self, placement: str) -> None:
        self.placement = placement
        self.ptr = cu.CUdeviceptr(self.alias + self.offsets[placement])

    def _slack(self) -> tuple:
        """((alias address, bytes) before the buffer, (alias address, bytes) after it)
        inside its own pages: the parts no guard page covers in this placement."""
        offset = self.offsets[self.placement]
        end = offset + self.nbytes
        return (self.alias, offset), (self.alias + end, self.data_size - end)

    def arm(self, fill: Optional[np.ndarray], stream=None) -> None:
        """Copy the guard page's fill into the slack around the buffer (the page itself
        was filled by ``GuardPage.fill``, so ``fill`` is not needed here), so bytes beside
        the buffer read as guard; on ``stream`` when given (the timed samples': nothing a
        kernel leaves in the slack survives into the next sample)."""
        (before, n_before), (after, n_after) = self._slack()
        page = self.page
        copies = []
        if n_before:
            copies.append((before, page.alias + page.size - n_before, n_before))
        if n_after:
            copies.append((after, page.alias, n_after))
        for dst, src, count in copies:
            if stream is None:
                check(cu.cuMemcpyDtoD(cu.CUdeviceptr(dst), cu.CUdeviceptr(src), count), "cuMemcpyDtoD(slack)")
            else:
                check(cu.cuMemcpyDtoDAsync(cu.CUdeviceptr(dst), cu.CUdeviceptr(src), count, stream),
                      "cuMemcpyDtoDAsync(slack)")

    def hits(self, fill: np.ndarray) -> list:
        """Writes into the slack within the fill's length of the buffer (further ones fault
        in the other placement): [(offset from the buffer's start, changed bytes)]."""
        (before, n_before), (after, n_after) = self._slack()
        found = []
        window = fill.size
        for side, start, count in (("before", before + n_before - min(n_before, window), min(n_before, window)),
                                   ("after", after, min(n_after, window))):
            if not count:
                continue
            expect = fill[fill.size - count:] if side == "before" else fill[:count]
            host = np.empty(count, dtype=np.uint8)
            check(cu.cuMemcpyDtoH(host.ctypes.data, cu.CUdeviceptr(start), count), "cuMemcpyDtoH(slack)")
            changed = np.flatnonzero(host != expect)
            if changed.size:
                first = -count + int(changed[0]) if side == "before" else self.nbytes + int(changed[0])
                found.append((first, int(changed.size)))
        return found

    def free(self) -> None:
        if getattr(self, "handle", None) is not None:
            self.mappings.release()
            check(cu.cuMemRelease(self.handle), "cuMemRelease")
            self.handle = None
        self.ptr = None
