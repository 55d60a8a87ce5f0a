"""Racecheck's block sample (ptx_tools/instrument/block_sample.py, verify/probes/sanitize.py
``racecheck_record``): a large launch keeps its grid and all but a salted sample of its
blocks (whole clusters) leave at their first instruction; the copy is real PTX that ptxas
assembles, for a plain kernel on sm_80 and a cluster kernel on sm_90a."""
import re

import pytest

from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem
from ptx_tools import assemble, compile_cuda
from ptx_tools.instrument.block_sample import SAMPLE_MARK, BlockSample, sampled_copy
from ptx_tools.instrument.probe import ProbeError
from verify.probes.sanitize import RACECHECK_FEW_BLOCKS, racecheck_record

PLAIN = r"""
extern "C" __global__ void scale(const float* x, float* y, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    if (i < n) y[i] = 2.f * tile[blockDim.x - 1 - threadIdx.x];
}
"""
CLUSTER = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void __cluster_dims__(2, 1, 1) pairs(const float* x, float* y) {
    __shared__ float mine;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) mine = x[blockIdx.x];
    cluster.sync();
    float* other = cluster.map_shared_rank(&mine, cluster.block_rank() ^ 1);
    if (threadIdx.x == 0) y[blockIdx.x] = *other;
    cluster.sync();
}
"""


@pytest.fixture(scope="module")
def plain_ptx():
    return compile_cuda(PLAIN, "sm_80")


def _record(ptx: str, entry: str, grid: tuple, cluster=(1, 1, 1)) -> KernelRecord:
    problem = Problem("p", "vector_add", [Buffer("x", "float32", (4,)), Buffer("y", "float32", (4,)),
                                          Buffer("out", "float32", (4,), role="out")])
    launch = Launch(entry, grid, (256,), [Arg.buf("x"), Arg.buf("out")], cluster=cluster)
    return KernelRecord("g", "test", {"v": entry}, entry, "sm_90a", ptx, [launch], problem, build_key=f"k-{entry}")


def _kept(ptx: str) -> tuple:
    start = int(re.search(r"sub\.u32 %ptxds_bs\w*6, %ptxds_bs\w*5, (\d+);", ptx).group(1))
    count = int(re.search(r"setp\.ge\.u32 %ptxds_bsp\w*, %ptxds_bs\w*6, (\d+);", ptx).group(1))
    return start, count


def test_the_sampled_copy_of_a_plain_kernel_assembles_and_exits_outside_its_sample(plain_ptx):
    copy = sampled_copy(plain_ptx, [BlockSample("scale", 40, 8)])
    assert copy.count(SAMPLE_MARK) == 12 and "%ctaid.x" in copy and "@%ptxds_bsp exit;" in copy
    assert _kept(copy) == (40, 8)
    assert assemble(copy, "sm_80").resources  # ptxas takes it
    # the prologue comes before the kernel's first statement, after the declarations
    body = copy.split("{", 1)[1]
    assert body.index("mov.u32 %ptxds_bs0, %ctaid.x;") < body.index("bar.sync")
    with pytest.raises(ProbeError, match="not in the module"):
        sampled_copy(plain_ptx, [BlockSample("absent", 0, 8)])
    with pytest.raises(ProbeError, match="keeps none"):
        sampled_copy(plain_ptx, [BlockSample("scale", 0, 0)])


def test_a_cluster_kernel_is_sampled_by_whole_clusters_and_assembles_for_sm90a():
    ptx = compile_cuda(CLUSTER, "sm_90a")
    record, sampled = racecheck_record(_record(ptx, "pairs", (1024, 1, 1), cluster=(2, 1, 1)), salt="run-1")
    assert sampled and record.launches[0].grid == (1024, 1, 1)  # the grid the kernel sees is whole
    assert "%clusterid.x" in record.ptx and "%nclusterid.x" in record.ptx
    start, count = _kept(record.ptx)
    assert count == RACECHECK_FEW_BLOCKS // 2 and 0 <= start <= 512 - count
    assert assemble(record.ptx, "sm_90a").resources


def test_the_sample_is_salted_kept_for_one_salt_and_small_grids_stay_whole(plain_ptx):
    big = _record(plain_ptx, "scale", (4096, 1, 1))
    starts = {salt: _kept(racecheck_record(big, salt)[0].ptx)[0] for salt in ("a", "b", "c", "d", "e", "f")}
    assert len(set(starts.values())) > 1  # the watched blocks move with the run's salt
    assert _kept(racecheck_record(big, "a")[0].ptx)[0] == starts["a"]
    assert all(0 <= s <= 4096 - RACECHECK_FEW_BLOCKS for s in starts.values())
    assert big.ptx == plain_ptx and big.launches[0].grid == (4096, 1, 1)  # the row itself is unchanged
    small = _record(plain_ptx, "scale", (256, 1, 1))
    record, sampled = racecheck_record(small, "a")
    assert not sampled and record.ptx == plain_ptx
