"""One row loaded on the GPU: its module, device buffers and prepared launches.

Every buffer sits between two guard regions filled with a known byte pattern before each
run; ``guard_hits`` reports any guard byte a kernel changed (a write outside its buffer).
Used by the isolated workers of ``ptxds verify`` and by anyone who wants to run or time a
downloaded row by hand (the benchmarks do)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class LoadedRow:
    """A row ready to run on ``stream``; ``free()`` releases its buffers and module."""
    build_key: str
    module: object
    buffers: dict                        # name -> GuardedBuffer
    specs: dict                          # name -> Buffer (dataset_spec.model)
    launches: list                       # PreparedLaunch
    load_path: str = "driver_jit"
    init_host: dict = field(default_factory=dict)  # name -> host array kept alive for async re-init

    def prepare(self, inputs: dict, seed: int = 0) -> None:
        """Inputs uploaded; outputs and scratch poisoned, or set to their init values;
        guard regions re-armed."""
        from .inputs import init_array, poison_word
        for name, buf in self.buffers.items():
            buf.arm()
            spec = self.specs[name]
            if spec.role in ("in", "inout"):
                buf.upload(inputs[name])
            elif spec.init is not None:
                buf.upload(init_array(spec, seed))
            else:
                buf.fill_word(*poison_word(spec.dtype))

    def enqueue(self) -> None:
        for launch in self.launches:
            launch.enqueue()

    def guard_hits(self) -> list:
        """Writes found in guard regions since the last ``prepare``: dicts with the buffer,
        the first changed byte's offset from the buffer's start, the changed byte count and
        the buffer's size."""
        hits = []
        for name, buf in self.buffers.items():
            for offset, count in buf.hits():
                hits.append({"buffer": name, "offset": offset, "bytes": count, "size": buf.nbytes})
        return hits

    def free(self) -> None:
        for buf in self.buffers.values():
            buf.free()
        self.module.unload()


def load_row(record, stream, cubin: Optional[bytes] = None, guards: bool = True) -> LoadedRow:
    """Load ``record`` in the current context: from ``cubin`` when given and loadable,
    else through the driver's JIT from its PTX; allocate its buffers (between guard regions
    unless ``guards`` is False: a memory checker must see the allocations' true bounds);
    pack its launches."""
    from .args import entry_params, pack_args
    from .driver import GUARD_BYTES, GuardedBuffer, Module, PreparedLaunch, encode_tensor_map
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
    buffers, specs = {}, {}
    try:
        for buf in record.buffers():
            buffers[buf.name] = GuardedBuffer(buf.nbytes, GUARD_BYTES if guards else 0)
            specs[buf.name] = buf
        addresses = {name: b.address for name, b in buffers.items()}
        launches = []
        for launch in record.launches:
            function = module.function(launch.entry)
            packed = pack_args(launch, addresses, entry_params(record.ptx, launch.entry), encode_tensor_map)
            launches.append(PreparedLaunch(function, launch.grid, launch.block, packed.buffer, packed.offsets,
                                           stream, launch.cluster, launch.dynamic_smem))
    except BaseException:
        for b in buffers.values():
            b.free()
        module.unload()
        raise
    return LoadedRow(record.build_key, module, buffers, specs, launches, load_path)
