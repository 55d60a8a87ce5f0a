"""CPU tests of delay injection: the PTX instrumentation (ptx_tools/instrument/delays.py: where
delays go, fresh register names, both parities, refusals, ptxas accepts the copies of real
kernels) and the verifier's judgement of delayed runs (verify/probes/race_delays.py), selection
(race_focus.delay_reason), its place in the runner and the survivor note."""
import random
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from helpers import compiled_or_skip
from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem
from ptx_tools.instrument.delays import (DELAY_MARK, DelayError, delayed_copies, delayed_copy, is_block_barrier,
                                     is_shared_store, strip_delays)
from verify.probes.race_delays import delay_verdict, describe_for_survivor

HANDOFF = (Path(__file__).parents[1] / "data" / "race_handoff.cu").read_text()

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n\n"
KERNEL = HEADER + """.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<9>;
	.reg .b64 	%rd<4>;
	.shared .align 4 .b8 slot[1024];

	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	setp.lt.u32 	%p1, %r1, 32;
	shl.b32 	%r2, %r1, 2;
	mov.u32 	%r3, slot;
	add.s32 	%r4, %r3, %r2;
	@%p1 st.shared.u32 	[%r4], %r1;
	st.local.u32 	[%rd2], %r1;
	bar.sync 	0;
	ld.shared.u32 	%r5, [%r4+128];
	@!%p1 atom.global.add.u32 	%r6, [%rd2], %r5;
	red.shared.add.u32 	[%r4], 1;
	st.u32 	[%rd1], %r5;
	barrier.sync 	0;
	st.global.v2.u32 	[%rd2+8], {%r5, %r6};
	ret;
}
"""


def _code_lines(ptx: str) -> list:
    return [line for line in ptx.split("\n") if DELAY_MARK not in line]


def _blocks(ptx: str) -> list:
    """(line index of each delay block's opening brace, index of its closing brace)."""
    lines = ptx.split("\n")
    opens = [i for i, line in enumerate(lines) if line.strip() == f"{{ {DELAY_MARK}"]
    closes = [i for i, line in enumerate(lines) if line.strip() == f"}} {DELAY_MARK}"]
    assert len(opens) == len(closes)
    return list(zip(opens, closes))


def test_delays_go_before_every_shared_store_and_after_every_barrier():
    delayed = delayed_copy(KERNEL, 0, 3000)
    lines = delayed.ptx.split("\n")
    assert (delayed.stores, delayed.barriers) == (5, 2)  # st.local is private: no delay before it
    blocks = _blocks(delayed.ptx)
    assert len(blocks) == 7
    after_block = [lines[close + 1].strip() for _, close in blocks]
    before_block = [lines[open_ - 1].strip() for open_, _ in blocks]
    assert sum(1 for text in after_block if re.match(r"(@!?%p1 )?(st|atom|red)\.", text)) == 5
    assert sorted(text for text in before_block if "sync" in text) == ["bar.sync \t0;", "barrier.sync \t0;"]
    assert not any("st.local" in text for text in after_block)
    # every other line is unchanged, in order
    assert strip_delays(delayed.ptx) == KERNEL == "\n".join(_code_lines(delayed.ptx))
    assert lines.count(f"\t\t@%ptxds_dlp nanosleep.u32 3000; {DELAY_MARK}") == 7


def test_the_two_parities_compare_the_warp_index_with_0_and_1():
    zero, one = delayed_copies(KERNEL)
    assert (zero.parity, one.parity) == (0, 1)
    for copy in (zero, one):
        settings = re.findall(r"setp\.eq\.u32 %ptxds_dlp, %ptxds_dly0, (\d);", copy.ptx)
        assert settings == [str(copy.parity)] * 7
        # linear thread id from tid.x/y/z and ntid.x/y, then warp = id >> 5, parity = warp & 1
        body = [line.split("//")[0].strip() for line in copy.ptx.split("\n") if DELAY_MARK in line][:15]
        assert body[3:12] == ["mov.u32 %ptxds_dly0, %tid.z;", "mov.u32 %ptxds_dly1, %ntid.y;",
                              "mov.u32 %ptxds_dly2, %tid.y;",
                              "mad.lo.u32 %ptxds_dly0, %ptxds_dly0, %ptxds_dly1, %ptxds_dly2;",
                              "mov.u32 %ptxds_dly1, %ntid.x;", "mov.u32 %ptxds_dly2, %tid.x;",
                              "mad.lo.u32 %ptxds_dly0, %ptxds_dly0, %ptxds_dly1, %ptxds_dly2;",
                              "shr.u32 %ptxds_dly0, %ptxds_dly0, 5;", "and.b32 %ptxds_dly0, %ptxds_dly0, 1;"]
    assert zero.ptx.replace("%ptxds_dly0, 0;", "%ptxds_dly0, 1;") == one.ptx


