"""GPU tests of the coverage probe and of racecheck for dropped barriers: a counter at a site
on the executed path counts every thread that ran it, one in a branch never taken counts
zero; end to end, a mutant of code that never runs is ``unexercised`` (a positive labelled
so), so is one whose change ran but never altered a value its thread used (the divergence
probe counts 0: x + y -> y + x), one that ran, altered a value (a neighbour's address) and
still matched stays ``passed`` (a survivor), and a dropped barrier is killed, also one that
only ordered ``cp.async`` copies, which racecheck sees in their synchronous form; a dropped
barrier that ordered nothing (each thread reads its own write back) is ``unexercised``, as
racecheck shows. Skipped where no CUDA driver or device is present."""
import json
import re

import pytest

from helpers import vector_add_row

from dataset_spec.model import KernelRecord

pytestmark = pytest.mark.gpu

N = 1000

KERNELS = r"""
extern "C" __global__ void vadd_rare(const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i] + y[i];
    if (n < 0) {                        // never taken: sizes are positive
        for (int k = 0; k < -n; ++k) v = v * 1.5f + x[k];
    }
    out[i] = v;
}
extern "C" __global__ void vadd_shared(const float* x, const float* y, float* out, int n) {
    __shared__ float slot[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    slot[threadIdx.x] = i < n ? x[i] + y[i] : 0.0f;
    __syncthreads();                    // the neighbour's slot below is read after this
    int j = (threadIdx.x + 32) % 256;
    // The neighbour's slot is read (a race once the barrier is gone) but never changes the
    // result; slot[j] * 0.0f would, for the stress trial's infinities (inf * 0 = NaN).
    float neighbour = ((volatile float*)slot)[j];
    if (i < n) out[i] = slot[threadIdx.x];
    if (neighbour == 1234.5f && i == -7) out[0] = neighbour;  // never true: keeps the read
}
extern "C" __global__ void vadd_own(const float* __restrict__ x, const float* __restrict__ y,
                                    float* __restrict__ out, int n) {  // restrict: ld.global.nc
    __shared__ float slot[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    slot[threadIdx.x] = i < n ? x[i] + y[i] : 0.0f;
    __syncthreads();                    // orders nothing: each thread reads back its own slot
    if (i < n) out[i] = ((volatile float*)slot)[threadIdx.x];
}
extern "C" __global__ void vadd_async(const float* x, const float* y, float* out, int n) {
    __shared__ __align__(16) float slot[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned dst = (unsigned)__cvta_generic_to_shared(&slot[threadIdx.x]);
    const float* src = x + (i < n ? i : 0);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(dst), "l"(src) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();                    // orders every thread's copy before the neighbour's read
    float neighbour = ((volatile float*)slot)[(threadIdx.x + 32) % 256];
    if (i < n) out[i] = ((volatile float*)slot)[threadIdx.x] + y[i];
    if (neighbour == 1234.5f && i == -7) out[0] = neighbour;  // never true: keeps the read
}
"""


@pytest.fixture(scope="module")
def ptx():
    ptx_tools = pytest.importorskip("ptx_tools")
    try:
        return ptx_tools.normalize_ptx(ptx_tools.compile_cuda(KERNELS, "sm_80"))
    except ptx_tools.ToolchainError as exc:
        pytest.skip(f"no nvcc: {exc}")


def _row(ptx: str, group: str, entry: str, name: str, kernel_id: str, variant: dict = None) -> KernelRecord:
    return vector_add_row(ptx, group, entry, N, name, variant, kernel_id=kernel_id)


def _mutant(base: KernelRecord, pattern: str, replace, operator: str, name: str) -> KernelRecord:
    """``base`` with the first line of its entry matching ``pattern`` rewritten by ``replace``
    (deleted when it returns None)."""
    lines = base.ptx.split("\n")
    start = next(i for i, line in enumerate(lines) if f".entry {base.launches[0].entry}(" in line)
    index = next(i for i in range(start, len(lines)) if re.search(pattern, lines[i]))
    new = replace(lines[index])
    lines[index:index + 1] = [] if new is None else [new]
    return _row("\n".join(lines), base.group_id, base.launches[0].entry, name, f"{base.kernel_id}-{name}",
                {"mutation": operator, "base": base.kernel_id, "name": name})


def _swap_sources(line: str) -> str:
    head, a, b = re.match(r"(.*?\s%f\d+,) (%f\d+), (%f\d+);", line).groups()
    return f"{head} {b}, {a};"


def _rare_rows(ptx: str, group: str = "test/coverage/rare") -> tuple:
    base = _row(ptx, group, "vadd_rare", "rare", "rare-base")
    ran = _mutant(base, r"^\s*add\.f32 ", _swap_sources, "swap_operands", "sum_swapped")  # x+y == y+x
    never = _mutant(base, r"0f3FC00000", lambda line: line.replace("0f3FC00000", "0f40000000", 1),
                    "off_by_one", "rare_loop_changed")
    return base, ran, never


