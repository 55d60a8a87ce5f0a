"""One row loaded on the GPU: its module, device buffers and prepared launches.

Every buffer is fenced (``fence.FencedBuffer``: read-only inputs, read-only guard pages
beside each end, where the virtual memory API is available) or sits between two guard
regions of one allocation (``driver.GuardedBuffer``). Before each run the guards get that
run's random fill and outputs one of the trial's two poisons; ``guard_hits`` reports guard
bytes a kernel changed. ``use_fresh_set`` moves every buffer to a second set of
allocations (other physical pages) and fills the first set with junk, so an address a
kernel kept from an earlier launch reads junk. Used by the isolated workers of ``ptxds
verify`` and by anyone who wants to run or time a downloaded row by hand (the benchmarks do)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

SMEM_STEP = 1024  # extra dynamic shared memory is added in whole KiB


@dataclass
class LoadedRow:
    """A row ready to run on ``stream``; ``free()`` releases its buffers and module.
    ``launches`` are the plain launches of the default placement (what timing runs)."""
    build_key: str
    module: object
    buffers: dict                        # name -> FencedBuffer or GuardedBuffer
    specs: dict                          # name -> Buffer (dataset_spec.model)
    launches: list                       # PreparedLaunch
    load_path: str = "driver_jit"
    fences: str = "arena"                # "vmm", or "arena: <why the virtual memory API is not used>"
    record: object = None
    stream: object = None
    launch_sets: dict = field(default_factory=dict)  # (placement, extra smem) -> [PreparedLaunch]
    smem_note: str = ""                  # why extra shared memory was not added, when it was not
    fill: Optional[np.ndarray] = None    # the guard fill of the last prepare
    tables: dict = field(default_factory=dict)  # name -> addresses table contents of the last prepare
    # the second buffer set (fresh physical pages) and the set in use: 0 the first, 1 the fresh one
    fresh_buffers: Optional[dict] = None
    buffer_set: int = 0
    first_buffers: Optional[dict] = None
    fresh_note: str = ""                 # why run 2 did not move to fresh pages, when it did not
    # the module's .global variables as loaded, before any launch: [(address, bytes, copy)]
    global_image: Optional[list] = None

    def prepare(self, inputs: dict, seed: int = 0, poison: int = 0, fill: Optional[np.ndarray] = None,
                placement: str = "after") -> None:
        """Inputs uploaded; outputs and scratch set to poison 1 or 2 of the trial of
        ``seed`` (``poison`` 0 or 1), or to their init values; guards filled with ``fill``
        (default: the fill of run 0 of ``seed``), buffers in ``placement``."""
        from ..trials.inputs import guard_fill, init_array, poison_words
        self.fill = guard_fill(seed, 0) if fill is None else fill
        page = getattr(next(iter(self.buffers.values()), None), "page", None)
        if page is not None:
            page.fill(self.fill)
        for name, buf in self.buffers.items():
            buf.place(placement)
            buf.arm(self.fill)
            spec = self.specs[name]
            if spec.table == "addresses":
                self.write_tables(placement, (name,))
            elif spec.role in ("in", "inout") and name not in inputs and spec.table == "values":
                from dataset_spec.device_tables import table_storage
                buf.upload(table_storage(spec))
            elif spec.role in ("in", "inout"):
                if hasattr(inputs[name], "data_ptr"):  # already on the GPU (device_outputs.device_inputs)
                    from ..device.device_outputs import copy_from_tensor
                    copy_from_tensor(buf, inputs[name])
                else:
                    buf.upload(inputs[name])
            elif spec.init is not None:
                buf.upload(init_array(spec, seed))
            else:
                buf.fill_word(*poison_words(spec.dtype, seed)[poison])

    def write_tables(self, placement: str = "after", names=None) -> None:
        """Upload each addresses table (``names``: those only) with the device addresses the
        launches of ``placement`` pass; ``tables`` keeps what was written, the contents an
        unfenced input check compares against."""
        from dataset_spec.device_tables import table_storage
        addresses = {name: b.kernel_address(placement) for name, b in self.buffers.items()}
        for name in names if names is not None else list(self.buffers):
            spec = self.specs[name]
            if spec.table == "addresses":
                self.tables[name] = table_storage(spec, addresses)
                self.buffers[name].upload(self.tables[name])

    def enqueue(self) -> None:
        for launch in self.launches:
            launch.enqueue()

    def launch_set(self, placement: str = "after", extra_smem: bool = False) -> list:
        """The row's launches with buffer addresses of ``placement`` (in the buffer set in
        use); ``extra_smem``: each launch asks for more dynamic shared memory than it needs
        (fewer blocks fit on an SM), where there is room; falls back to the plain launches
        and sets ``smem_note``."""
        key = (placement, extra_smem, self.buffer_set)
        if key not in self.launch_sets:
            self.launch_sets[key] = _pack_launches(self, placement, extra_smem)
        return self.launch_sets[key]

    def use_fresh_set(self, junk_word: int = 0xDEADBEEF) -> None:
        """Run on a second set of buffers, allocated now (once per row) while the first set
        stays mapped: other physical pages, other addresses. The first set is filled with
        ``junk_word``, so a kernel reading through an address kept from an earlier launch
        reads junk (or faults where the pages are fenced), never the current data."""
        if self.first_buffers is None:
            self.first_buffers = self.buffers
        if self.fresh_buffers is None:
            from ..device.driver import DriverError
            try:
                self.fresh_buffers = _allocate(self.record, self.first_buffers)
            except DriverError as exc:
                if exc.sticky:
                    raise
                # no room for a second set (a very large row): run 2 stays on the first one
                self.fresh_note = f"run 2 on the first buffers: a second set could not be allocated ({exc.name})"
                self.fresh_buffers = {}
        if not self.fresh_buffers:
            return
        for buf in self.first_buffers.values():
            buf.place("after")
            buf.fill_word(4, junk_word)
        self.buffers, self.buffer_set = self.fresh_buffers, 1

    def use_first_set(self) -> None:
        """Back to the buffers the row was loaded with (a no-op when already there)."""
        if self.first_buffers is not None:
            self.buffers, self.buffer_set = self.first_buffers, 0

    def guard_hits(self) -> list:
        """Writes found in guard regions since the last ``prepare``: dicts with the buffer,
        the first changed byte's offset from the buffer's start, the changed byte count and
        the buffer's size."""
        hits = []
        for name, buf in self.buffers.items():
            for offset, count in buf.hits(self.fill):
                hits.append({"buffer": name, "offset": offset, "bytes": count, "size": buf.nbytes})
        return hits

    def snapshot_globals(self) -> None:
        """Keep a copy of the module's ``.global`` variables now (right after loading)."""
        from ..device.driver import DeviceBuffer, check, cu
        self.global_image = []
        for address, size in module_globals(self.module, self.record.ptx):
            image = DeviceBuffer(size)
            check(cu.cuMemcpyDtoD(image.ptr, cu.CUdeviceptr(address), size), "cuMemcpyDtoD(global image)")
            self.global_image.append((address, size, image))

    def restore_globals(self, stream=None) -> None:
        """The module's ``.global`` variables back to their load-time image (on ``stream``
        when given): the state of a freshly loaded module, without loading it again."""
        from ..device.driver import check, cu
        for address, size, image in self.global_image or ():
            if stream is None:
                check(cu.cuMemcpyDtoD(cu.CUdeviceptr(address), image.ptr, size), "cuMemcpyDtoD(global image)")
            else:
                check(cu.cuMemcpyDtoDAsync(cu.CUdeviceptr(address), image.ptr, size, stream),
                      "cuMemcpyDtoDAsync(global image)")

    def free(self) -> None:
        for _, _, image in self.global_image or ():
            image.free()
        for buf in (self.first_buffers or self.buffers).values():
            buf.free()
        for buf in (self.fresh_buffers or {}).values():
            buf.free()
        self.module.unload()


