"""Kernel timing: CUPTI records assembled into samples, the fallback to CUDA events, the
worker's reply, the Nsight Compute comparison's parsing and statistics, and (on a GPU)
CUPTI against events on kernels of known length."""
import enum
import random
import re
import sys

import numpy as np
import pytest

from verify.device import kernel_clock as kc
from verify.device.kernel_clock import (HOLD_KERNEL_NAME, KernelActivity, KernelClock, KernelClockUnavailable,
                                 RecordMismatch, RecordsMissing, assemble_samples)
from verify.timing.timing import SampleSet, Timing, TimingStats, should_stop


def _records(durations_ns, first_correlation=100, stream=7, hold_every=None, names=None):
    """Kernel records launched back to back in the order given; optionally a hold-kernel
    record before every ``hold_every`` member launches, as a held batch produces."""
    out, t, corr = [], 1_000_000, first_correlation
    for i, d in enumerate(durations_ns):
        if hold_every and i % hold_every == 0:
            out.append(KernelActivity(HOLD_KERNEL_NAME, t, t + 500_000, corr, stream))
            corr, t = corr + 1, t + 500_000
        name = names[i % len(names)] if names else "member"
        out.append(KernelActivity(name, t + 3000, t + 3000 + d, corr, stream))
        corr, t = corr + 1, t + 3000 + d
    return out


# ---- records -> samples ------------------------------------------------------------------

def test_samples_sum_their_launches_in_launch_order_whatever_the_delivery_order():
    # 3 samples x 2 launches; every launch has its own length so a wrong grouping shows.
    durations = [1000, 20000, 3000, 40000, 5000, 60000]
    records = _records(durations, hold_every=2, names=["gemm", "reduce"])
    random.Random(0).shuffle(records)  # several buffers, delivered in any order
    assert assemble_samples(records, 3, 2) == [21.0, 43.0, 65.0]


def test_hold_kernel_is_not_a_member():
    records = _records([5000, 7000], hold_every=1)
    assert sum(r.name == HOLD_KERNEL_NAME for r in records) == 2
    assert assemble_samples(records, 2, 1) == [5.0, 7.0]
    # counted as a member it would make four records for two samples
    with pytest.raises(RecordMismatch):
        assemble_samples(records, 2, 1, excluded_names=())


def test_records_from_before_the_batch_are_ignored():
    earlier = _records([99000] * 4, first_correlation=10)   # correctness runs, warm-up
    batch = _records([2000, 4000], first_correlation=50)
    assert assemble_samples(earlier + batch, 2, 1, after_correlation_id=13) == [2.0, 4.0]
    with pytest.raises(RecordMismatch):  # without the watermark they are extra records
        assemble_samples(earlier + batch, 2, 1)


def test_missing_extra_and_broken_records_are_refused():
    records = _records([1000, 2000, 3000, 4000])
    with pytest.raises(RecordsMissing):
        assemble_samples(records[:3], 2, 2)
    extra = records + _records([1000], first_correlation=500, names=["memset_kernel"])
    with pytest.raises(RecordMismatch, match="memset_kernel") as info:
        assemble_samples(extra, 2, 2)
    assert not isinstance(info.value, RecordsMissing)  # more records never arrive to fix this
    two_streams = records[:2] + _records([3000, 4000], first_correlation=200, stream=8)
    with pytest.raises(RecordMismatch, match="streams"):
        assemble_samples(two_streams, 2, 2)
    unfinished = records[:3] + [KernelActivity("member", 5000, 0, 999, 7)]
    with pytest.raises(RecordMismatch, match="complete"):
        assemble_samples(unfinished, 2, 2)


def test_hold_kernel_name_is_the_entry_of_the_hold_ptx():
    from verify.device.hold import HOLD_PTX
    assert re.search(rf"\.entry\s+{HOLD_KERNEL_NAME}\(", HOLD_PTX)


# ---- the collector, against a stand-in for cupti-python ------------------------------------