def test_register_names_are_fresh_where_the_kernel_uses_the_stem():
    taken = KERNEL.replace(".reg .b64 \t%rd<4>;", ".reg .b64 \t%rd<4>;\n\t.reg .b32 %ptxds_dly<2>;\n"
                           "\t.reg .pred %ptxds_dlp;")
    delayed = delayed_copy(taken, 1)
    declared = re.findall(r"\.reg \.\w+ (%ptxds_dl\w*?)(?:<\d+>)?;", delayed.ptx)
    new = {name for name in declared if name not in ("%ptxds_dly", "%ptxds_dlp")}
    assert new == {"%ptxds_dly_", "%ptxds_dlp_"}
    used = set(re.findall(r"%ptxds_dl[yp]\w*", "\n".join(line for line in delayed.ptx.split("\n")
                                                         if DELAY_MARK in line and ".reg" not in line)))
    assert used == {"%ptxds_dlp_", "%ptxds_dly_0", "%ptxds_dly_1", "%ptxds_dly_2"}


@pytest.mark.parametrize("opcode, store, barrier", [
    ("st.global.f32", True, False), ("st.shared.v4.u32", True, False), ("st.u32", True, False),
    ("st.volatile.shared.u32", True, False), ("atom.global.add.u32", True, False), ("red.shared.add.u32", True, False),
    ("st.local.u32", False, False), ("st.param.b32", False, False), ("ld.global.f32", False, False),
    ("stmatrix.sync.aligned.m8n8.x4.shared.b16", True, False), ("bar.sync", False, True),
    ("barrier.sync.aligned", False, True), ("bar.red.popc.u32", False, True), ("bar.arrive", False, False),
    ("barrier.cluster.wait", False, False), ("mbarrier.try_wait.parity.shared.b64", False, False),
    ("cp.async.ca.shared.global", True, False), ("cp.async.cg.shared.global.L2::128B", True, False),
    ("cp.async.wait_group", False, False), ("cp.async.commit_group", False, False),
    ("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", False, False)])
def test_which_opcodes_get_delays(opcode, store, barrier):
    assert (is_shared_store(opcode), is_block_barrier(opcode)) == (store, barrier)


@pytest.mark.parametrize("edit, cause", [
    (lambda p: p.replace(".target sm_80", ".target sm_60"), "sm_60 is not sm_70 or later"),
    (lambda p: p.replace(".version 8.0", ".version 6.0"), "PTX ISA 6.0 is older than 6.3"),
    (lambda p: p.replace(".target sm_80\n", ""), "no .target"),
    (lambda p: p.replace("\tred.shared.add.u32 \t[%r4], 1;",
                         "\t{ .reg .pred q; setp.eq.u32 q, %r1, 0; @q red.shared.add.u32 [%r4], 1; }"),
     "line 26 holds a store or barrier the instrumentation cannot isolate"),
    (lambda p: re.sub(r"\n\t[^\n]*(st|atom|red|bar|barrier)\.[^\n]*", "", p), "no store, atomic, reduction"),
    (lambda p: delayed_copy(p, 0).ptx, "already holds delays"),
    (lambda p: p.replace("{\n\t.reg .pred", "{\n\t.reg .pred %x\n\t.reg .pred", 1).replace("ret;\n}", "ret;\n"),
     "does not parse"),
])
def test_refuses_ptx_it_cannot_instrument(edit, cause):
    with pytest.raises(DelayError, match=re.escape(cause)):
        delayed_copy(edit(KERNEL), 0)


def test_refuses_bad_arguments():
    with pytest.raises(DelayError, match="parity must be 0 or 1"):
        delayed_copy(KERNEL, 2)
    with pytest.raises(DelayError, match="nanoseconds must be in 1..1000000"):
        delayed_copy(KERNEL, 0, 2_000_000)
    with pytest.raises(DelayError, match="nothing to delay"):
        delayed_copy(KERNEL, 0, stores=False, barriers=False)
    assert delayed_copy(KERNEL, 0, barriers=False).barriers == 0
    assert delayed_copy(KERNEL, 0, stores=False).stores == 0