def module_globals(module, ptx: str) -> list:
    """(device address, bytes) of every ``.global`` variable ``ptx`` defines, in the loaded
    ``module``; none where the parser cannot read the PTX."""
    from ptx_tools.parse import parse_ptx
    from ..device.driver import DriverError, check, cu
    try:
        names = [v.name for v in parse_ptx(ptx).variables if v.state_space == "global" and not v.extern]
    except Exception:  # PTX the parser cannot read: nothing to restore
        return []
    found = []
    for name in names:
        try:
            address, size = check(cu.cuModuleGetGlobal(module.handle, name.encode()), "cuModuleGetGlobal")
        except DriverError as exc:
            if exc.sticky:
                raise
            continue
        if int(size):
            found.append((int(address), int(size)))
    return found


def _pack_launches(row: LoadedRow, placement: str, extra_smem: bool) -> list:
    from .args import entry_params, pack_args
    from ..device.driver import PreparedLaunch, check, cu, encode_tensor_map, smem_headroom
    record = row.record
    addresses = {name: b.kernel_address(placement) for name, b in row.buffers.items()}
    device = check(cu.cuCtxGetDevice(), "cuCtxGetDevice") if extra_smem else None
    launches = []
    for launch in record.launches:
        function = row.module.function(launch.entry)
        dynamic = int(launch.dynamic_smem)
        if extra_smem:
            headroom = smem_headroom(function, device, dynamic)
            extra = headroom // 2 // SMEM_STEP * SMEM_STEP
            if extra < SMEM_STEP:
                row.smem_note = (f"no extra shared memory for {launch.entry}: it already uses all but "
                                 f"{headroom} bytes of the per-block limit")
                return row.launch_set(placement, False)
            dynamic += extra
        packed = pack_args(launch, addresses, entry_params(record.ptx, launch.entry), encode_tensor_map)
        launches.append(PreparedLaunch(function, launch.grid, launch.block, packed.buffer, packed.offsets,
                                       row.stream, launch.cluster, dynamic))
    return launches