class FakeKind(enum.IntEnum):
    CONCURRENT_KERNEL = 10
    MEMSET = 2


class FakeRecord:
    def __init__(self, activity: KernelActivity, kind=FakeKind.CONCURRENT_KERNEL):
        # some bindings hand names over as bytes
        name = activity.name.encode() if activity.name == HOLD_KERNEL_NAME else activity.name
        self.kind, self.name, self.start, self.end = int(kind), name, activity.start_ns, activity.end_ns
        self.correlation_id, self.stream_id = activity.correlation_id, activity.stream_id


class FakeCupti:
    """cupti.cupti's activity calls: records "launched" with ``run`` are delivered through the
    registered callback on later flushes, ``lag`` flushes late, in reversed buffers."""
    ActivityKind = FakeKind

    def __init__(self, lag=0, forced_only=False):
        self.pending, self.lag, self.forced_only = [], lag, forced_only
        self.flushes, self.enabled, self.completed = [], [], None

    def activity_register_callbacks(self, requested, completed):
        assert requested()[0] > 0
        self.completed = completed

    def activity_enable(self, kind):
        self.enabled.append(kind)

    def activity_flush_all(self, flag):
        self.flushes.append(flag)
        if self.lag > 0 and not (self.forced_only and flag):
            self.lag -= 1
            return
        ready, self.pending = self.pending, []
        half = len(ready) // 2
        for buffer in (ready[half:], ready[:half]):  # the newer buffer first
            if buffer:
                self.completed(buffer)

    def run(self, activities, kind=FakeKind.CONCURRENT_KERNEL):
        self.pending += [FakeRecord(a, kind) for a in activities]


def test_clock_enables_concurrent_kernel_and_assembles_batches():
    cupti = FakeCupti()
    clock = KernelClock(cupti)
    assert cupti.enabled == [FakeKind.CONCURRENT_KERNEL]
    cupti.run(_records([9000] * 6, first_correlation=1))            # correctness runs
    clock.discard()
    cupti.run(_records([1000, 2000], first_correlation=20, hold_every=2))
    cupti.run(_records([500], first_correlation=30), kind=FakeKind.MEMSET)  # the L2 flush: not a kernel record
    assert clock.batch_durations_us(1, 2) == [3.0]
    cupti.run(_records([4000, 1000, 6000, 1000], first_correlation=40, hold_every=4))
    assert clock.batch_durations_us(2, 2) == [5.0, 7.0]


def test_clock_counts_only_the_kernels_of_the_bare_run():
    cupti = FakeCupti()
    clock = KernelClock(cupti)
    clock.discard()
    cupti.run(_records([1000, 2000], first_correlation=10, names=["gemm", "reduce"]))  # the bare run
    clock.learn_members(2)
    # a batch where the driver ran a kernel of its own for each L2 flush
    batch = []
    for i, (gemm, reduce) in enumerate([(3000, 1000), (5000, 1000)]):
        corr = 20 + 10 * i
        batch += _records([700], first_correlation=corr, names=["driver_memset_kernel"])
        batch += _records([gemm, reduce], first_correlation=corr + 1, names=["gemm", "reduce"])
    cupti.run(batch)
    assert clock.batch_durations_us(2, 2) == [4.0, 6.0]
    clock.discard()  # the next row has other kernels: the names are forgotten
    cupti.run(_records([8000], first_correlation=60, names=["softmax"]))
    assert clock.batch_durations_us(1, 1) == [8.0]
    cupti.run(_records([8000, 700], first_correlation=70, names=["softmax", "driver_memset_kernel"]))
    with pytest.raises(RecordMismatch):  # without a bare run every kernel counts
        clock.batch_durations_us(1, 1)


