"""The L2 flush before each timing sample: write a buffer of twice the L2's size, then read it.

The write alone evicts the row's data but leaves L2 full of the flush buffer's dirty lines;
the timed kernel's first misses then write those back to memory. On an H100 that cost a
memory-bound Triton kernel of 4-9 us another 0.8-1.4 us, and a GEMM 0.35 us, against
Nsight Compute's own cache flush (docs/runs/run-028.md, run 28): time of the flush, not of
the kernel. Reading the buffer back after the write (a small kernel, outside the timed
span) leaves L2 holding clean lines, so the kernel starts as it does under Nsight Compute.
The read kernel's records are never a member's (``kernel_clock`` leaves its name out).
"""
from __future__ import annotations

FLUSH_READ_ENTRY = "ptxds_flush_read"
FLUSH_MIN_BYTES = 64 << 20
READ_BLOCK = 512
READ_BLOCKS_PER_SM = 4

# 16 bytes a thread per step, grid-stride; the xor only feeds a store that never happens
# (words of one repeated byte never xor to 1), so the loads cannot be dropped.
FLUSH_READ_PTX = r"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry ptxds_flush_read(
	.param .u64 ptxds_flush_read_buf,
	.param .u64 ptxds_flush_read_n16,
	.param .u64 ptxds_flush_read_out
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<10>;

	ld.param.u64 	%rd1, [ptxds_flush_read_buf];
	ld.param.u64 	%rd2, [ptxds_flush_read_n16];
	ld.param.u64 	%rd3, [ptxds_flush_read_out];
	cvta.to.global.u64 	%rd1, %rd1;
	cvta.to.global.u64 	%rd3, %rd3;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, %nctaid.x;
	mul.wide.u32 	%rd4, %r1, %r2;
	cvt.u64.u32 	%rd5, %r3;
	add.u64 	%rd4, %rd4, %rd5;
	mul.wide.u32 	%rd6, %r4, %r2;
	mov.u32 	%r5, 0;
	setp.ge.u64 	%p1, %rd4, %rd2;
	@%p1 bra 	$L__done;
$L__loop:
	shl.b64 	%rd7, %rd4, 4;
	add.u64 	%rd8, %rd1, %rd7;
	ld.global.v4.u32 	{%r6, %r7, %r8, %r9}, [%rd8];
	xor.b32 	%r5, %r5, %r6;
	xor.b32 	%r5, %r5, %r7;
	xor.b32 	%r5, %r5, %r8;
	xor.b32 	%r5, %r5, %r9;
	add.u64 	%rd4, %rd4, %rd6;
	setp.lt.u64 	%p2, %rd4, %rd2;
	@%p2 bra 	$L__loop;
$L__done:
	setp.ne.s32 	%p1, %r5, 1;
	@%p1 bra 	$L__end;
	st.global.u32 	[%rd3], %r5;
$L__end:
	ret;
}
"""


def flush_bytes(l2_bytes: int) -> int:
    """The flush buffer's size: twice the L2, and at least FLUSH_MIN_BYTES."""
    return max(2 * int(l2_bytes), FLUSH_MIN_BYTES)


class L2Flush:
    """``enqueue(sample, stream)`` writes the buffer (a byte that changes from sample to
    sample, so no write is skipped) and reads it back: ``commands`` commands on the stream.
    ``read_back=False`` keeps the write alone (the old flush, for comparisons)."""

    def __init__(self, l2_bytes: int, sm_count: int, read_back: bool = True):
        from .driver import DeviceBuffer, Module
        self.buffer = DeviceBuffer(flush_bytes(l2_bytes))
        self._sink = self._module = None
        self._launches: dict = {}  # stream handle -> PreparedLaunch of the read
        if read_back:
            self._sink = DeviceBuffer(16)
            self._module = Module.from_ptx(FLUSH_READ_PTX)
            self._function = self._module.function(FLUSH_READ_ENTRY)
            self._grid = (READ_BLOCKS_PER_SM * max(1, int(sm_count)), 1, 1)
            self._words = (self.buffer.address, self.buffer.nbytes // 16, self._sink.address)

    @property
    def nbytes(self) -> int:
        return self.buffer.nbytes

    @property
    def commands(self) -> int:
        return 1 if self._module is None else 2

    def enqueue(self, sample: int, stream) -> None:
        self.buffer.fill_bytes(sample & 0xFF, stream)
        if self._module is None:
            return
        from .driver import u64_launch
        key = int(stream) if stream is not None else 0
        if key not in self._launches:
            self._launches[key] = u64_launch(self._function, self._grid, (READ_BLOCK, 1, 1), self._words, stream)
        self._launches[key].enqueue()

    def free(self) -> None:
        self.buffer.free()
        if self._module is not None:
            self._sink.free()
            self._module.unload()
