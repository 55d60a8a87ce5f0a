"""GPU tests of outputs kept on the device (verify/device/device_outputs.py): a worker's outputs
come back as CUDA tensors, and a group verified with them gives the same rows, column by
column, as the same group verified with every output downloaded and piped (the host path).

Skipped (one line, see conftest.py) where no CUDA driver or device is present.
"""
import pytest

from helpers import compiled_or_skip, vector_add_row

from dataset_spec.store.shards import ShardWriter, read_records

pytestmark = pytest.mark.gpu

N = 1000

KERNELS = r"""
extern "C" __global__ void vadd(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
extern "C" __global__ void vadd_skips_one(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i != 7) out[i] = x[i] + y[i];            // element 7 is never written
}
extern "C" __global__ void vadd_off_by_ulp(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __uint_as_float(__float_as_uint(x[i] + y[i]) ^ (i % 97 == 3 ? 1u : 0u));
}
extern "C" __global__ void vadd_reads_past_end(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = x[i] + y[i];
        if (i == n - 1)
            for (int k = 0; k < 16; ++k) s += fminf(fabsf(x[n + k]), 1.0f);
        out[i] = s;
    }
}
extern "C" __global__ void vadd_reads_own_output(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(out[i], x[i] + y[i]);
}
extern "C" __global__ void vadd_tail_copy(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    volatile float* o = out;
    if (i < n) out[i] = x[i] + y[i];
    else if (i < n + 4) o[i] = o[i];
}
"""

EXPECT = {"vadd": "passed", "vadd_skips_one": "unwritten_output", "vadd_off_by_ulp": "wrong_result",
          "vadd_reads_past_end": "out_of_bounds_read", "vadd_reads_own_output": "wrong_result",
          "vadd_tail_copy": "out_of_bounds_write"}
COLUMNS = ("status", "status_message", "max_abs_err", "max_rel_err", "max_err_ratio", "output_hash", "trials",
           "deterministic", "trial_errors", "witness", "max_disagreement")


@pytest.fixture(scope="module")
def ptx():
    return compiled_or_skip(KERNELS)


@pytest.fixture(scope="module")
def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


def _row(ptx, entry):
    return vector_add_row(ptx, "vadd_device", entry, N)


def test_worker_keeps_outputs_on_the_device(ptx, torch_cuda):
    from verify.device.device_outputs import is_tensor
    from verify.judge.judge import on_device
    from verify.judge.outcome import classify
    from verify.runner import prepare_problem
    from verify.worker import GpuWorker
    row = _row(ptx, "vadd_skips_one")
    prepared = prepare_problem(row.problem, row.group_id, 2, "torch")
    judged = on_device(prepared, torch_cuda.device("cuda", 0))
    payload = [(t.trial, f"k:{t.trial}", t.seed, t.storage) for t in prepared.trials]
    worker = GpuWorker(0)
    try:
        on_gpu = worker.check(row.to_json(), "g", payload, None, 20.0, device_outputs=True)
        on_host = worker.check(row.to_json(), "g", payload, None, 20.0)
    finally:
        worker.close()
    assert not on_gpu.error and not on_host.error, (on_gpu.message, on_host.message)
    assert all(is_tensor(run.outputs["out"]) and run.outputs["out"].is_cuda for run in on_gpu.runs)
    assert not any(is_tensor(run.outputs["out"]) for run in on_host.runs)
    assert all(is_tensor(run.second_outputs["out"]) for run in on_gpu.runs)  # run 2 differs in the poison
    gpu_verdict = classify(on_gpu, judged.specs, judged.references, prepared.references)
    host_verdict = classify(on_host, judged.specs, judged.references, prepared.references)
    assert gpu_verdict.status == host_verdict.status == "unwritten_output"
    assert gpu_verdict.message == host_verdict.message
    assert "1 of 1000 elements" in gpu_verdict.message


def test_device_and_host_paths_give_the_same_rows(ptx, torch_cuda, tmp_path):
    from verify import verify_dataset
    from verify.device.driver import Context
    from verify.member.fence import vmm_support
    vmm = not vmm_support(Context(0).device)
    rows = [_row(ptx, entry) for entry in EXPECT]
    ShardWriter(tmp_path / "in").write(rows)
    got = {}
    for device_outputs in (True, False):
        out = tmp_path / f"out-{device_outputs}"
        verify_dataset(tmp_path / "in", out, trials=3, kernel_timeout=20.0, progress=False, timing=False,
                       reference="torch", device_outputs=device_outputs)
        got[device_outputs] = {r.name: r for r in read_records(out)}
    for name, status in EXPECT.items():
        if vmm or name != "vadd_tail_copy":
            assert got[True][name].status == status, f"{name}: {got[True][name].status_message}"
        for column in COLUMNS:
            assert getattr(got[True][name], column) == getattr(got[False][name], column), (name, column)