def test_the_flush_read_kernel_is_never_a_members_time():
    """verify's L2 flush reads its buffer back with a kernel before every sample: its records
    are left out by name even before the row's kernels are learned (a batch of 2 samples)."""
    from verify.device.l2flush import FLUSH_READ_ENTRY
    batch = []
    for i, member in enumerate([3000, 5000]):
        batch += _records([40_000], first_correlation=10 + 10 * i, names=[FLUSH_READ_ENTRY])
        batch += _records([member], first_correlation=11 + 10 * i, names=["gemm"])
    assert kc.assemble_samples(batch, 2, 1) == [3.0, 5.0]
    with pytest.raises(RecordMismatch):  # what it would be if the read kernel were counted
        kc.assemble_samples(batch, 2, 1, excluded_names=(HOLD_KERNEL_NAME,))
    cupti = FakeCupti()
    clock = KernelClock(cupti)
    clock.discard()
    cupti.run(_records([40_000], first_correlation=1, names=[FLUSH_READ_ENTRY])
              + _records([3000], first_correlation=2, names=["gemm"]))
    clock.learn_members(1)  # a stray read kernel in the bare run does not become a member
    cupti.run(batch[:2])
    assert clock.batch_durations_us(1, 1) == [3.0]


def test_flush_buffer_size_and_read_kernel_assembles():
    from verify.device.assembly_pool import assemble_for_gpu
    from verify.device.l2flush import FLUSH_MIN_BYTES, FLUSH_READ_PTX, flush_bytes
    assert flush_bytes(50 << 20) == 100 << 20 and flush_bytes(4 << 20) == FLUSH_MIN_BYTES
    result = assemble_for_gpu(FLUSH_READ_PTX, "sm_90")
    if result.cubin is None and "not found" in result.message.lower():
        pytest.skip(f"no ptxas: {result.message}")
    assert result.cubin is not None and result.cubin[:4] == b"\x7fELF", result.message


def test_clock_waits_for_late_records_then_gives_up():
    cupti = FakeCupti(lag=2)
    clock = KernelClock(cupti)
    cupti.run(_records([1000, 2000], first_correlation=5))
    assert clock.batch_durations_us(2, 1) == [1.0, 2.0]
    assert len(cupti.flushes) == 3  # two flushes came back empty, the third delivered
    never = FakeCupti(lag=100)
    clock = KernelClock(never)
    never.run(_records([1000]))
    with pytest.raises(RecordsMissing):
        clock.batch_durations_us(1, 1)
    assert never.flushes[-1] == kc.FLUSH_FORCED and never.flushes.count(kc.FLUSH_FORCED) == 1


def test_clock_reports_a_failing_start():
    class Refusing(FakeCupti):
        def activity_enable(self, kind):
            raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")
    with pytest.raises(KernelClockUnavailable, match="MULTIPLE_SUBSCRIBERS"):
        KernelClock(Refusing())


# ---- fallback to events --------------------------------------------------------------------

def test_no_cupti_module_means_events_with_the_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupti", None)  # import cupti -> ImportError
    monkeypatch.setattr(kc, "_shared", None)
    monkeypatch.setattr(kc, "_unavailable", "")
    with pytest.raises(KernelClockUnavailable, match="not installed"):
        KernelClock()
    clock, reason = kc.shared_clock()
    assert clock is None and "cupti-python is not installed" in reason
    assert kc.shared_clock() == (None, reason)  # tried once per process
    samples = SampleSet(clock, reason)
    samples.start()
    samples.add_batch([10.0, 11.0], 1)
    timing = samples.timing()
    assert timing.method == "events" and timing.fallback_reason == reason
    assert timing.stats == timing.event_stats and timing.stats.samples == 2


def test_cupti_without_a_gpu_falls_back():
    pytest.importorskip("cupti")
    from helpers import gpu_unavailable_reason
    if gpu_unavailable_reason() is None:
        pytest.skip("a GPU is present: CUPTI may start")
    with pytest.raises(KernelClockUnavailable, match="did not start"):
        KernelClock()


