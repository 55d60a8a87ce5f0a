"""GPU tests of grouped GEMM rows: device tables (problem shapes, leading dimensions and
pointer arrays the verifier fills with each run's buffer addresses) on a real driver.

A naive grouped GEMM in CUDA C reads every operand through the tables: it passes; the same
kernel skipping the last problem leaves output unwritten; one that takes every problem's K
from problem 0 is wrong; one that writes a pointer table modifies an input (the tables are
read-only inputs, re-written before every run). Then, when the
CUTLASS grouped dataset has been built into .gpu/c-grouped, its rows pass.

Skipped (one line, see conftest.py) where no CUDA driver or device is present.
"""
from pathlib import Path

import pytest

from helpers import compiled_or_skip

from dataset_spec.model import Arg, KernelRecord, Launch
from dataset_spec.ops.grouped_gemm import TABLE_NAMES, make_grouped_problem
from dataset_spec.store.shards import ShardWriter, read_records

pytestmark = pytest.mark.gpu

PROBLEMS = [(48, 64, 96), (16, 32, 320), (80, 16, 40), (8, 24, 72)]

KERNELS = r"""
#include <cuda_fp16.h>
#define ARGS const int* sizes, const __half* const* pa, const __half* const* pb, const __half* const* pc, \
    __half* const* pd, const long long* lda, const long long* ldb, const long long* ldc, const long long* ldd, \
    int groups, float alpha, float beta
// mode 0: correct; 1: skips the last problem; 2: every problem's K from problem 0;
// 3: correct, then flips a bit of its own problem's C pointer once its block has read it
template <int mode> __device__ void grouped(ARGS) {
    int g = blockIdx.y;
    if (g >= groups || (mode == 1 && g == groups - 1)) return;
    int m = sizes[3 * g], n = sizes[3 * g + 1], k = sizes[3 * (mode == 2 ? 0 : g) + 2];
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < m * n; idx += gridDim.x * blockDim.x) {
        int i = idx / n, j = idx % n;
        float acc = 0.f;
        for (int p = 0; p < k && p < sizes[3 * g + 2]; ++p)  // B is column-major: (p, j) at j * ldb + p
            acc += __half2float(pa[g][i * lda[g] + p]) * __half2float(pb[g][j * ldb[g] + p]);
        pd[g][i * ldd[g] + j] = __float2half(alpha * acc + beta * __half2float(pc[g][i * ldc[g] + j]));
    }
    if (mode == 3) {  // one block per problem (grid x = 1): no other block reads pc[g]
        __syncthreads();
        if (threadIdx.x == 0) ((unsigned long long*)pc)[g] ^= 1ull;
    }
}
extern "C" __global__ void ggemm(ARGS) { grouped<0>(sizes, pa, pb, pc, pd, lda, ldb, ldc, ldd, groups, alpha, beta); }
extern "C" __global__ void ggemm_skips_last(ARGS) { grouped<1>(sizes, pa, pb, pc, pd, lda, ldb, ldc, ldd, groups, alpha, beta); }
extern "C" __global__ void ggemm_first_k(ARGS) { grouped<2>(sizes, pa, pb, pc, pd, lda, ldb, ldc, ldd, groups, alpha, beta); }
extern "C" __global__ void ggemm_writes_table(ARGS) { grouped<3>(sizes, pa, pb, pc, pd, lda, ldb, ldc, ldd, groups, alpha, beta); }
"""

EXPECT = {"ggemm": "passed", "ggemm_skips_last": "unwritten_output", "ggemm_first_k": "wrong_result",
          "ggemm_writes_table": "modified_input"}


def grouped_row(ptx: str, entry: str) -> KernelRecord:
    dtypes = {name: "float16" for name in "ABCD"}
    problem = make_grouped_problem("grouped_naive", PROBLEMS, dtypes, {"a": "row", "b": "col", "c": "row"},
                                   1.0, 0.5, extra_params={"accumulator": "float32"})
    args = [Arg.buf(name) for name in TABLE_NAMES] + [Arg.scalar("s32", len(PROBLEMS)), Arg.scalar("f32", 1.0),
                                                      Arg.scalar("f32", 0.5)]
    launch = Launch(entry, (1, len(PROBLEMS)), (128,), args)
    return KernelRecord(problem.problem_id, "test", {"entry": entry}, entry, "sm_80", ptx, [launch], problem)


@pytest.fixture(scope="module")
def ptx():
    return compiled_or_skip(KERNELS)


def test_device_tables_reach_a_grouped_kernel(ptx, tmp_path):
    from verify import verify_dataset
    ShardWriter(tmp_path / "in").write([grouped_row(ptx, entry) for entry in EXPECT])
    verify_dataset(tmp_path / "in", tmp_path / "out", kernel_timeout=30.0, progress=False, timing=True)
    got = {r.name: r for r in read_records(tmp_path / "out")}
    for entry, status in EXPECT.items():
        assert got[entry].status == status, f"{entry}: {got[entry].status} {got[entry].status_message}"
    assert got["ggemm"].time_us_median and got["ggemm"].time_us_median > 0  # timing re-writes the tables


GROUPED_DATASET = Path(__file__).resolve().parents[3] / ".gpu" / "c-grouped" / "dataset"


@pytest.mark.skipif(not GROUPED_DATASET.exists(), reason="the CUTLASS grouped dataset is not built "
                    "(see docs/cutlass.md, Grouped GEMM)")
def test_cutlass_grouped_rows_pass(tmp_path):
    from verify import verify_dataset
    verify_dataset(GROUPED_DATASET, tmp_path / "out", kernel_timeout=60.0, progress=False, timing=False)
    rows = read_records(tmp_path / "out")
    assert rows
    failed = {r.name: f"{r.status}: {r.status_message[:300]}" for r in rows if r.status != "passed"}
    assert not failed, failed