def test_ptxas_assembles_the_hand_written_kernel_and_a_cuda_kernel_delayed():
    from ptx_tools import assemble
    for copy in delayed_copies(KERNEL):
        assemble(copy.ptx, "sm_80")
    ptx = compiled_or_skip(HANDOFF)
    for copy in delayed_copies(ptx):
        assert copy.stores == 3 and copy.barriers == 1
        resources = assemble(copy.ptx, "sm_80").resources
        assert [r.entry for r in resources] == ["handoff"]


ASYNC_COPY = r"""
extern "C" __global__ void copy_then_read(const float* x, float* out, int n) {
    __shared__ __align__(16) float slot[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned dst = (unsigned)__cvta_generic_to_shared(&slot[threadIdx.x]);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(dst), "l"(x + (i < n ? i : 0)) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    if (i < n) out[i] = slot[(threadIdx.x + 32) % 256];
}
"""


def test_an_async_copy_into_shared_memory_is_delayed_and_the_copy_assembles():
    from ptx_tools import assemble
    ptx = compiled_or_skip(ASYNC_COPY)
    copy = delayed_copy(ptx, 1)
    lines = copy.ptx.split("\n")
    issue = next(i for i, line in enumerate(lines) if "cp.async.ca.shared.global" in line)
    assert lines[issue - 1].strip() == f"}} {DELAY_MARK}"
    wait = next(i for i, line in enumerate(lines) if "cp.async.wait_group" in line)
    assert DELAY_MARK not in lines[wait - 1]
    assert (copy.stores, copy.barriers) == (2, 1)  # the copy and the global store; the barrier
    assemble(copy.ptx, "sm_80")


def test_ptxas_assembles_delayed_handhack_members_and_their_dropped_barrier_mutant(tmp_path, monkeypatch):
    pytest.importorskip("triton")
    from builders.handhack.builder import ENTRY, MEMBERS, compile_sw
    from builders.handhack.ptx_edit import Ring, rings_to_shared
    from ptx_tools import assemble
    from ptx_tools.rewrite import Context, apply_mutation
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    compiled = compile_sw("sm_90a", 128)
    base = compiled.asm["ptx"]
    width = 129
    rings = [Ring(f"{ENTRY}_param_{index}", depth * width * 4) for index, depth in ((3, 3), (4, 2), (5, 2))]
    shared = rings_to_shared(base, ENTRY, rings, maxnreg=MEMBERS["shared"][1],
                             compiler_smem=int(compiled.metadata.shared or 0)).ptx
    mutant, edit = apply_mutation(base, "drop_barrier", random.Random(7), Context(block_threads={ENTRY: 128}))
    for ptx in (base, shared, mutant):
        for copy in delayed_copies(ptx):
            assert copy.stores > 0 and copy.barriers > 0
            assemble(copy.ptx, "sm_90a")
    assert delayed_copy(mutant, 0).barriers == delayed_copy(base, 0).barriers - 1


# ------------------------------------------------------------------ the verifier's judgement

def _outputs(*values) -> dict:
    return {"out": np.array(values, dtype=np.float32)}


GOOD, STALE = _outputs(1.0, 2.0, 3.0, 4.0), _outputs(1.0, 2.0, 0.0, 0.0)
REFERENCE = np.array([1.0, 2.0, 3.0, 4.0])


def _within_bound(outputs: dict) -> tuple:
    bad = int((np.abs(outputs["out"] - REFERENCE) > 1e-3).sum())
    return (bad == 0, f"out: {bad} of 4 elements outside the error bound")


def _runs(plain, zero, one) -> dict:
    return {"plain": plain, "parity0": zero, "parity1": one}


def _ok(outputs: dict) -> dict:
    return {"outputs": outputs}


