"""GPU tests of inputs, references and bounds made on the device (verify/trials/device_prepare.py):
the counter-based generator gives the CUDA device the same values as the CPU, the device's
references and bounds equal the host's on the same inputs, and a large group verified with
device-made trials gets the same statuses as with the host generator.

Skipped (one line, see conftest.py) where no CUDA driver or device is present.
"""
import dataclasses

import numpy as np
import pytest

from device_parity import PARITY_PROBLEMS, assert_prepared_on_the_device_as_on_the_host
from helpers import compiled_or_skip, vector_add_row

from dataset_spec.store.shards import ShardWriter, read_records

pytestmark = pytest.mark.gpu

N = (1 << 20) + 3  # past judge.MIN_GPU_ELEMENTS, so "auto" makes the trials on the GPU; not a multiple of 4

KERNELS = r"""
extern "C" __global__ void vadd(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
extern "C" __global__ void vadd_skips_one(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i != 7) out[i] = x[i] + y[i];
}
extern "C" __global__ void vadd_off_by_ulp(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __uint_as_float(__float_as_uint(x[i] + y[i]) ^ (i % 97 == 3 ? 1u : 0u));
}
extern "C" __global__ void vadd_reads_own_output(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(out[i], x[i] + y[i]);
}
"""
EXPECT = {"vadd": "passed", "vadd_skips_one": "unwritten_output", "vadd_off_by_ulp": "wrong_result",
          "vadd_reads_own_output": "wrong_result"}


@pytest.fixture(scope="module")
def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


def _storage_ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = np.dtype(f"i{a.dtype.itemsize}")
    return np.abs(a.view(bits).astype(np.int64) - b.view(bits).astype(np.int64))


def test_the_generator_gives_the_gpu_the_cpus_values(torch_cuda):
    from verify.trials import device_rng
    from verify.trials.device_prepare import make_trial_inputs_device
    cpu, gpu = torch_cuda.device("cpu"), torch_cuda.device("cuda", 0)
    on_gpu = device_rng.uniform(99, 3, 0, 100_003, gpu).cpu()
    assert torch_cuda.equal(device_rng.uniform(99, 3, 0, 100_003, cpu), on_gpu)
    problem = vector_add_row("", "g", "vadd", 100_003).problem
    for trial in range(5):  # normal, uniform, wide, edge, stress
        on_cpu = make_trial_inputs_device(problem, "g", trial, cpu).host_storage()
        on_gpu = make_trial_inputs_device(problem, "g", trial, gpu).host_storage()
        for name in on_cpu:
            ulps = _storage_ulps(on_cpu[name], on_gpu[name])
            # log, cos and exp in float64 may differ in their last bit between libraries;
            # after rounding to float32 that almost never shows, and never by more than 1 ulp
            assert ulps.max() <= 1 and np.count_nonzero(ulps) <= 10, (trial, name)


def test_device_references_and_bounds_equal_the_hosts(torch_cuda):
    from dataset_spec.ops import get_op
    from verify.trials.device_prepare import make_trial_inputs_device
    from verify.trials.inputs import HOST_GENERATOR
    from verify.judge.outcome import OutputSpec
    from verify.runner import _trial_reference
    problem = vector_add_row("", "g", "vadd", 100_003).problem
    op = get_op(problem.op)
    specs = [OutputSpec("out", "float32")]
    terms = {"out": op.bound_terms(problem, "float32")}
    gpu = torch_cuda.device("cuda", 0)
    for trial in range(5):
        made = make_trial_inputs_device(problem, "g", trial, gpu)
        host = dataclasses.replace(made, storage=made.host_storage(), generator=HOST_GENERATOR,
                                   values={k: v.cpu().numpy() for k, v in made.values.items()})
        d_ref, d_spec, _ = _trial_reference(op, problem, made, specs, terms, "auto", gpu)
        h_ref, h_spec, _ = _trial_reference(op, problem, host, specs, terms, "numpy")
        assert np.array_equal(d_ref["out"].cpu().numpy(), h_ref["out"], equal_nan=True)
        for d, h in zip(d_spec["out"][:2], h_spec["out"][:2]):  # bound, agreement bound
            assert np.array_equal(np.broadcast_to(d.cpu().numpy(), h.shape), h, equal_nan=True)  # NaN stress inputs
        assert d_spec["out"][2:] == h_spec["out"][2:]


def test_a_large_group_gets_the_same_statuses_from_device_and_host_inputs(torch_cuda, tmp_path):
    from verify import verify_dataset
    from verify.trials import device_rng
    from verify.trials.inputs import HOST_GENERATOR
    ptx = compiled_or_skip(KERNELS)
    ShardWriter(tmp_path / "in").write([vector_add_row(ptx, "vadd_large", entry, N) for entry in EXPECT])
    got = {}
    for inputs in ("auto", "host"):
        out = tmp_path / f"out-{inputs}"
        summary = verify_dataset(tmp_path / "in", out, kernel_timeout=30.0, progress=False, inputs=inputs)
        got[inputs] = {r.name: r for r in read_records(out)}
        assert summary.worker_peak_rss_mib and summary.worker_peak_rss_mib[0] > 0
    for name, status in EXPECT.items():
        assert got["auto"][name].status == got["host"][name].status == status, (
            name, got["auto"][name].status_message, got["host"][name].status_message)
        assert set(got["auto"][name].provenance["verify"]["input_generators"]) == {device_rng.GENERATOR}
        assert set(got["host"][name].provenance["verify"]["input_generators"]) == {HOST_GENERATOR}
    assert got["auto"]["vadd"].time_us_median and got["auto"]["vadd"].time_samples >= 10
    witness = got["auto"]["vadd_off_by_ulp"].witness
    from verify.trials.witness import regenerate
    assert regenerate(got["auto"]["vadd_off_by_ulp"]).reference == pytest.approx(witness["reference"], rel=1e-5)


@pytest.mark.parametrize("problem", PARITY_PROBLEMS, ids=lambda p: p.problem_id)
def test_the_cuda_device_prepares_every_op_as_the_host(torch_cuda, problem):
    """The row ops, attention, gated units and Mirage's LLM ops written for numpy and torch
    alike: on the CUDA device (its own float64 sums and libdevice), the same references,
    bounds and refusals as numpy's on the same inputs."""
    assert_prepared_on_the_device_as_on_the_host(problem, torch_cuda.device("cuda", 0))
