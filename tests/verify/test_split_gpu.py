"""GPU tests of a group split over several GPU workers (verify/schedule.py, chunk_merge.py):
every GPU draws the same input bits and computes the same references and bounds from a
trial's seed, and a group verified in chunks on several workers gets the rows one worker
gives (statuses, errors, output hashes; times within noise on separate GPUs).

Skipped (one line, see conftest.py) where no CUDA driver or device is present; the
two-GPU comparison skips on a machine with one GPU.
"""
import numpy as np
import pytest

from helpers import compiled_or_skip, vector_add_row

from dataset_spec.model import Buffer, Problem
from dataset_spec.store.shards import ShardWriter, read_records

pytestmark = pytest.mark.gpu

KERNELS = r"""
extern "C" __global__ void vadd(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
extern "C" __global__ void vadd_twice(const float* x, const float* y, float* out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = y[i] + x[i];
}
extern "C" __global__ void vadd_off_by_ulp(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __uint_as_float(__float_as_uint(x[i] + y[i]) ^ (i % 97 == 3 ? 1u : 0u));
}
"""
EXPECT = {"vadd": "passed", "vadd_twice": "passed", "vadd_off_by_ulp": "wrong_result"}
N = (1 << 20) + 3  # large enough that inputs are drawn and members judged on the GPU


@pytest.fixture(scope="module")
def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


def _bits(value) -> bytes:
    array = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
    return np.ascontiguousarray(array).tobytes()


@pytest.mark.parametrize("problem", [
    Problem("gemm_bf16_1024", "gemm", [Buffer("A", "bfloat16", (1024, 512)), Buffer("B", "bfloat16", (512, 768)),
                                       Buffer("D", "bfloat16", (1024, 768), role="out")],
            params={"M": 1024, "N": 768, "K": 512}),
    vector_add_row("", "g", "vadd", N).problem], ids=["gemm", "vector_add"])
def test_every_gpu_prepares_the_same_bits(torch_cuda, problem):
    from verify.runner import prepare_device, prepare_problem
    if torch_cuda.cuda.device_count() < 2:
        pytest.skip("one GPU: nothing to compare")
    made = []
    for ordinal in (0, 1):
        device = prepare_device(problem, "auto", "auto", ordinal)
        assert device is not None and device.index == ordinal
        made.append(prepare_problem(problem, "g", None, "auto", device))
    first, second = made
    assert not first.refusal and [t.seed for t in first.trials] == [t.seed for t in second.trials]
    for a, b in zip(first.host_storage(), second.host_storage()):
        assert a.keys() == b.keys() and all(_bits(a[k]) == _bits(b[k]) for k in a)
    for a, b in zip(first.references, second.references):
        assert all(_bits(a[k]) == _bits(b[k]) for k in a)
    for a, b in zip(first.specs, second.specs):
        assert all(_bits(x) == _bits(y) for x, y in zip(a.bounds + a.agreement_bounds, b.bounds + b.agreement_bounds))


def test_a_group_split_over_workers_gets_the_rows_of_one_worker(torch_cuda, tmp_path):
    from verify import verify_dataset
    ptx = compiled_or_skip(KERNELS)
    rows = [vector_add_row(ptx, "vadd_split", entry, N, name=f"{entry}_{copy}", build_key=f"{entry}_{copy}")
            for copy in range(3) for entry in EXPECT]
    ShardWriter(tmp_path / "in").write(rows)
    gpus = torch_cuda.cuda.device_count()
    # on one GPU, two workers share it: checks only (a timed member would share its GPU)
    timing = gpus >= 2
    one = verify_dataset(tmp_path / "in", tmp_path / "one", workers=1, timing=timing, progress=False)
    many = verify_dataset(tmp_path / "in", tmp_path / "many", workers=max(2, gpus), timing=timing, progress=False)
    assert one.split_groups == 0 and many.split_groups == 1 and many.chunks > 1
    got_one = {r.build_key: r for r in read_records(tmp_path / "one")}
    got_many = {r.build_key: r for r in read_records(tmp_path / "many")}
    for key, row in got_one.items():
        other = got_many[key]
        assert row.status == other.status == EXPECT[row.variant["entry"]], (key, other.status_message)
        assert (row.output_hash, row.max_abs_err, row.max_err_ratio) == (other.output_hash, other.max_abs_err,
                                                                          other.max_err_ratio)
        if timing and row.time_us_median:
            assert 0.67 < other.time_us_median / row.time_us_median < 1.5, key
    if gpus >= 2:
        assert len({r.provenance["verify"]["gpu"] for r in got_many.values()}) >= 2