def test_a_member_that_changes_where_its_base_does_not_is_race_detected():
    base = _runs(_ok(GOOD), _ok(GOOD), _ok(GOOD))
    verdict = delay_verdict(_runs(_ok(GOOD), _ok(STALE), _ok(GOOD)), base, _within_bound, True)
    assert verdict.status == "race_detected"
    assert verdict.message.startswith("outputs left the error bound when warps of parity 0 were delayed before "
                                      "their stores")
    assert "the dropped barrier ordered them" in verdict.message
    assert verdict.record["outcome"] == "race_detected"
    assert [v["result"] for v in verdict.record["variants"]] == [
        "outside the error bound: out: 2 of 4 elements outside the error bound", "same"]
    # within the bound but not bit-identical to a deterministic base's delayed run: also a race
    close = _outputs(1.0, 2.0, 3.0, 4.000001)
    verdict = delay_verdict(_runs(_ok(GOOD), _ok(GOOD), _ok(close)), base, _within_bound, True)
    assert verdict.status == "race_detected" and "warps of parity 1" in verdict.message
    assert verdict.record["compared"] == "bitwise against the base's delayed outputs"
    # a nondeterministic base: only the bound counts
    verdict = delay_verdict(_runs(_ok(GOOD), _ok(GOOD), _ok(close)), base, _within_bound, False)
    assert verdict.status is None and verdict.record["outcome"] == "no_change"


def test_a_base_that_changes_under_delays_leaves_the_member_alone():
    verdict = delay_verdict(_runs(_ok(GOOD), _ok(STALE), _ok(STALE)),
                            _runs(_ok(GOOD), _ok(GOOD), _ok(_outputs(1.0, 2.0, 3.0, 4.000001))), _within_bound, True)
    assert verdict.status is None and verdict.record["outcome"] == "base_changed"
    assert "parity 1" in verdict.record["note"] and "left alone" in verdict.record["note"]
    # a nondeterministic base that stays within its bound is steady
    verdict = delay_verdict(_runs(_ok(GOOD), _ok(STALE), _ok(GOOD)),
                            _runs(_ok(GOOD), _ok(GOOD), _ok(_outputs(1.0, 2.0, 3.0, 4.000001))), _within_bound, False)
    assert verdict.status == "race_detected"


def test_a_delayed_crash_kills_and_a_copy_that_did_not_run_is_unknown():
    base = _runs(_ok(GOOD), _ok(GOOD), _ok(GOOD))
    crash = {"error": "crashed", "message": "CUDA_ERROR_ILLEGAL_ADDRESS"}
    verdict = delay_verdict(_runs(_ok(GOOD), crash, _ok(GOOD)), base, _within_bound, True)
    assert verdict.status == "crashed" and "ILLEGAL_ADDRESS" in verdict.message
    assert "parity 0" in verdict.message
    for failure in ({"error": "load_failed", "message": "JIT"}, {"error": "launch_failed", "message": "too many"},
                    {"error": "timeout", "message": "no result"}):
        verdict = delay_verdict(_runs(_ok(GOOD), failure, _ok(GOOD)), base, _within_bound, True)
        assert verdict.status is None and verdict.record["outcome"] == "no_change_partial"
        verdict = delay_verdict(_runs(_ok(GOOD), failure, failure), base, _within_bound, True)
        assert verdict.status is None and verdict.record["outcome"] == "unknown"
    refused = delay_verdict(_runs(_ok(GOOD), None, None), _runs(_ok(GOOD), None, None), _within_bound, True,
                            refused={"parity0": "no .target", "parity1": "no .target"})
    assert refused.status is None and refused.record["outcome"] == "unknown" and "not built" in refused.record["note"]
    no_base = delay_verdict(_runs(_ok(GOOD), _ok(STALE), _ok(STALE)), {"plain": crash}, _within_bound, True)
    assert no_base.status is None and no_base.record["outcome"] == "unknown"


def test_the_survivor_note_says_the_delays_were_tried():
    tried = describe_for_survivor({"outcome": "no_change", "nanoseconds": 4000})
    assert tried.startswith("delay injection tried") and "4000 ns" in tried
    assert describe_for_survivor(None) == ""
    from verify.probes.coverage import _empirical_reason
    coverage = {"exercised": True, "counts": [128], "base_counts": [128]}
    reason = _empirical_reason("drop_barrier", coverage, {"outcome": "no_change", "nanoseconds": 4000})
    assert reason.reason == "race_not_observed" and "delay injection tried" in reason.detail
    assert reason.detail.endswith("a missing barrier is still a race (not proven equivalent)")
    assert "delay" not in _empirical_reason("drop_barrier", coverage).detail


# ------------------------------------------------------------------ selection and the runner