def test_the_counter_counts_the_executed_path_and_not_a_branch_never_taken(ptx):
    from verify.probes.coverage import probe_record
    from verify.runner import prepare_problem
    from verify.worker import GpuWorker
    base, ran, never = _rare_rows(ptx)
    prepared = prepare_problem(base.problem, base.group_id, 2)
    payload = [(t.trial, f"coverage:{t.trial}", t.seed, t.storage) for t in prepared.trials]
    worker = GpuWorker(0)
    try:
        counts = {}
        for mutant in (ran, never):
            probed = probe_record(mutant, base.ptx)
            reply = worker.site_count(probed.record.to_json(), base.group_id, payload, probed.counter, 60.0)
            assert "error" not in reply, reply
            counts[mutant.name] = reply["counts"]
    finally:
        worker.close()
    assert counts["sum_swapped"] == [N, N]  # once per thread with i < n, on each trial
    assert counts["rare_loop_changed"] == [0, 0]


def test_unexercised_survived_and_a_dropped_barrier_end_to_end(ptx, tmp_path):
    from dataset_spec.store.shards import ShardWriter, read_pairs, read_records
    from ptxds.pairs import KILLED_STATUSES, write_pairs
    from verify import verify_dataset
    from verify.probes.race_focus import automatic_sanitizer
    base, ran, never = _rare_rows(ptx)
    shared = _row(ptx, "test/coverage/shared", "vadd_shared", "shared", "shared-base")
    dropped = _mutant(shared, r"^\s*bar\.sync 0;", lambda line: None, "drop_barrier", "no_barrier")
    # the neighbour's address moves by one element: the value read changes, the output not
    shifted = _mutant(shared, r"^\s*add\.s32 %r\d+, %r\d+, 128;", lambda line: line.replace("128;", "132;"),
                      "off_by_one", "neighbour_shifted")
    copies = _row(ptx, "test/coverage/async", "vadd_async", "async", "async-base")
    copies_dropped = _mutant(copies, r"^\s*bar\.sync 0;", lambda line: None, "drop_barrier", "copies_no_barrier")
    own = _row(ptx, "test/coverage/own", "vadd_own", "own", "own-base")
    own_dropped = _mutant(own, r"^\s*bar\.sync 0;", lambda line: None, "drop_barrier", "own_no_barrier")
    ShardWriter(tmp_path / "in").write([base, ran, never, shared, dropped, shifted, copies, copies_dropped,
                                        own, own_dropped])
    verify_dataset(tmp_path / "in", tmp_path / "out", timing=False, kernel_timeout=60, progress=False)
    out = {r.name: r for r in read_records(tmp_path / "out")}
    assert out["rare"].status == "passed" and out["shared"].status == "passed"
    assert out["rare_loop_changed"].status == "unexercised", out["rare_loop_changed"].status_message
    assert out["rare_loop_changed"].provenance["verify"]["coverage"]["exercised"] is False
    # x + y -> y + x ran on every thread and never changed a value: unexercised, said why
    assert out["sum_swapped"].status == "unexercised", out["sum_swapped"].status_message
    coverage = out["sum_swapped"].provenance["verify"]["coverage"]
    assert coverage["exercised"] is True and all(c == N for c in coverage["counts"])
    assert coverage["diverged"] == [0] * len(coverage["counts"])
    assert "never took effect" in out["sum_swapped"].status_message
    assert out["async"].status == "passed"
    assert out["neighbour_shifted"].status == "passed", out["neighbour_shifted"].status_message
    coverage = out["neighbour_shifted"].provenance["verify"]["coverage"]
    assert coverage["exercised"] is True and coverage["diverged"] and all(coverage["diverged"])
    sanitizer, missing = automatic_sanitizer()
    if sanitizer:
        assert out["no_barrier"].status in KILLED_STATUSES, out["no_barrier"].status_message
        if out["no_barrier"].status == "race_detected":  # the trials passed: racecheck found it
            assert json.loads(out["shared"].sanitizer)["racecheck"]["errors"] == 0
            assert out["no_barrier"].provenance["verify"]["racecheck"].startswith("ran: a drop_barrier mutant")
        # a barrier between each thread's write and its own read orders nothing: racecheck shows it
        assert out["own_no_barrier"].status == "unexercised", out["own_no_barrier"].status_message
        # the ordering probe (run before racecheck) says so, with its counts
        message = out["own_no_barrier"].status_message
        assert "the barrier ordered nothing here" in message and ", 0 conflicts over" in message, message
        mutant = out["copies_no_barrier"]
        assert mutant.status in KILLED_STATUSES, mutant.status_message
        if mutant.status == "race_detected" and not json.loads(mutant.sanitizer)["racecheck"].get("errors"):
            # racecheck missed the copies; their synchronous form showed the hazard
            found = mutant.provenance["verify"]["racecheck_sync_copies"]
            assert found["mutant"] > 0 and found["base"] == 0
    elif out["no_barrier"].status == "passed":
        assert out["no_barrier"].provenance["verify"]["racecheck"].startswith("not run")
    write_pairs(tmp_path / "out")
    pairs = read_pairs(tmp_path / "out")
    unexercised = [p for p in pairs if out["rare_loop_changed"].kernel_id in (p.kernel_a, p.kernel_b)]
    assert unexercised and all(p.equivalent is True and p.label_source == "unexercised" for p in unexercised)
    ineffective = [p for p in pairs if out["sum_swapped"].kernel_id in (p.kernel_a, p.kernel_b)]
    assert ineffective and all(p.equivalent is True and p.label_source == "unexercised" for p in ineffective)
    survived = [p for p in pairs if out["neighbour_shifted"].kernel_id in (p.kernel_a, p.kernel_b)]
    assert survived and all(p.equivalent is None and p.label_source == "survived" for p in survived)
