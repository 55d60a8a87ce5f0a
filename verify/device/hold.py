"""Hold a stream while a batch of timing samples is enqueued (as nvbench's blocking kernel).

A one-thread kernel spins on a flag in host-mapped memory; the host enqueues the batch
behind it, then sets the flag. The GPU then runs the whole batch back to back, so no
sample's start event can fire while the host is still submitting its launch: the events
time the kernels, never a host-side gap. The kernel gives up after ``timeout`` seconds of
its own, so a host that dies mid-batch cannot hang the GPU.
"""
from __future__ import annotations

import ctypes

HOLD_PTX = r"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry ptxds_hold_stream(
	.param .u64 ptxds_hold_stream_flag,
	.param .u64 ptxds_hold_stream_timeout_ns
)
.maxntid 1, 1, 1
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<6>;

	ld.param.u64 	%rd1, [ptxds_hold_stream_flag];
	ld.param.u64 	%rd5, [ptxds_hold_stream_timeout_ns];
	mov.u64 	%rd2, %globaltimer;
$L__spin:
	ld.volatile.global.u32 	%r1, [%rd1];
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__done;
	mov.u64 	%rd3, %globaltimer;
	sub.s64 	%rd4, %rd3, %rd2;
	setp.lt.u64 	%p2, %rd4, %rd5;
	@%p2 bra 	$L__spin;
$L__done:
	ret;
}
"""

# The driver accepts a bounded number of pending commands per stream before cuLaunch
# blocks; a batch must fit behind the hold kernel, or the host would wait on a held GPU.
MAX_HELD_COMMANDS = 512


class StreamHold:
    """``hold()`` enqueues the spinning kernel; ``release()`` lets it finish."""

    def __init__(self, stream, timeout_s: float = 2.0):
        from .driver import Module, check, cu, u64_launch
        self._check, self._cu = check, cu
        self.module = Module.from_ptx(HOLD_PTX)
        self.host_ptr = check(cu.cuMemHostAlloc(4, cu.CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc")
        self.flag = ctypes.c_uint32.from_address(int(self.host_ptr))
        device_ptr = int(check(cu.cuMemHostGetDevicePointer(self.host_ptr, 0), "cuMemHostGetDevicePointer"))
        self.launch = u64_launch(self.module.function("ptxds_hold_stream"), (1, 1, 1), (1, 1, 1),
                                 (device_ptr, int(timeout_s * 1e9)), stream)

    def hold(self) -> None:
        self.flag.value = 0
        self.launch.enqueue()

    def release(self) -> None:
        self.flag.value = 1

    def close(self) -> None:
        self.release()
        self._check(self._cu.cuMemFreeHost(self.host_ptr), "cuMemFreeHost")
        self.module.unload()
