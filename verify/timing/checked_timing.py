"""Timed launches that are checked: fresh inputs, fresh poison and a judged output per sample.

A time is a claim like a label. The timing job runs on a freshly loaded module (module
globals start from their initial values), alternates the ordinary trials' input sets between
samples, and first runs at least MIN_KEPT_STATE_LAUNCHES launches with the module's state
kept, the last of them judged: a kernel that counts its launches and stops working after the
checks fails there. Then, before every timed sample, the module's ``.global`` variables get
their initial image back and the page slack beside every buffer its guard fill (state kept
across launches, a cache memoised on inputs, a pointer kept from an earlier launch: none
survives into a timed sample), and, outside the timed span, it copies
that set's inputs back in, fills outputs and uninitialised scratch with a word that changes
every sample (not one of the checks' poisons, so no kernel can tell a fresh fill), and
re-initialises initialised scratch. After every sample, outside the timed span, a small
kernel hashes each output into a slot; after each batch the slots are compared with the
hashes of the checked run on the same inputs (taken by the worker right after that run).
Rows whose outputs vary by design (floating-point atomics) are compared element by element
within a tolerance instead, one sample per batch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..member.fence import FencedBuffer
from ..device.kernel_clock import CHECKSUM_KERNEL_NAME as CHECKSUM_ENTRY

CHECKSUM_BLOCK = 256
# 64-bit mixing of (word, index): a moved, dropped or changed word changes the sum; the sum
# of per-word terms is order-free, so the atomics that combine the threads are deterministic.
CHECKSUM_PTX = f"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry {CHECKSUM_ENTRY}(.param .u64 data, .param .u64 nbytes, .param .u64 slot)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<24>;
    ld.param.u64 %rd1, [data];
    ld.param.u64 %rd2, [nbytes];
    ld.param.u64 %rd3, [slot];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mul.wide.u32 %rd4, %r1, %r2;
    cvt.u64.u32 %rd5, %r3;
    add.u64 %rd4, %rd4, %rd5;
    mov.u32 %r4, %nctaid.x;
    mul.wide.u32 %rd6, %r4, %r2;
    shr.u64 %rd7, %rd2, 2;
    mov.u64 %rd8, 0;
    mov.u64 %rd9, %rd4;
WORDS:
    setp.ge.u64 %p1, %rd9, %rd7;
    @%p1 bra TAIL;
    shl.b64 %rd10, %rd9, 2;
    add.u64 %rd11, %rd1, %rd10;
    ld.global.u32 %r5, [%rd11];
    cvt.u64.u32 %rd12, %r5;
    mad.lo.u64 %rd13, %rd9, 0x9E3779B97F4A7C15, %rd12;
    shr.u64 %rd14, %rd13, 29;
    xor.b64 %rd13, %rd13, %rd14;
    mul.lo.u64 %rd13, %rd13, 0xBF58476D1CE4E5B9;
    shr.u64 %rd14, %rd13, 32;
    xor.b64 %rd13, %rd13, %rd14;
    add.u64 %rd8, %rd8, %rd13;
    add.u64 %rd9, %rd9, %rd6;
    bra WORDS;
TAIL:
    setp.ne.u64 %p2, %rd4, 0;
    @%p2 bra DONE;
    shl.b64 %rd15, %rd7, 2;
TAILBYTE:
    setp.ge.u64 %p3, %rd15, %rd2;
    @%p3 bra DONE;
    add.u64 %rd16, %rd1, %rd15;
    ld.global.u8 %r6, [%rd16];
    cvt.u64.u32 %rd17, %r6;
    add.u64 %rd17, %rd17, 256;
    mad.lo.u64 %rd18, %rd15, 0x9E3779B97F4A7C15, %rd17;
    mul.lo.u64 %rd18, %rd18, 0xBF58476D1CE4E5B9;
    add.u64 %rd8, %rd8, %rd18;
    add.u64 %rd15, %rd15, 1;
    bra TAILBYTE;
DONE:
    atom.global.add.u64 %rd19, [%rd3], %rd8;
    ret;
}}
"""


# Launches a row runs with its module state kept before timing, the last one judged: more
# than its checks run (trials x runs, with the diagnoses' extra runs), so a kernel that
# counts past the checks and then stops working is seen.
MIN_KEPT_STATE_LAUNCHES = 64


class TimingMismatch(RuntimeError):
    """A timed sample's outputs differ from the checked run's on the same inputs."""