def _member(ptx: str, kernel_id: str, variant: dict, shared: bool = False, status: str = "passed") -> KernelRecord:
    problem = Problem("test/delays", "vector_add", [Buffer("x", "float32", (4,)), Buffer("y", "float32", (4,)),
                                                    Buffer("out", "float32", (4,), role="out")])
    launch = Launch("k", (1,), (64,), [Arg.buf("x"), Arg.buf("y"), Arg.buf("out")], dynamic_smem=256 if shared else 0)
    return KernelRecord("test/delays", "test", variant, kernel_id, "sm_80", ptx, [launch], problem,
                        kernel_id=kernel_id, build_key=kernel_id, status=status, provenance={})


def test_every_dropped_barrier_is_selected_even_without_shared_memory():
    from verify.probes.race_focus import delay_reason, racecheck_reason
    base = _member(KERNEL, "base", {})
    dropped = _member(KERNEL.replace("\tbar.sync \t0;\n", ""), "m", {"mutation": "drop_barrier", "base": "base"})
    dropped.resources = base.resources = [SimpleNamespace(shared_static=0)]
    assert racecheck_reason(dropped, base) == ""  # no shared memory: racecheck would not look
    assert delay_reason(dropped, base) == "a drop_barrier mutant"
    renamed = _member(KERNEL, "r", {"rewrites": ["rename_registers"], "base": "base"})
    assert delay_reason(renamed, base) == ""
    far = _member(KERNEL.replace("%tid.x;", "%tid.x;\n\tadd.u32 %r7, %r1, 1;"), "f", {"mutation": "off_by_one"})
    assert delay_reason(far, base) == ""
    near = _member(KERNEL.replace("barrier.sync \t0;", "barrier.sync \t0;\n\tadd.u32 %r7, %r1, 1;"), "n",
                   {"mutation": "off_by_one"})
    assert delay_reason(near, base).startswith("its PTX differs from its base's near a barrier")
    assert delay_reason(_member(dropped.ptx, "k", dropped.variant, status="wrong_result"), base) == ""
    assert delay_reason(dropped, _member(KERNEL, "base", {}, status="disagrees")) == ""


class _FakeWorker:
    """Answers run_outputs as a GPU would for a kernel whose parity-0 warps write what the
    others read: the mutant (no barrier) reads stale values when parity-0 warps are late."""
    def __init__(self, crash_parity=None, racy=()):
        self.jobs = []
        self.crash_parity = crash_parity
        self.racy = set(racy)

    def run_outputs(self, records, group, trials, timeout):
        (name, record_json), = records
        record = KernelRecord.from_json(record_json)
        self.jobs.append((record.kernel_id, name))
        raced = ("bar.sync" not in record.ptx or record.kernel_id in self.racy) and name == "parity0"
        if name == "parity0" and self.crash_parity == 0 and "bar.sync" not in record.ptx:
            return {"error": "died", "message": "worker exited without a result"}
        return {"runs": {name: {"outputs": STALE if raced else GOOD}}}


def _run_delays(worker, rows):
    from verify.judge.outcome import OutputSpec
    from verify.runner import _ProblemTrials, _Run
    spec = OutputSpec("out", "float32", bounds=[np.full(4, 1e-3)], shape=(4,))
    trial = SimpleNamespace(trial=0, seed=1, kind="normal")
    prepared = _ProblemTrials(rows[0].problem, [trial], [{"out": REFERENCE}], [spec])
    prepared._host_storage = [{"x": np.zeros(4, np.float32)}]
    results = {row.build_key: row.status for row in rows}
    _Run._delay_races(SimpleNamespace(kernel_timeout=5.0), worker, "test/delays", rows, results,
                      {rows[0].problem.digest(): (prepared, prepared)})
    return results


def test_the_runner_runs_both_parities_of_member_and_base_and_marks_the_race():
    base = _member(KERNEL, "base", {})
    dropped = _member(KERNEL.replace("\tbar.sync \t0;\n", ""), "m", {"mutation": "drop_barrier", "base": "base"})
    worker = _FakeWorker()
    results = _run_delays(worker, [base, dropped])
    assert sorted(worker.jobs) == sorted((kid, name) for kid in ("base", "m")
                                         for name in ("plain", "parity0", "parity1"))
    assert results["m"] == dropped.status == "race_detected"
    assert dropped.status_message.startswith("outputs left the error bound when warps of parity 0 were delayed")
    assert dropped.status_message.endswith("(the checks said passed)")
    delays = dropped.provenance["verify"]["delays"]
    assert delays["reason"] == "a drop_barrier mutant" and delays["outcome"] == "race_detected"
    assert delays["variants"][0]["placements"] == ("warps of parity 0 sleep 4000 ns before 5 store(s) and after "
                                                   "1 barrier(s)")
    assert base.status == "passed" and "delays" not in base.provenance.get("verify", {})


