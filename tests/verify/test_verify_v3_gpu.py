"""GPU tests of the verifier's runtime checks (issue 18): read-only inputs and guard pages
through the virtual memory API, random guard fills, two poisons, scheduling perturbations
and the nondeterminism policy, each on a small hand-written kernel compiled with nvcc.

Skipped (one line, see conftest.py) where no CUDA driver or device is present.
"""
import pytest

from helpers import compiled_or_skip, vector_add_row

from dataset_spec.store.shards import ShardWriter, read_records

pytestmark = pytest.mark.gpu

N = 1000  # 4000 bytes: a multiple of 16, so the buffer's end lands on its guard page

KERNELS = r"""
extern "C" __global__ void vadd(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
extern "C" __global__ void vadd_restores_input(float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float keep = x[i];
        x[i] = 0.0f;                       // scribbles on an input ...
        __threadfence();
        out[i] = keep + y[i];
        x[i] = keep;                       // ... and puts it back before the kernel ends
    }
}
extern "C" __global__ void vadd_tail_copy(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    volatile float* o = out;
    if (i < n) out[i] = x[i] + y[i];
    else if (i < n + 4) o[i] = o[i];       // a tail store past the end that writes back what it read
}
extern "C" __global__ void vadd_reads_past_end(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = x[i] + y[i];
        if (i == n - 1)
            for (int k = 0; k < 16; ++k) s += fminf(fabsf(x[n + k]), 1.0f);   // a missing tail mask
        out[i] = s;
    }
}
extern "C" __global__ void vadd_reads_own_output(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = fmaxf(out[i], x[i] + y[i]);   // fmaxf(NaN, v) = v: passes one fixed NaN poison
}
extern "C" __global__ void vadd_clock_bit(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __uint_as_float(__float_as_uint(x[i] + y[i]) ^ (unsigned)(clock64() & 1));
}
extern "C" __global__ void vadd_clock_bit_atomic(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = x[i] + y[i];
        atomicAdd(&out[i], 0.0f);          // a floating-point atomic in a correct kernel
    }
}
"""


@pytest.fixture(scope="module")
def ptx():
    return compiled_or_skip(KERNELS)


def _row(ptx, group, entry):
    return vector_add_row(ptx, group, entry, N)


EXPECT = {
    "vadd": "passed",
    "vadd_restores_input": "modified_input",
    "vadd_tail_copy": "out_of_bounds_write",
    "vadd_reads_past_end": "out_of_bounds_read",
    "vadd_reads_own_output": "wrong_result",
    # The flipped low bit is 1 ulp, outside vector add's exactly-rounded bound: wrong_result
    # where the clock's parity stays the same between runs (on an idle GPU it often does);
    # where it changes, the runs differ bitwise, which classify() diagnoses before the bound
    # (verify/judge/outcome.py), so race_detected (see RACE_FIRST)
    "vadd_clock_bit": "wrong_result",
}
RACE_FIRST = {"vadd_clock_bit"}


def test_runtime_checks_catch_each_class(ptx, tmp_path):
    from verify import verify_dataset
    from verify.device.driver import Context
    from verify.member.fence import vmm_support
    vmm = not vmm_support(Context(0).device)
    rows = [_row(ptx, "vadd_v3", entry) for entry in EXPECT]
    rows.append(_row(ptx, "vadd_v3_atomic", "vadd_clock_bit_atomic"))
    ShardWriter(tmp_path / "in").write(rows)
    verify_dataset(tmp_path / "in", tmp_path / "out", trials=2, kernel_timeout=20.0, progress=False,
                   time_budget=0.05)
    got = {r.name: r for r in read_records(tmp_path / "out")}
    for name, status in EXPECT.items():
        if not vmm and name in ("vadd_restores_input", "vadd_tail_copy"):
            continue  # only the read-only fences see writes that leave the bytes as they were
        if name in RACE_FIRST and "differ bitwise between runs" in (got[name].status_message or ""):
            status = "race_detected"
        assert got[name].status == status, f"{name}: {got[name].status} {got[name].status_message}"
    assert "reads its own output" in got["vadd_reads_own_output"].status_message
    assert got["vadd"].deterministic is True
    atomic = got["vadd_clock_bit_atomic"]
    # a correct kernel with floating-point atomics passes (the suite in tests/data/adversarial_v3
    # has a split-K GEMM whose atomics do make runs differ, judged against the bound)
    assert atomic.status == "passed", atomic.status_message


def test_fenced_buffers_place_ends_and_starts_on_guard_pages():
    from verify.device.driver import Context, check, cu
    from verify.member.fence import FencedBuffer, GuardPage, vmm_support
    import numpy as np
    ctx = Context(0)
    reason = vmm_support(ctx.device)
    if reason:
        pytest.skip(reason)
    page = GuardPage(0)
    sizes = (4000, 1002, page.granularity, 1)
    buffers = [FencedBuffer(page, n, read_only=True) for n in sizes]
    try:
        for buf, n in zip(buffers, sizes):
            after = buf.kernel_address("after")
            assert after % 16 == 0 and 0 <= (-(after + n)) % page.granularity < 16
            assert buf.kernel_address("before") % page.granularity == 0
            data = np.arange(n, dtype=np.uint8)
            fill = np.random.default_rng(n).integers(0, 256, 1 << 16, dtype=np.uint8)
            for placement in ("after", "before"):
                buf.place(placement)
                page.fill(fill)
                buf.arm(fill)
                buf.upload(data)
                seen = np.empty(n + 8, dtype=np.uint8)  # what a kernel reads through its view
                check(cu.cuMemcpyDtoH(seen.ctypes.data, cu.CUdeviceptr(buf.kernel_address(placement)), n + 8),
                      "cuMemcpyDtoH")
                assert np.array_equal(seen[:n], data)
                # after the end: the slack up to the page (filled from the fill's start), then the page
                slack = buf.data_size - buf.offsets[placement] - n
                beyond = np.concatenate([fill[:slack], fill])
                assert np.array_equal(seen[n:], beyond[:8])
                assert buf.hits(fill) == []
    finally:
        for buf in buffers:
            buf.free()
        page.free()