class Checksums:
    """Hashes of device buffers into slots of one device array, enqueued on a stream."""

    def __init__(self, sm_count: int, slots: int):
        from ..device.driver import DeviceBuffer, Module
        self.module = Module.from_ptx(CHECKSUM_PTX)
        self.function = self.module.function(CHECKSUM_ENTRY)
        self.max_blocks = max(1, 8 * int(sm_count))
        self.slots = DeviceBuffer(8 * slots)
        self.capacity = slots
        # (slot, stream) -> ((address, nbytes), PreparedLaunch): one launch a slot, so the
        # cache stays bounded over a worker's many rows (each row's buffers are new addresses)
        self._launches: dict = {}

    def _launch(self, address: int, nbytes: int, slot: int, stream):
        from ..device.driver import u64_launch
        key = (slot, int(stream) if stream is not None else 0)
        cached = self._launches.get(key)
        if cached is None or cached[0] != (address, nbytes):
            blocks = min(self.max_blocks, max(1, -(-(nbytes // 4) // CHECKSUM_BLOCK)))
            words = (address, nbytes, self.slots.address + 8 * slot)
            cached = (address, nbytes), u64_launch(self.function, (blocks, 1, 1), (CHECKSUM_BLOCK, 1, 1), words, stream)
            self._launches[key] = cached
        return cached[1]

    def clear(self, stream) -> None:
        self.slots.fill_bytes(0, stream)

    def enqueue(self, buffers: list, first_slot: int, stream) -> None:
        """Hash ``buffers`` (device buffers, ``.ptr``/``.nbytes``) into consecutive slots."""
        for k, buf in enumerate(buffers):
            self._launch(int(buf.ptr), buf.nbytes, first_slot + k, stream).enqueue()

    def read(self, count: int, stream) -> list:
        from ..device.driver import check, cu
        check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
        host = np.empty(self.capacity, dtype=np.uint64)
        check(cu.cuMemcpyDtoH(host.ctypes.data, self.slots.ptr, 8 * self.capacity), "cuMemcpyDtoH(checksums)")
        return [int(v) for v in host[:count]]

    def of(self, buffers: list, stream) -> list:
        """The hashes of ``buffers`` now (slots 0..), synchronously."""
        self.clear(stream)
        self.enqueue(buffers, 0, stream)
        return self.read(len(buffers), stream)

    def close(self) -> None:
        self.slots.free()
        self.module.unload()


@dataclass
class KeptRun:
    """What the worker keeps of a checked run for the timing job: the output hashes, and the
    outputs themselves (host storage arrays) where runs may differ by design."""
    sums: list
    outputs: Optional[dict] = None


def copy_async(dst, src, stream) -> None:
    from ..device.driver import check, cu
    if dst.nbytes:
        check(cu.cuMemcpyDtoDAsync(dst.ptr, src.ptr, dst.nbytes, stream), "cuMemcpyDtoDAsync")


def within_tolerance(timed: np.ndarray, checked: np.ndarray, dtype: str, shape) -> str:
    """'' when a timed output of a row with floating-point atomics matches its checked run:
    the same NaN and infinity positions, finite values within 1/64 of the output's largest
    checked magnitude (a reordered sum moves far less; skipped work moves far more), integer
    outputs equal. Otherwise what differs."""
    from ..trials.inputs import exact_values
    a = np.asarray(exact_values(timed, dtype, shape), dtype=np.float64)
    b = np.asarray(exact_values(checked, dtype, shape), dtype=np.float64)
    if a.shape != b.shape:
        return f"shape {a.shape} against {b.shape}"
    if not dtype.startswith(("float", "bfloat")):
        bad = int(np.count_nonzero(a != b))
        return f"{bad} elements differ" if bad else ""
    special = ~np.isfinite(b)
    same_special = np.where(special, (np.isnan(a) & np.isnan(b)) | (a == b), np.isfinite(a))
    scale = float(np.max(np.abs(b[~special]))) if (~special).any() else 0.0
    close = np.where(special, True, np.abs(a - b) <= scale / 64.0)
    bad = int(np.count_nonzero(~(same_special & close)))
    return f"{bad} of {a.size} elements differ beyond 1/64 of the largest magnitude" if bad else ""


class CheckedSamples:
    """The per-sample prologue and epilogue of one row's timing, and the judge of each batch.

    ``sets``: [(input storage dict, seed, KeptRun)] of the ordinary trials timed, used in
    turn sample by sample. ``exact``: compare hashes (deterministic rows); otherwise compare
    each sample's downloaded outputs within tolerance."""

    def __init__(self, row, stream, sets: list, checksums: Checksums, salt: int, exact: bool = True):
        from ..device.driver import DeviceBuffer
        from ..trials.inputs import init_array
        self.row, self.stream, self.checksums, self.exact = row, stream, checksums, exact
        self.sets = sets
        self.rng = np.random.default_rng([salt & 0xFFFFFFFFFFFFFFFF, 0x7133])
        self.outputs = [name for name, spec in row.specs.items() if spec.role in ("out", "inout")]
        self.stash: list = []   # per set: name -> device buffer holding that set's contents
        self.judged = 0
        self._owned: list = []
        self.restoring = False  # set once the kept-state launches are judged
        try:
            for storage, seed, _ in sets:
                contents = {}
                for name, spec in row.specs.items():
                    if spec.table is not None:
                        continue
                    if spec.role in ("in", "inout") and name in storage:
                        host_or_tensor = storage[name]
                    elif spec.role in ("out", "scratch") and spec.init is not None:
                        host_or_tensor = np.ascontiguousarray(init_array(spec, seed) if spec.role == "out"
                                                              else init_array(spec))
                    else:
                        continue
                    buf = DeviceBuffer(spec.nbytes)
                    self._owned.append(buf)
                    if hasattr(host_or_tensor, "data_ptr"):
                        from ..device.device_outputs import copy_from_tensor
                        copy_from_tensor(buf, host_or_tensor)
                    else:
                        buf.upload(np.ascontiguousarray(host_or_tensor))
                    contents[name] = buf
                self.stash.append(contents)
        except BaseException:
            self.close()
            raise

    @property
    def commands(self) -> int:
        """Stream commands per sample, beyond the launches (for the held-batch limit)."""
        filled = sum(1 for name, spec in self.row.specs.items() if spec.role in ("out", "inout", "scratch"))
        slack = 2 * sum(1 for buf in self.row.buffers.values() if isinstance(buf, FencedBuffer))
        return len(self.stash[0]) + filled + len(self.outputs) + slack + len(self.row.global_image or ())

    @property
    def max_batch(self) -> Optional[int]:
        if not self.exact:
            return 1
        return max(1, self.checksums.capacity // max(1, len(self.outputs)))

    @property
    def min_warmup(self) -> int:
        return MIN_KEPT_STATE_LAUNCHES

    def prologue(self, sample: int) -> None:
        contents = self.stash[sample % len(self.stash)]
        word = int(self.rng.integers(0, 1 << 32))
        if self.restoring:
            self.row.restore_globals(self.stream)
        for name, buf in self.row.buffers.items():
            spec = self.row.specs[name]
            if isinstance(buf, FencedBuffer):
                buf.arm(None, self.stream)  # the page slack beside the buffer, back to its guard fill
            if name in contents:
                copy_async(buf, contents[name], self.stream)
            elif spec.role in ("out", "scratch") and spec.table is None:
                buf.fill_word(4, word, self.stream)

    def epilogue(self, sample: int, slot: int) -> None:
        if self.exact:
            self.checksums.enqueue([self.row.buffers[name] for name in self.outputs], slot * len(self.outputs),
                                   self.stream)

    def judge_kept_state(self, last_sample: int) -> None:
        """After the warm-up (module state kept throughout): its last launch's outputs must
        be the checked run's; from now on every sample starts from the initial state."""
        self.begin_batch()
        self.epilogue(last_sample, 0)
        try:
            self.judge_batch(last_sample, 1)
        except TimingMismatch as exc:
            raise TimingMismatch(f"after {last_sample + 1} launches on one module: {exc}") from None
        self.restoring = True

    def begin_batch(self) -> None:
        if self.exact:
            self.checksums.clear(self.stream)

    def judge_batch(self, first_sample: int, count: int) -> None:
        """Raise TimingMismatch when a sample of the batch just synchronised is wrong."""
        if self.exact:
            sums = self.checksums.read(count * len(self.outputs), self.stream)
            for j in range(count):
                sample = first_sample + j
                expected = self.sets[sample % len(self.sets)][2].sums
                got = sums[j * len(self.outputs):(j + 1) * len(self.outputs)]
                for name, want, have in zip(self.outputs, expected, got):
                    if want != have:
                        raise TimingMismatch(
                            f"timed sample {sample} (inputs of timing set {sample % len(self.sets)}): output {name} "
                            "differs from the checked run on the same inputs (wrong or unwritten while timed)")
        else:
            from ..device.driver import check, cu
            from ..trials.inputs import STORAGE_NUMPY, storage_shape
            check(cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize")
            sample = first_sample + count - 1
            kept = self.sets[sample % len(self.sets)][2].outputs
            for name in self.outputs:
                spec = self.row.specs[name]
                timed = self.row.buffers[name].download(STORAGE_NUMPY[spec.dtype], storage_shape(spec.dtype, spec.shape))
                why = within_tolerance(timed, kept[name], spec.dtype, spec.shape)
                if why:
                    raise TimingMismatch(f"timed sample {sample}: output {name}: {why} from the checked run on the "
                                         "same inputs")
        self.judged += count

    def close(self) -> None:
        for buf in self._owned:
            buf.free()
        self._owned = []