def test_a_worker_that_dies_in_a_delayed_run_of_the_mutant_kills_it():
    base = _member(KERNEL, "base", {})
    dropped = _member(KERNEL.replace("\tbar.sync \t0;\n", ""), "m", {"mutation": "drop_barrier", "base": "base"})
    results = _run_delays(_FakeWorker(crash_parity=0), [base, dropped])
    assert results["m"] == "crashed" and "parity 0" in dropped.status_message


def test_a_worker_without_delayed_runs_leaves_the_outcome_unknown():
    base = _member(KERNEL, "base", {})
    dropped = _member(KERNEL.replace("\tbar.sync \t0;\n", ""), "m", {"mutation": "drop_barrier", "base": "base"})
    results = _run_delays(SimpleNamespace(), [base, dropped])
    assert results["m"] == dropped.status == "passed"
    assert dropped.provenance["verify"]["delays"]["outcome"] == "unknown"
    assert "cannot run delayed copies" in dropped.provenance["verify"]["delays"]["note"]


def test_a_member_changed_near_a_barrier_races_in_its_own_words():
    from verify.probes.race_delays import CHANGED_ORDER
    base = _member(KERNEL, "base", {})
    near = _member(KERNEL.replace("barrier.sync \t0;", "barrier.sync \t0;\n\tadd.u32 %r7, %r1, 1;"), "n",
                   {"rewrites": ["reorder_independent"], "base": "base"})
    steady = _member(near.ptx, "s", {"rewrites": ["reorder_independent"], "base": "base"})
    results = _run_delays(_FakeWorker(racy={"n"}), [base, near, steady])
    assert results["n"] == "race_detected" and near.status_message.split(" (the checks said")[0].endswith(CHANGED_ORDER)
    assert results["s"] == "passed" and steady.provenance["verify"]["delays"]["outcome"] == "no_change"


class _WorkerSide:
    """The worker attributes run_outputs uses; ``fail`` maps a record's kernel_id to what
    loading or running it raises."""
    def __init__(self, fail):
        self.inputs, self.inputs_group, self.device_outputs = {}, None, True
        self.fail, self.loaded = fail, None

    def _load_row(self, record, cubin):
        self.loaded = record
        if self.fail.get(record.kernel_id, (None, ""))[1] == "load":
            raise self.fail[record.kernel_id][0]

    def _run(self, inputs, seed, poison, fill):
        failure = self.fail.get(self.loaded.kernel_id)
        if failure and failure[1] == "run":
            raise failure[0]
        return dict(GOOD)


def test_the_worker_side_tells_a_crash_from_a_refused_load_or_launch_and_from_its_own_failure():
    from verify.device.driver import DriverError
    from verify.probes.race_delays import run_outputs
    names = ["ok", "illegal", "refused", "no_jit", "ours"]
    rows = {name: _member(KERNEL, name, {}) for name in names}
    worker = _WorkerSide({"illegal": (DriverError("CUDA_ERROR_ILLEGAL_ADDRESS", "x", "cuStreamSynchronize"), "run"),
                          "refused": (DriverError("CUDA_ERROR_INVALID_VALUE", "x", "cuLaunchKernelEx"), "run"),
                          "no_jit": (DriverError("CUDA_ERROR_INVALID_PTX", "x", "cuModuleLoadData"), "load"),
                          "ours": (ValueError("a bug"), "run")})

    def job(*which):
        return {"group": "g", "inputs": {"k:0": {}}, "trials": [(0, "k:0", 1)],
                "records": [(name, rows[name].to_json()) for name in which]}
    reply = run_outputs(worker, job("ok", "refused", "no_jit", "ours"))
    assert worker.device_outputs is False and not reply.get("fatal")
    assert {name: run.get("error") for name, run in reply["runs"].items()} == {
        "ok": None, "refused": "launch_failed", "no_jit": "load_failed", "ours": "failed"}
    reply = run_outputs(worker, job("illegal", "ok"))
    assert reply["fatal"] and list(reply["runs"]) == ["illegal"] and reply["runs"]["illegal"]["error"] == "crashed"
    missing = run_outputs(worker, dict(job("ok"), inputs={}, trials=[(0, "other:0", 1)]))
    assert missing["runs"]["ok"]["error"] == "no_inputs"
