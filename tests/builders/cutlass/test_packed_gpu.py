"""Packed sub-byte outputs on the GPU: an int4 vector add (two elements per byte, an odd
count) is uploaded, poisoned, downloaded and unpacked by the verifier; a correct kernel
passes, one wrong nibble is `wrong_result`, bytes never written are `unwritten_output`."""
from __future__ import annotations

import pytest

from helpers import compiled_or_skip
from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem
from dataset_spec.store.shards import ShardWriter, read_records

pytestmark = pytest.mark.gpu

N = 1001  # odd: the last byte holds one element
KERNELS = r"""
__device__ int nibble(unsigned char byte, int high) {
    int v = high ? (byte >> 4) : (byte & 0xF);
    return v >= 8 ? v - 16 : v;  // two's complement int4, low nibble first
}
__device__ unsigned char add_byte(const unsigned char *x, const unsigned char *y, int i) {
    int lo = nibble(x[i], 0) + nibble(y[i], 0), hi = nibble(x[i], 1) + nibble(y[i], 1);
    return (unsigned char)((lo & 0xF) | ((hi & 0xF) << 4));
}
extern "C" __global__ void vadd_s4(const unsigned char *x, const unsigned char *y, unsigned char *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (n + 1) / 2) out[i] = add_byte(x, y, i);
}
extern "C" __global__ void vadd_s4_wrong_nibble(const unsigned char *x, const unsigned char *y, unsigned char *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (n + 1) / 2) out[i] = add_byte(x, y, i) ^ (i == 7 ? 0x10 : 0);  // element 15 off by 1 bit
}
extern "C" __global__ void vadd_s4_half(const unsigned char *x, const unsigned char *y, unsigned char *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < (n + 1) / 4) out[i] = add_byte(x, y, i);
}
"""


def _row(ptx, entry):
    problem = Problem("vadd_s4_1001", "vector_add", [Buffer("x", "int4", (N,)), Buffer("y", "int4", (N,)),
                                                     Buffer("out", "int4", (N,), role="out")])
    nbytes = (N + 1) // 2
    launch = Launch(entry, ((nbytes + 255) // 256,), (256,),
                    [Arg.buf("x"), Arg.buf("y"), Arg.buf("out"), Arg.scalar("s32", N)])
    return KernelRecord("vadd_s4_1001", "test", {"entry": entry}, entry, "sm_80", ptx, [launch], problem)


def test_packed_int4_outputs_are_judged_per_element(tmp_path):
    from verify import verify_dataset
    ptx = compiled_or_skip(KERNELS)
    ShardWriter(tmp_path / "in").write([_row(ptx, e) for e in ("vadd_s4", "vadd_s4_wrong_nibble", "vadd_s4_half")])
    verify_dataset(tmp_path / "in", tmp_path / "out", trials=3, timing=False, progress=False)
    got = {r.name: r for r in read_records(tmp_path / "out")}
    assert got["vadd_s4"].status == "passed", got["vadd_s4"].status_message
    wrong = got["vadd_s4_wrong_nibble"]
    assert wrong.status == "wrong_result" and wrong.witness["flat_index"] == 15, wrong.status_message
    half = got["vadd_s4_half"]
    assert half.status == "unwritten_output" and f"of {N} elements of out" in half.status_message, half.status_message
