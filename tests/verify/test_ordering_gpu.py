"""GPU tests of the ordering probe (ptx_tools/instrument/ordering.py): a barrier between each
thread's write and a neighbour's read conflicts, in global and in shared memory, on every
trial; one between each thread's write and its own read, or between two ring slots that
never meet (the Smith-Waterman pattern), orders nothing, and its dropped-barrier mutant is
``unexercised`` end to end, while the handoff's stays a survivor that says it raced.
Skipped where no CUDA driver or device is present."""
import re

import pytest

from helpers import compiled_or_skip, vector_add_row

pytestmark = pytest.mark.gpu

N = 1000

KERNELS = r"""
extern "C" __global__ void handoff_global(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i];
    __syncthreads();                    // orders the neighbour's write before the read below
    int j = blockIdx.x * blockDim.x + (threadIdx.x + 1) % blockDim.x;
    float neighbour = j < n ? ((volatile float*)out)[j] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = x[i] + y[i];
    if (neighbour == 1234.5f && i == -7) out[0] = neighbour;  // never true: keeps the read
}
extern "C" __global__ void own_global(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i];
    __syncthreads();                    // orders nothing: each thread reads back its own element
    if (i < n) out[i] = ((volatile float*)out)[i] + y[i];
}
extern "C" __global__ void handoff_shared(const float* x, const float* y, float* out, int n) {
    __shared__ float slot[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    slot[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    float neighbour = ((volatile float*)slot)[(threadIdx.x + 32) % 256];
    if (i < n) out[i] = ((volatile float*)slot)[threadIdx.x] + y[i];
    if (neighbour == 1234.5f && i == -7) out[0] = neighbour;
}
extern "C" __global__ void ring_global(const float* x, const float* y, float* out, int n) {
    // a two-slot ring per CTA in the CTA's own 256 outputs: step s reads the left lane of
    // slot (s+1)%2 and writes slot s%2. The first barrier of a step separates reads of one
    // slot from writes of the other (it orders nothing); the second orders the writes
    // before the next step's reads.
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    bool ringed = base + 256 <= n && lane < 128;
    volatile float* ring = out + base;
    float acc = 0.0f;
    if (ringed) { ring[lane] = 0.0f; ring[128 + lane] = 0.0f; }
    __syncthreads();
#pragma unroll 1
    for (int s = 0; s < 8; ++s) {
        float left = ringed ? ring[((s + 1) % 2) * 128 + (lane + 127) % 128] : 0.0f;
        acc += left;
        __syncthreads();
        if (ringed) ring[(s % 2) * 128 + lane] = acc;
        __syncthreads();
    }
    if (i < n) out[i] = x[i] + y[i] + (acc == -1234.5f ? 1.0f : 0.0f);
}
"""


@pytest.fixture(scope="module")
def ptx():
    from ptx_tools import normalize_ptx
    return normalize_ptx(compiled_or_skip(KERNELS))


def _entry_lines(ptx: str, entry: str) -> tuple:
    lines = ptx.split("\n")
    start = next(i for i, line in enumerate(lines) if f".entry {entry}(" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("}"))
    return lines, start, end


def _dropped(ptx: str, entry: str, which: int, group: str):
    """(base row, mutant row without the ``which``-th bar.sync of ``entry``)."""
    base = vector_add_row(ptx, group, entry, N, entry, kernel_id=f"{entry}-base")
    lines, start, end = _entry_lines(ptx, entry)
    barriers = [i for i in range(start, end) if re.match(r"^\s*bar\.sync 0;", lines[i])]
    del lines[barriers[which]]
    name = f"{entry}_no_barrier{which}"
    mutant = vector_add_row("\n".join(lines), group, entry, N, name,
                            {"mutation": "drop_barrier", "base": base.kernel_id, "name": name},
                            kernel_id=f"{entry}-{name}")
    return base, mutant


def test_the_probe_counts_conflicts_only_where_the_barrier_orders_two_threads(ptx):
    from ptx_tools.instrument.ordering import COUNTER_WORDS
    from verify.probes.coverage import ordering_record
    from verify.runner import prepare_problem
    from verify.worker import GpuWorker
    cases = {("handoff_global", 0): True, ("handoff_shared", 0): True, ("own_global", 0): False,
             ("ring_global", 1): False, ("ring_global", 2): True}
    answers = {}
    worker = GpuWorker(0)
    try:
        for (entry, which), _ in cases.items():
            base, mutant = _dropped(ptx, entry, which, f"test/ordering/{entry}")
            prepared = prepare_problem(base.problem, base.group_id, 2)
            payload = [(t.trial, f"ordering:{entry}:{t.trial}", t.seed, t.storage) for t in prepared.trials]
            probed = ordering_record(base, mutant.ptx)
            reply = worker.site_count(probed.record.to_json(), base.group_id, payload, probed.counter, 60.0,
                                      words=COUNTER_WORDS)
            assert "error" not in reply, (entry, reply)
            answers[(entry, which)] = reply["counts"]
    finally:
        worker.close()
    for key, conflicts in cases.items():
        per_trial = answers[key]
        assert len(per_trial) == 2 and all(len(t) == 4 for t in per_trial), per_trial
        assert all(t[1] > 0 and t[3] > 0 and t[2] == 0 for t in per_trial), (key, per_trial)  # looked up, no overflow
        assert all((t[0] > 0) == conflicts for t in per_trial), (key, per_trial)


def test_a_dropped_barrier_that_ordered_nothing_is_unexercised_end_to_end(ptx, tmp_path):
    from dataset_spec.store.shards import ShardWriter, read_records
    from verify import verify_dataset
    own, own_dropped = _dropped(ptx, "own_global", 0, "test/ordering/own")
    ring, ring_first = _dropped(ptx, "ring_global", 1, "test/ordering/ring")
    handoff, handoff_dropped = _dropped(ptx, "handoff_global", 0, "test/ordering/handoff")
    ShardWriter(tmp_path / "in").write([own, own_dropped, ring, ring_first, handoff, handoff_dropped])
    verify_dataset(tmp_path / "in", tmp_path / "out", timing=False, kernel_timeout=60, progress=False)
    out = {r.name: r for r in read_records(tmp_path / "out")}
    assert out["own_global"].status == "passed" and out["ring_global"].status == "passed"
    for name in ("own_global_no_barrier0", "ring_global_no_barrier1"):
        row = out[name]
        assert row.status == "unexercised", (name, row.status, row.status_message)
        assert "ordered nothing" in row.status_message
        ordering = row.provenance["verify"]["coverage"]["ordering"]
        assert ordering and all(t[0] == 0 and t[1] > 0 for t in ordering)
    # the handoff's output never depends on the neighbour's value, so no trial can kill it;
    # the probe saw the conflicts, so it is never called equivalent
    row = out["handoff_global_no_barrier0"]
    assert row.status != "unexercised", row.status_message
    ordering = row.provenance["verify"]["coverage"].get("ordering")
    assert ordering and all(t[0] > 0 for t in ordering), row.provenance["verify"]["coverage"]
