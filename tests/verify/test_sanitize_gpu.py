"""GPU test of ``ptxds verify --sanitize``: memcheck must see a read past the end of a
buffer even where, with buffers allocated back to back, it would land in the next one;
its finding sets the status, and a racecheck hazard the group's other members lack gives
``race_detected``. Skipped without a CUDA driver or without compute-sanitizer."""
import json
import os
import shutil

import pytest

from helpers import vector_add_row

from dataset_spec.store.shards import ShardWriter, read_records

pytestmark = pytest.mark.gpu

N = 1000

KERNELS = r"""
extern "C" __global__ void vadd(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}
extern "C" __global__ void vadd_peeks_past_x(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // 4 KiB past x's start: where the next buffer sits when buffers are allocated back to
    // back. 0 * peek keeps the sum right whenever the bytes there are finite.
    float peek = x[i + 1024];
    if (i < n) out[i] = x[i] + y[i] + 0.0f * peek;
}
extern "C" __global__ void vadd_shared(const float* x, const float* y, float* out, int n) {
    __shared__ float slot[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    slot[threadIdx.x] = i < n ? x[i] + y[i] : 0.0f;
    __syncthreads();  // vadd_racy_quietly without its race
    float other = slot[(threadIdx.x + 32) % 256];
    if (i < n) out[i] = slot[threadIdx.x] + ((other != other && x[i] != x[i]) ? 1.0f : 0.0f);
}
extern "C" __global__ void vadd_racy_quietly(const float* x, const float* y, float* out, int n) {
    __shared__ float slot[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    slot[threadIdx.x] = i < n ? x[i] + y[i] : 0.0f;
    // no __syncthreads(): reads another warp's slot, but the value read never changes the
    // output (NaN + 1 is NaN), so no rerun can tell: only racecheck sees the hazard
    float other = slot[(threadIdx.x + 32) % 256];
    if (i < n) out[i] = slot[threadIdx.x] + ((other != other && x[i] != x[i]) ? 1.0f : 0.0f);
}
extern "C" __global__ void vadd_racy(const float* x, const float* y, float* out, int n) {
    __shared__ float slot[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    slot[threadIdx.x] = i < n ? x[i] + y[i] : 0.0f;
    // no __syncthreads(): reads a slot another warp may not have written yet
    if (i < n) out[i] = slot[(threadIdx.x + 32) % 256] - slot[(threadIdx.x + 32) % 256] + slot[threadIdx.x];
}
"""


def _row(ptx, entry):
    return vector_add_row(ptx, "vadd_san", entry, N)


def _kernels_ptx() -> str:
    """KERNELS compiled for sm_80; skips without compute-sanitizer or nvcc."""
    if not (os.environ.get("PTXDS_COMPUTE_SANITIZER") or shutil.which("compute-sanitizer")):
        pytest.skip("compute-sanitizer is not on PATH (set PTXDS_COMPUTE_SANITIZER)")
    ptx_tools = pytest.importorskip("ptx_tools")
    try:
        ptx = ptx_tools.compile_cuda(KERNELS, "sm_80")
    except ptx_tools.ToolchainError as exc:
        pytest.skip(f"no nvcc: {exc}")
    return ptx


def test_sanitize_sees_a_read_past_the_end_and_sets_the_status(tmp_path):
    ptx = _kernels_ptx()
    from verify import verify_dataset
    ShardWriter(tmp_path / "in").write([_row(ptx, e) for e in ("vadd", "vadd_peeks_past_x", "vadd_racy")])
    verify_dataset(tmp_path / "in", tmp_path / "out", timing=False, progress=False, sanitize=True)
    got = {r.name: r for r in read_records(tmp_path / "out")}
    found = {name: json.loads(row.sanitizer) for name, row in got.items()}

    good = found["vadd"]["memcheck"]
    assert got["vadd"].status == "passed", got["vadd"].status_message
    # freed spacers sit between the buffers: at least a buffer's length of invalid memory
    assert good["errors"] == 0 and good["min_gap_bytes"] >= 4 * N, good

    peek = found["vadd_peeks_past_x"]["memcheck"]
    assert peek["invalid_reads"] > 0 and peek["invalid_writes"] == 0, peek
    assert got["vadd_peeks_past_x"].status == "out_of_bounds_read", got["vadd_peeks_past_x"].status_message

    race = found["vadd_racy"]["racecheck"]
    assert race["errors"] > 0, race
    assert got["vadd_racy"].status == "race_detected", got["vadd_racy"].status_message
    assert found["vadd"]["racecheck"]["errors"] == 0, found["vadd"]["racecheck"]


def test_every_member_gets_racecheck_without_sanitize(tmp_path):
    """Without --sanitize, every passing member that uses shared memory is race-checked
    once (one sanitizer process for the run's GPU thread): the one whose race no rerun can see is
    race_detected, the one that synchronises passes, the one without shared memory is
    skipped."""
    ptx = _kernels_ptx()
    from verify import verify_dataset
    # the racy member before the clean one: a hazard given to the wrong member shows
    ShardWriter(tmp_path / "in").write([_row(ptx, e) for e in ("vadd", "vadd_racy_quietly", "vadd_shared")])
    verify_dataset(tmp_path / "in", tmp_path / "out", timing=False, progress=False)
    got = {r.name: r for r in read_records(tmp_path / "out")}
    found = {name: json.loads(row.sanitizer or "{}") for name, row in got.items()}
    assert got["vadd_racy_quietly"].status == "race_detected", got["vadd_racy_quietly"].status_message
    assert found["vadd_racy_quietly"]["racecheck"]["errors"] > 0, found["vadd_racy_quietly"]
    assert got["vadd_shared"].status == "passed", got["vadd_shared"].status_message
    assert found["vadd_shared"]["racecheck"]["errors"] == 0, found["vadd_shared"]
    assert "skipped" in found["vadd"]["racecheck"], found["vadd"]
    assert got["vadd_shared"].provenance["verify"]["racecheck"].startswith("ran: every member")

    verify_dataset(tmp_path / "in", tmp_path / "off", timing=False, progress=False, racecheck=False)
    assert {r.name: r.status for r in read_records(tmp_path / "off")}["vadd_racy_quietly"] == "passed"
