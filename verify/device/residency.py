"""Run a row while another kernel holds part of the GPU's SMs.

A kernel that needs all of its blocks resident at once (a software grid barrier, a
producer block spinning on a consumer block) works on an idle GPU when its grid fits, and
deadlocks wherever part of the GPU is busy; only a cooperative launch promises residency.
``SmHolder`` launches one block per held SM that fills the SM (1024 threads, 64 registers
each: the whole register file, so no block of any kernel fits beside it), waits
until every holding block runs, then lets the row run on the remaining SMs. The holders
spin until the host releases them: when the row has finished, or when it has not finished
within its deadline (many times its unhindered run), which is then the finding. The
holders also give up on their own after ``FAILSAFE_S``, so a host that dies cannot leave
the GPU held.
"""
from __future__ import annotations

import ctypes
import time
from typing import Optional

HOLDER_ENTRY = "ptxds_hold_sms"
HOLDER_THREADS = 1024
LIVE_REGISTERS = 56  # with addresses and the loop's own, ptxas needs its 64 (the .maxnreg)
FAILSAFE_S = 20.0
ARRIVAL_WAIT_S = 2.0
# A row's deadline under the hold: this many times its unhindered run, at least MIN_DEADLINE_S.
# With half the SMs it needs about twice as long; 20x leaves room for waves and noise.
DEADLINE_FACTOR = 20.0
MIN_DEADLINE_S = 0.5


def holder_ptx() -> str:
    """The holding kernel: thread 0 of block b marks ``arrived[b]``, then polls ``release``
    (host memory) every 2 us while the block's other threads wait at a barrier; LIVE_REGISTERS
    values are kept live across it, so ptxas gives every thread its 64 registers and the
    block occupies its SM's register file; it stores their sum so no value can be dropped.
    One poller a block, sleeping between reads: a thousand threads reading host memory
    without pause slow every other kernel on the GPU by orders of magnitude."""
    # volatile loads before the barrier cannot be moved past it or recomputed after it, so
    # their values stay live (and in registers) across the wait
    regs = "\n".join(f"    ld.volatile.global.u32 %v{i}, [%rd3+{4 * i}];" for i in range(LIVE_REGISTERS))
    bump = "\n".join(f"    add.u32 %v{i}, %v{i}, %r4;" for i in range(LIVE_REGISTERS))
    total = "\n".join(f"    add.u32 %r5, %r5, %v{i};" for i in range(LIVE_REGISTERS))
    return f"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry {HOLDER_ENTRY}(.param .u64 arrived, .param .u64 release, .param .u64 sink, .param .u64 failsafe_ns)
.maxntid {HOLDER_THREADS}, 1, 1
.maxnreg 64
{{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b32 %v<{LIVE_REGISTERS}>;
    .reg .b64 %rd<12>;
    .shared .align 4 .b32 touch[1];
    ld.param.u64 %rd1, [arrived];
    ld.param.u64 %rd2, [release];
    ld.param.u64 %rd3, [sink];
    ld.param.u64 %rd4, [failsafe_ns];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
{regs}
    mov.u32 %r4, 0;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra WAIT;
    mul.wide.u32 %rd5, %r2, 4;
    add.s64 %rd6, %rd1, %rd5;
    mov.u32 %r3, 1;
    st.volatile.global.u32 [%rd6], %r3;
    st.shared.u32 [touch], %r3;
    mov.u64 %rd7, %globaltimer;
SPIN:
    nanosleep.u32 2000;
    ld.volatile.global.u32 %r4, [%rd2];
    setp.ne.u32 %p2, %r4, 0;
    @%p2 bra WAIT;
    mov.u64 %rd8, %globaltimer;
    sub.s64 %rd9, %rd8, %rd7;
    setp.lt.u64 %p3, %rd9, %rd4;
    @%p3 bra SPIN;
WAIT:
    bar.sync 0;
{bump}
    mov.u32 %r5, 0;
{total}
    mad.lo.u32 %r6, %r2, {HOLDER_THREADS}, %r1;
    mul.wide.u32 %rd10, %r6, 4;
    add.s64 %rd11, %rd3, %rd10;
    st.global.u32 [%rd11], %r5;
    ret;
}}
"""


class SmHolder:
    """Holds ``fraction`` of the SMs of the current context's device on its own stream."""

    def __init__(self, sm_count: int, fraction: float = 0.5):
        from .driver import DeviceBuffer, Module, check, cu, function_attribute, u64_launch
        self._check, self._cu = check, cu
        self.blocks = max(1, int(sm_count * fraction))
        self.module = Module.from_ptx(holder_ptx())
        function = self.module.function(HOLDER_ENTRY)
        self.registers = function_attribute(function, "CU_FUNC_ATTRIBUTE_NUM_REGS")
        self.host = check(cu.cuMemHostAlloc(4 * (self.blocks + 1), cu.CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc")
        self.words = (ctypes.c_uint32 * (self.blocks + 1)).from_address(int(self.host))
        device_ptr = int(check(cu.cuMemHostGetDevicePointer(self.host, 0), "cuMemHostGetDevicePointer"))
        self.sink = DeviceBuffer(4 * self.blocks * HOLDER_THREADS)
        self.stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value), "cuStreamCreate")
        words = (device_ptr, device_ptr + 4 * self.blocks, self.sink.address, int(FAILSAFE_S * 1e9))
        self.launch = u64_launch(function, (self.blocks, 1, 1), (HOLDER_THREADS, 1, 1), words, self.stream)

    def hold(self) -> int:
        """Start holding; returns how many holding blocks were running within ARRIVAL_WAIT_S."""
        for i in range(self.blocks + 1):
            self.words[i] = 0
        self.launch.enqueue()
        deadline = time.monotonic() + ARRIVAL_WAIT_S
        while time.monotonic() < deadline:
            arrived = sum(self.words[i] for i in range(self.blocks))
            if arrived == self.blocks:
                return arrived
            time.sleep(0.0002)
        return sum(self.words[i] for i in range(self.blocks))

    def release(self) -> None:
        self.words[self.blocks] = 1
        self._check(self._cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize(holder)")

    def finish_within(self, stream, deadline_s: float) -> Optional[float]:
        """Wait for ``stream`` while the SMs are held, at most ``deadline_s``; then release.
        Returns None when the stream finished in time, else the seconds waited."""
        start = time.monotonic()
        late = None
        while True:
            status = self._cu.cuStreamQuery(stream)[0]
            if status == self._cu.CUresult.CUDA_SUCCESS:
                break
            if status != self._cu.CUresult.CUDA_ERROR_NOT_READY:
                self.words[self.blocks] = 1
                self._check((status,), "cuStreamQuery")
            if time.monotonic() - start > deadline_s:
                late = time.monotonic() - start
                break
            time.sleep(0.0001)
        self.release()
        return late

    def close(self) -> None:
        self.words[self.blocks] = 1
        self._check(self._cu.cuStreamSynchronize(self.stream), "cuStreamSynchronize(holder)")
        self.sink.free()
        self._check(self._cu.cuMemFreeHost(self.host), "cuMemFreeHost")
        self.module.unload()


def deadline_s(unhindered_s: float) -> float:
    return max(MIN_DEADLINE_S, DEADLINE_FACTOR * unhindered_s)