def load_row(record, stream, cubin: Optional[bytes] = None, guards: bool = True, guard_page=None,
             fence_inputs: bool = True, fence_ends: bool = True) -> LoadedRow:
    """Load ``record`` in the current context: from ``cubin`` when given and loadable,
    else through the driver's JIT from its PTX; allocate its buffers and pack its launches.

    ``guard_page`` (``fence.GuardPage``): fence the buffers with the virtual memory API
    (``fence_inputs``/``fence_ends`` False lift one fence, to tell which one a fault hit);
    else each buffer sits in a guarded arena allocation, or with ``guards`` False in a plain
    allocation of its exact size (a memory checker must see the allocations' true bounds)."""
    from ..device.driver import GUARD_BYTES, GuardedBuffer, Module
    from .fence import FencedBuffer
    load_path = "driver_jit"
    module = None
    if cubin:
        try:
            module = Module.from_cubin(cubin)
            load_path = "cubin"
        except Exception as exc:  # a bad cubin still leaves the driver JIT to try
            if getattr(exc, "sticky", False):
                raise
            module = None
    if module is None:
        module = Module.from_ptx(record.ptx)
    buffers, specs = {}, {buf.name: buf for buf in record.buffers()}
    row = None
    try:
        how = (guard_page if guards else None, guards, fence_inputs, fence_ends)
        _allocate(record, None, how, into=buffers)
        fences = "vmm" if guard_page is not None and guards else "arena"
        row = LoadedRow(record.build_key, module, buffers, specs, [], load_path, fences=fences, record=record,
                        stream=stream)
        row.launches = row.launch_set("after")
    except BaseException:
        for b in buffers.values():
            b.free()
        module.unload()
        raise
    return row


def _allocate(record, like: Optional[dict], how: Optional[tuple] = None, into: Optional[dict] = None) -> dict:
    """Buffers for every buffer of ``record``: fenced (``how`` = (guard page, guards,
    fence inputs, fence ends)) or in guarded arena allocations; ``like``: a loaded set whose
    kinds and fences the new set copies. On failure the buffers made so far are freed."""
    from ..device.driver import GUARD_BYTES, GuardedBuffer
    from .fence import FencedBuffer
    buffers = {} if into is None else into
    try:
        for buf in record.buffers():
            if like is not None:
                model = like[buf.name]
                if isinstance(model, FencedBuffer):
                    buffers[buf.name] = FencedBuffer(model.page, buf.nbytes, model.read_only, model.fence_ends)
                else:
                    buffers[buf.name] = GuardedBuffer(buf.nbytes, model.guard)
                continue
            page, guards, fence_inputs, fence_ends = how
            if page is not None:
                buffers[buf.name] = FencedBuffer(page, buf.nbytes, buf.role == "in" and fence_inputs, fence_ends)
            else:
                buffers[buf.name] = GuardedBuffer(buf.nbytes, GUARD_BYTES if guards else 0)
    except BaseException:
        if into is None:
            for b in buffers.values():
                b.free()
        raise
    return buffers