class ScriptedClock:
    """A kernel clock answering each batch from a list; an exception in the list is raised."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.asked = []

    def discard(self):
        pass

    def learn_members(self, launches):
        pass

    def batch_durations_us(self, samples, launches):
        self.asked.append((samples, launches))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_cupti_samples_are_primary_and_decide_the_stop():
    rng = np.random.default_rng(0)
    clock = ScriptedClock([[], list(10 + rng.normal(0, 0.001, 60))])
    samples = SampleSet(clock)
    samples.warmed_up(7, 2)
    noisy_events = list(rng.uniform(12, 20, 60))  # launch gaps make events noisy and longer
    samples.add_batch(noisy_events, 2)
    assert clock.asked == [(7, 2), (60, 2)]
    assert samples.method == "cupti" and samples.primary is samples.kernel_us
    assert should_stop(samples.primary, 0.0, 1.0) and not should_stop(samples.event_us, 0.0, 1.0)
    timing = samples.timing()
    assert timing.stats.median_us == pytest.approx(10, abs=0.01) and timing.event_stats.median_us > 12
    assert timing.fallback_reason == ""


def test_a_mismatch_midway_switches_the_whole_row_to_events():
    clock = ScriptedClock([[1.0, 1.0], RecordMismatch("3 kernel records for 2 samples x 1 launches")])
    samples = SampleSet(clock)
    samples.add_batch([5.0, 5.0], 1)
    samples.add_batch([6.0, 6.0], 1)
    timing = samples.timing()
    assert timing.method == "events" and "3 kernel records" in timing.fallback_reason
    assert timing.stats.samples == 4 and timing.stats.median_us == 5.5  # no CUPTI samples mixed in
    broken = SampleSet(ScriptedClock([AttributeError("'NoneType' object has no attribute 'name'")]))
    broken.add_batch([5.0], 1)  # an unexpected failure times the row with events, it does not end it
    assert broken.method == "events" and "AttributeError" in broken.fallback_reason


def test_worker_reply_format():
    stats = TimingStats(10.0, 0.1, 9.9, 80, 0.001, True)
    events = TimingStats(12.5, 0.3, 12.0, 80, 0.002, True)
    reply = Timing(stats, "cupti", events).reply(1980)
    assert reply == {"stats": {"median_us": 10.0, "iqr_us": 0.1, "min_us": 9.9, "samples": 80, "rse": 0.001,
                               "converged": True},
                     "method": "cupti", "event_stats": {"median_us": 12.5, "iqr_us": 0.3, "min_us": 12.0,
                                                        "samples": 80, "rse": 0.002, "converged": True},
                     "sm_clock_mhz": 1980, "fallback_reason": ""}
    assert Timing(stats, "events", None, "why").reply(0)["event_stats"] is None


# ---- GPU: CUPTI against events on kernels of known length -----------------------------------

SPIN_NS = 20_000
SPIN_PTX = r"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry ptxds_test_spin(
	.param .u64 ptxds_test_spin_ns
)
{
	.reg .pred 	%p<2>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [ptxds_test_spin_ns];
	mov.u64 	%rd2, %globaltimer;
$L__spin:
	mov.u64 	%rd3, %globaltimer;
	sub.s64 	%rd4, %rd3, %rd2;
	setp.lt.u64 	%p1, %rd4, %rd1;
	@%p1 bra 	$L__spin;
	ret;
}
"""


