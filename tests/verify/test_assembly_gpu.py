"""The cubin the verifier loads must keep the PTX's shared-memory alignment.

TileLang's TMA/wgmma kernels declare ``extern __shared__ __align__(1024)`` beside static
shared barriers; an assembler that places that array at a 16-byte offset (nvJitLink's
relocatable link did) makes them fault. This kernel adds the array's offset from a
1024-byte boundary to a vector add, so any misplacement is a wrong result, not a crash."""
from __future__ import annotations

import pytest

from helpers import compiled_or_skip, vector_add_row
from dataset_spec.store.shards import ShardWriter, read_records

pytestmark = pytest.mark.gpu

KERNEL = r"""
extern "C" __global__ void vadd_aligned_smem(const float *x, const float *y, float *out, int n) {
    extern __shared__ __align__(1024) unsigned char tiles[];
    __shared__ __align__(16) unsigned long long barriers[4];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (threadIdx.x < 4) barriers[threadIdx.x] = threadIdx.x + 1;
    __syncthreads();
    tiles[threadIdx.x] = (unsigned char)barriers[threadIdx.x % 4];
    __syncthreads();
    int offset = (int)(__cvta_generic_to_shared(tiles) % 1024u);
    int stored = (int)tiles[threadIdx.x] - (int)(threadIdx.x % 4) - 1;  // 0: both arrays intact
    if (i < n) out[i] = x[i] + y[i] + (float)(offset + stored);
}
"""


def test_verifier_keeps_extern_shared_alignment(tmp_path):
    from verify import verify_dataset
    ptx = compiled_or_skip(KERNEL)
    assert ".align 1024" in ptx and ".shared .align 16" in ptx  # the layout under test reached the PTX
    row = vector_add_row(ptx, "vadd_aligned_smem_1000", "vadd_aligned_smem")
    row.launches[0].dynamic_smem = 1024
    ShardWriter(tmp_path / "in").write([row])
    verify_dataset(tmp_path / "in", tmp_path / "out", trials=2, timing=False, progress=False)
    (got,) = read_records(tmp_path / "out")
    assert got.status == "passed", got.status_message
    assert got.provenance["verify"]["load"] in ("ptxas", "driver_jit")
