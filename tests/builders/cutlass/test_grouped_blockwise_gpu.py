"""GPU tests of grouped blockwise-scaled FP8 rows: per-problem scale pointer tables (ptr_SFA,
ptr_SFB) the verifier fills with each run's addresses, on a real driver.

A naive grouped blockwise GEMM in CUDA C reads every operand and scale through the tables: it
passes; one that applies problem 0's SFA to every problem, and one that applies each row's
first K block's scale to every block, are wrong. Then the small CUTLASS datasets (built into
.gpu/c-gblock/gblock at the default size and .gpu/c-gblock/gblock-llm at the llm MoE sizes,
docs/cutlass.md "Grouped blockwise-scaled FP8 GEMM") verify: every row passes.

Skipped (one line, see conftest.py) where no CUDA driver or device is present.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers import compiled_or_skip
from dataset_spec.model import Arg, KernelRecord, Launch
from dataset_spec.ops.grouped_blockwise_gemm import make_grouped_blockwise_problem
from dataset_spec.store.shards import ShardWriter, read_records

pytestmark = pytest.mark.gpu

PROBLEMS = [(64, 128, 256), (16, 256, 384), (48, 128, 128)]
TABLES = ("problem_sizes", "ptr_A", "ptr_B", "ptr_D", "ptr_SFA", "ptr_SFB")

KERNELS = r"""
#include <cuda_fp8.h>
#define ARGS const int* sizes, const __nv_fp8_e4m3* const* pa, const __nv_fp8_e4m3* const* pb, \
    float* const* pd, const float* const* psfa, const float* const* psfb, int groups, float alpha
// A row-major (M x K), B column-major (stored N x K), D column-major; SFA 1x128 blocks stored
// M-major ((K/128) x M), SFB 128x128 blocks N-major ((K/128) x ceil(N/128)).
// mode 0: correct; 1: problem 0's SFA for every problem; 2: every K block scaled as block 0
template <int mode> __device__ void grouped(ARGS) {
    int g = blockIdx.y;
    if (g >= groups) return;
    int m = sizes[3 * g], n = sizes[3 * g + 1], k = sizes[3 * g + 2];
    const float* sfa = psfa[mode == 1 ? 0 : g];
    int nb = (n + 127) / 128;
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < m * n; idx += gridDim.x * blockDim.x) {
        int i = idx % m, j = idx / m;
        float acc = 0.f;
        for (int kb = 0; kb * 128 < k; ++kb) {
            float block = 0.f;
            for (int p = kb * 128; p < k && p < (kb + 1) * 128; ++p)
                block += float(pa[g][i * k + p]) * float(pb[g][j * k + p]);
            int s = mode == 2 ? 0 : kb;
            acc += block * sfa[s * m + i] * psfb[g][s * nb + j / 128];
        }
        pd[g][j * m + i] = alpha * acc;
    }
}
extern "C" __global__ void gbw(ARGS) { grouped<0>(sizes, pa, pb, pd, psfa, psfb, groups, alpha); }
extern "C" __global__ void gbw_first_sfa(ARGS) { grouped<1>(sizes, pa, pb, pd, psfa, psfb, groups, alpha); }
extern "C" __global__ void gbw_first_block(ARGS) { grouped<2>(sizes, pa, pb, pd, psfa, psfb, groups, alpha); }
"""

EXPECT = {"gbw": "passed", "gbw_first_sfa": "wrong_result", "gbw_first_block": "wrong_result"}


def naive_row(ptx: str, entry: str) -> KernelRecord:
    dtypes = {"A": "float8_e4m3", "B": "float8_e4m3", "D": "float32"}
    layouts = {"a": "row", "b": "col", "c": "col", "sfa": "col", "sfb": "col"}
    problem = make_grouped_blockwise_problem("gbw_naive", PROBLEMS, dtypes, (1, 128), (128, 128), layouts)
    args = [Arg.buf(name) for name in TABLES] + [Arg.scalar("s32", len(PROBLEMS)), Arg.scalar("f32", 1.0)]
    launch = Launch(entry, (4, len(PROBLEMS)), (128,), args)
    return KernelRecord(problem.problem_id, "test", {"entry": entry}, entry, "sm_90a", ptx, [launch], problem)


@pytest.fixture(scope="module")
def ptx():
    return compiled_or_skip(KERNELS, "sm_90a")


def test_scale_tables_reach_a_grouped_blockwise_kernel(ptx, tmp_path):
    from verify import verify_dataset
    ShardWriter(tmp_path / "in").write([naive_row(ptx, entry) for entry in EXPECT])
    verify_dataset(tmp_path / "in", tmp_path / "out", kernel_timeout=30.0, progress=False, timing=False)
    got = {r.name: r for r in read_records(tmp_path / "out")}
    for entry, status in EXPECT.items():
        assert got[entry].status == status, f"{entry}: {got[entry].status} {got[entry].status_message}"


DATASETS = Path(__file__).resolve().parents[3] / ".gpu" / "c-gblock"


@pytest.mark.parametrize("name", ["gblock", "gblock-llm"])
def test_cutlass_grouped_blockwise_rows_pass(name, tmp_path):
    from verify import verify_dataset
    if not (DATASETS / name).exists():
        pytest.skip(f"the CUTLASS grouped blockwise dataset {name} is not built "
                    "(see docs/cutlass.md, Grouped blockwise-scaled FP8 GEMM)")
    verify_dataset(DATASETS / name, tmp_path / "out", kernel_timeout=60.0, progress=False, timing=False)
    rows = read_records(tmp_path / "out")
    assert rows and all(r.problem.op == "grouped_blockwise_scaled_gemm" for r in rows)
    failed = {r.name: f"{r.status}: {r.status_message[:300]}" for r in rows if r.status != "passed"}
    assert not failed, failed