@pytest.mark.gpu
def test_cupti_time_of_two_spinning_kernels_is_their_length_and_below_events():
    pytest.importorskip("cupti")
    from verify.device.driver import Context, Module, PreparedLaunch
    from verify.device.hold import StreamHold
    from verify.device.l2flush import L2Flush
    from verify.timing.timing import time_launches
    from verify.worker import flush_buffer
    ctx = Context(0)
    module = Module.from_ptx(SPIN_PTX)
    params = SPIN_NS.to_bytes(8, "little")
    launches = [PreparedLaunch(module.function("ptxds_test_spin"), (1, 1, 1), (32, 1, 1), params, [0], ctx.stream)
                for _ in range(2)]
    write_only = L2Flush(ctx.info.l2_bytes, ctx.info.sm_count, read_back=False)
    flush = flush_buffer(ctx)  # write, then a read kernel: never counted as the row's
    hold = StreamHold(ctx.stream)
    clock, why = kc.shared_clock()
    assert clock is not None, why
    try:
        for use_hold, use_flush in ((hold, flush), (None, flush), (hold, write_only)):
            timing = time_launches(ctx.stream, launches, use_flush, hold=use_hold, budget_s=0.3,
                                   kernel_clock=clock)
            assert timing.method == "cupti", timing.fallback_reason
            ours, events = timing.stats.median_us, timing.event_stats.median_us
            # two 20 us spins (the global timer ticks in 1 us steps at worst); events add launch gaps
            assert 2 * SPIN_NS / 1000 * 0.95 <= ours <= 2 * SPIN_NS / 1000 * 1.25, timing
            assert ours <= events * 1.01, timing
            assert timing.stats.samples == timing.event_stats.samples >= 10
    finally:
        hold.close()
        flush.free()
        write_only.free()
        module.unload()


# Spins, then adds: out[i] = x[i] + y[i] for i < n, by a grid-stride loop (a row whose timed
# outputs the worker can check against its checked run).
SPIN_ADD_PTX = r"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry ptxds_test_spin_add(
	.param .u64 p_ns, .param .u64 p_x, .param .u64 p_y, .param .u64 p_out, .param .u32 p_n, .param .u32 p_write
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<8>;
	.reg .f32 	%f<4>;
	.reg .b64 	%rd<16>;

	ld.param.u64 	%rd1, [p_ns];
	ld.param.u64 	%rd5, [p_x];
	ld.param.u64 	%rd6, [p_y];
	ld.param.u64 	%rd7, [p_out];
	ld.param.u32 	%r1, [p_n];
	ld.param.u32 	%r6, [p_write];
	mov.u64 	%rd2, %globaltimer;
$L__spin:
	mov.u64 	%rd3, %globaltimer;
	sub.s64 	%rd4, %rd3, %rd2;
	setp.lt.u64 	%p1, %rd4, %rd1;
	@%p1 bra 	$L__spin;
	setp.eq.u32 	%p3, %r6, 0;
	@%p3 bra 	$L__done;
	mov.u32 	%r2, %tid.x;
	mov.u32 	%r3, %ntid.x;
$L__loop:
	setp.ge.u32 	%p2, %r2, %r1;
	@%p2 bra 	$L__done;
	mul.wide.u32 	%rd8, %r2, 4;
	add.s64 	%rd9, %rd5, %rd8;
	add.s64 	%rd10, %rd6, %rd8;
	add.s64 	%rd11, %rd7, %rd8;
	ld.global.f32 	%f1, [%rd9];
	ld.global.f32 	%f2, [%rd10];
	add.rn.f32 	%f3, %f1, %f2;
	st.global.f32 	[%rd11], %f3;
	add.u32 	%r2, %r2, %r3;
	bra 	$L__loop;
$L__done:
	ret;
}
"""


def _spin_add_row(write: int, build_key: str):
    from dataset_spec.model import Arg, Buffer, KernelRecord, Launch, Problem
    problem = Problem("spin", "vector_add", [Buffer("x", "float32", (256,)), Buffer("y", "float32", (256,)),
                                             Buffer("out", "float32", (256,), role="out")])
    launch = Launch("ptxds_test_spin_add", (1,), (32,),
                    [Arg.scalar("u64", SPIN_NS), Arg.buf("x"), Arg.buf("y"), Arg.buf("out"),
                     Arg.scalar("u32", 256), Arg.scalar("u32", write)])
    return problem, KernelRecord("spin", "test", {}, build_key, "sm_70", SPIN_ADD_PTX, [launch, launch], problem,
                                 build_key=build_key)


@pytest.mark.gpu
def test_worker_times_a_row_with_cupti():
    pytest.importorskip("cupti")
    from verify.trials.inputs import make_trial_inputs
    from verify.worker import GpuWorker
    problem, row = _spin_add_row(1, "spin-twice")
    trial = make_trial_inputs(problem, "spin", 0)
    worker = GpuWorker(0)
    try:
        check = worker.check(row.to_json(), "spin", [(0, "k0", trial.seed, trial.storage)], None, 60.0,
                             keep=["k0"])
        assert check.error is None, check.message
        # a row whose checked run was not kept is not timed
        assert worker.time("spin-twice", 0.3, 60.0)["error"] == "unchecked"
        reply = worker.time("spin-twice", 0.3, 60.0, sets=[("k0", trial.seed)], record_json=row.to_json())
    finally:
        worker.close()
    assert set(reply) == {"stats", "method", "event_stats", "sm_clock_mhz", "fallback_reason", "checked_samples",
                          "input_sets", "seconds", "sm_clock_source"}, reply
    assert reply["sm_clock_source"] in ("nvml", "pynvml", "max_clock"), reply
    assert set(reply["seconds"]) == {"prepare", "samples"}, reply
    # every timed sample's outputs were judged against the checked run
    assert reply["checked_samples"] >= reply["stats"]["samples"] >= 10 and reply["input_sets"] == 1
    assert reply["method"] == "cupti" and reply["fallback_reason"] == "", reply
    assert 0 < reply["stats"]["median_us"] <= reply["event_stats"]["median_us"] * 1.01
    assert reply["stats"]["median_us"] >= 2 * SPIN_NS / 1000 * 0.95


# ---- the Nsight Compute comparison (benchmarks/ncu_compare.py) ------------------------------

NCU_RAW = """==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "gemm": 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum"
"","","","","","","","","","","","nsecond"
"0","4242","python3.12","127.0.0.1","gemm","1","13","(128, 1, 1)","(64, 1, 1)","0","9.0","12,000"
"1","4242","python3.12","127.0.0.1","reduce","1","13","(128, 1, 1)","(1, 1, 1)","0","9.0","3,000"
"2","4242","python3.12","127.0.0.1","gemm","1","13","(128, 1, 1)","(64, 1, 1)","0","9.0","13,000"
"3","4242","python3.12","127.0.0.1","reduce","1","13","(128, 1, 1)","(1, 1, 1)","0","9.0","3,000"
"4","4242","python3.12","127.0.0.1","vadd","1","13","(256, 1, 1)","(4, 1, 1)","0","9.0","2,500"
==PROF== Disconnected from process 4242
"""

NCU_DETAILS = """"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"1","7","python3","h","vadd","1","13","(256, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","2.50"
"0","7","python3","h","gemm","1","13","(128, 1, 1)","(64, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","0.012"
"""


def _ncu_compare():
    from benchmarks import ncu_compare  # a script folder, importable from the repository root
    return ncu_compare


def test_ncu_csv_is_parsed_in_profiling_order_and_units():
    nc = _ncu_compare()
    assert nc.parse_ncu_csv(NCU_RAW) == [("gemm", 12.0), ("reduce", 3.0), ("gemm", 13.0), ("reduce", 3.0),
                                         ("vadd", 2.5)]
    assert nc.parse_ncu_csv(NCU_DETAILS) == [("gemm", 12.0), ("vadd", 2.5)]
    with pytest.raises(ValueError):
        nc.parse_ncu_csv("==PROF== No kernels were profiled.\n")


def test_ncu_kernels_are_split_among_rows_and_repeats():
    nc = _ncu_compare()
    manifest = [{"key": "a", "entries": ["gemm", "reduce"], "repeats": 2, "profiled": True, "error": ""},
                {"key": "bad", "entries": ["x"], "repeats": 2, "profiled": False, "error": "JIT failed"},
                {"key": "b", "entries": ["vadd"], "repeats": 1, "profiled": True, "error": ""}]
    kernels = nc.parse_ncu_csv(NCU_RAW)
    times, wrong = nc.ncu_row_times(kernels[:2] + [(HOLD_KERNEL_NAME, 1e6)] + kernels[2:], manifest)
    assert times == {"a": [15.0, 16.0], "b": [2.5]} and wrong == 0
    _, wrong = nc.ncu_row_times([("other", 1.0)] + kernels[1:], manifest)
    assert wrong == 1
    with pytest.raises(ValueError, match="profiled 4 kernels"):
        nc.ncu_row_times(kernels[:4], manifest)


def test_spearman_with_ties_and_the_summary_goals():
    nc = _ncu_compare()
    assert list(nc.average_ranks([3.0, 1.0, 3.0, 2.0])) == [3.5, 1.0, 3.5, 2.0]
    assert nc.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert nc.spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    assert nc.spearman([1, 2, 3], [5, 5, 5]) != nc.spearman([1, 2, 3], [5, 5, 5])  # nan
    # against scipy.stats.spearmanr([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) = 0.8
    assert nc.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    results = [{"name": f"k{i}", "group": "g", "ours_us": ours, "ncu_us": ncu}
               for i, (ours, ncu) in enumerate([(10.0, 10.0), (20.4, 20.0), (31.0, 30.0), (4.0, 3.0)])]
    lines = {label.split(" (")[0]: (value, met) for label, value, met in
             nc.summary_lines(results, {"k0": (10.0, 0.004), "k1": (20.0, 0.02), "k3": (4.0, 0.5)})}
    assert lines["median ours/ncu"][1] is True                # ratios 1.0, 1.02, 1.033, 1.33 -> 1.027
    assert lines["worst ours/ncu - 1, kernels >= 5 us"] == ("+0.033 (k2, n=3, 3 within)", True)  # the 4 us row is not counted
    assert lines["Spearman rho with ncu inside groups"][1] is True
    assert lines["run-to-run median abs delta, rows >= 10 us"][1] is False  # median of 0.4% and 2%
    assert lines["run-to-run median abs delta, rows < 10 us"][1] is None


def test_ncu_driver_mode_needs_no_positional_dataset(tmp_path):
    """ncu runs this script again as ``--driver DATASET ...``: argument parsing must accept
    that (a regression that made every ncu comparison fail before profiling)."""
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "ncu_compare.py"
    keys = tmp_path / "keys.json"
    keys.write_text("[]")
    done = subprocess.run([sys.executable, str(script), "--driver", str(tmp_path), "--driver-keys", str(keys),
                           "--driver-manifest", str(tmp_path / "manifest.json")],
                          capture_output=True, text=True, timeout=120)
    assert "arguments are required" not in done.stderr, done.stderr
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "dataset folder is required" in done.stderr


@pytest.mark.gpu
def test_a_row_that_stops_writing_while_timed_gets_no_time():
    """The checks ran a row that writes; the same entry with writing switched off is then
    timed in its place (as a kernel that computes only while checked would behave): every
    sample is judged against the checked run, so the worker answers timing_mismatch."""
    pytest.importorskip("cupti")
    from verify.trials.inputs import make_trial_inputs
    from verify.worker import GpuWorker
    problem, row = _spin_add_row(1, "spin-lazy")
    _, lazy = _spin_add_row(0, "spin-lazy")
    trial = make_trial_inputs(problem, "spin", 0)
    worker = GpuWorker(0)
    try:
        check = worker.check(row.to_json(), "spin", [(0, "k0", trial.seed, trial.storage)], None, 60.0,
                             keep=["k0"])
        assert check.error is None, check.message
        reply = worker.time("spin-lazy", 0.3, 60.0, sets=[("k0", trial.seed)], record_json=lazy.to_json())
    finally:
        worker.close()
    assert reply.get("error") == "timing_mismatch", reply
    assert "differs from the checked run" in reply["message"]
