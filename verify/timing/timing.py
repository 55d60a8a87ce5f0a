"""Kernel timing: CUPTI kernel durations, with CUDA events beside them and as the fallback.

Each sample is [inputs of the sample's set copied in, outputs and scratch filled or
re-initialised, L2 flush, start event, launch sequence, end event, output hashes]; all but the
launches sit outside the events (the flush last, so scratch starts cold too), and the hashes
are judged after each batch (``checked_timing``). The
flush writes a buffer of twice the L2 and reads it back, so L2 holds clean lines and the
kernel pays no write-back of the flush's data (``l2flush``).
Samples go to the stream in batches with no host sync between them: syncing after every
sample leaves the GPU idle while Python prepares the next launch, and the start event then
measures host latency, not the kernel.

The primary time of a sample is the sum of its launches' own durations from CUPTI activity
records (``kernel_clock``): the GPU's start and end of each kernel, no launch gap. The event
time of the same sample is kept as a second set of numbers, and becomes the primary one
where CUPTI is missing or its records do not match the samples (``method`` says which).
Sampling stops when the relative standard error of the primary median is <= 0.25%, or the
time budget or the sample cap is reached (at least ``min_samples``).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from ..device.hold import MAX_HELD_COMMANDS
from ..device.kernel_clock import KernelClockError

# 0.25%: two runs of one row then differ by well under 1% (measured); the median's 95%
# confidence half-width is then 1.96 x 0.25% = 0.49%.
TARGET_RSE = 0.0025
# Sampling stops as soon as the median is that stable: a steady kernel needs ~10 samples
# (the floor keeps the IQR estimate meaningful); a noisy one samples on, as before, until
# the target, the budget or MAX_SAMPLES. (It was 50: every member paid for 50 flushes.)
MIN_SAMPLES = 10
MAX_SAMPLES = 2000
BATCH_SECONDS = 0.05  # wall time one enqueued batch should cover
MAX_BATCH = 200
WARMUP_SECONDS = 0.025  # as do_bench: long enough for clocks to ramp up after idling
# CUPTI's kernel tracing may add commands of its own per launch; count each launch twice
# while it is on, so a held batch stays within the stream's pending-command limit.
COMMANDS_PER_LAUNCH_TRACED = 2
# A held batch whose enqueueing takes this long has hit the pending-command limit (the host
# waited for the hold kernel to give up): later batches are made smaller.
HELD_ENQUEUE_STALL_S = 0.5

METHOD_CUPTI = "cupti"
METHOD_EVENTS = "events"


@dataclass
class TimingStats:
    median_us: float
    iqr_us: float
    min_us: float
    samples: int
    rse: float        # relative standard error of the median
    converged: bool   # rse reached the target


@dataclass
class Timing:
    """One row's timing: ``stats`` of the primary ``method`` ("cupti" or "events"), the
    event-based stats of the same samples, and why CUPTI was not used ("" when it was)."""
    stats: TimingStats
    method: str
    event_stats: Optional[TimingStats]
    fallback_reason: str = ""

    def reply(self, sm_clock_mhz: int) -> dict:
        """The GPU worker's answer to a timing job (read by verify.runner)."""
        return {"stats": dataclasses.asdict(self.stats), "method": self.method,
                "event_stats": dataclasses.asdict(self.event_stats) if self.event_stats is not None else None,
                "sm_clock_mhz": int(sm_clock_mhz), "fallback_reason": self.fallback_reason}


def median_rse(samples: Sequence[float]) -> float:
    """Relative standard error of the median, from a robust spread (IQR / 1.349 estimates
    sigma; the median's standard error is about 1.2533 sigma / sqrt(n))."""
    x = np.asarray(samples, dtype=np.float64)
    if x.size < 2:
        return float("inf")
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    sigma = (q3 - q1) / 1.349
    if med <= 0:
        return float("inf")
    return float(1.2533 * sigma / np.sqrt(x.size) / med)


def summarise(samples_us: Sequence[float], target_rse: float = TARGET_RSE) -> TimingStats:
    x = np.asarray(samples_us, dtype=np.float64)
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    rse = median_rse(x)
    return TimingStats(float(med), float(q3 - q1), float(x.min()), int(x.size), rse, rse <= target_rse)


def should_stop(samples_us: Sequence[float], elapsed_s: float, budget_s: float,
                min_samples: int = MIN_SAMPLES, max_samples: int = MAX_SAMPLES,
                target_rse: float = TARGET_RSE) -> bool:
    n = len(samples_us)
    if n >= max_samples:
        return True
    if n < min_samples:
        return False
    return elapsed_s >= budget_s or median_rse(samples_us) <= target_rse


def batch_size(sample_wall_s: float, remaining: int) -> int:
    """How many samples to enqueue before the next sync."""
    k = int(BATCH_SECONDS / max(sample_wall_s, 1e-6))
    return max(1, min(k, MAX_BATCH, remaining))


class SampleSet:
    """The samples of one timing run: event times always, CUPTI kernel times while the
    kernel clock's records keep matching the samples. The first mismatch drops the kernel
    times and the clock for the rest of the run, and records why."""

    def __init__(self, kernel_clock=None, no_clock_reason: str = ""):
        self.clock = kernel_clock
        self.fallback_reason = "" if kernel_clock is not None else (no_clock_reason or "no CUPTI kernel clock given")
        self.event_us: list = []
        self.kernel_us: list = []

    @property
    def method(self) -> str:
        return METHOD_CUPTI if self.clock is not None else METHOD_EVENTS

    @property
    def primary(self) -> list:
        return self.kernel_us if self.clock is not None else self.event_us

    def _ask_clock(self, question: Callable):
        if self.clock is None:
            return None
        try:
            return question(self.clock)
        except Exception as exc:  # whatever goes wrong with CUPTI, the row is still timed
            detail = str(exc) if isinstance(exc, KernelClockError) else f"{type(exc).__name__}: {exc}"
            self.clock, self.kernel_us = None, []
            self.fallback_reason = f"CUPTI kernel records unusable, CUDA events used: {detail}"
            return None

    def start(self) -> None:
        """Before the timed row's first launch (stream synchronised): older records belong to
        other work."""
        self._ask_clock(lambda clock: clock.discard())

    def learned_members(self, launches_per_sample: int) -> None:
        """After one bare run of the launch sequence (stream synchronised): the clock takes
        the names of the row's kernels from its records."""
        self._ask_clock(lambda clock: clock.learn_members(launches_per_sample))

    def warmed_up(self, sequences: int, launches_per_sample: int) -> None:
        """After the warm-up (stream synchronised): its records are checked, not kept."""
        self._ask_clock(lambda clock: clock.batch_durations_us(sequences, launches_per_sample))

    def add_batch(self, event_us: Sequence[float], launches_per_sample: int) -> None:
        """One synchronised batch: its event times, and its kernel times from the clock."""
        self.event_us.extend(event_us)
        durations = self._ask_clock(lambda clock: clock.batch_durations_us(len(event_us), launches_per_sample))
        if durations is not None:
            self.kernel_us.extend(durations)

    def timing(self, target_rse: float = TARGET_RSE) -> Timing:
        return Timing(summarise(self.primary, target_rse), self.method,
                      summarise(self.event_us, target_rse) if self.event_us else None, self.fallback_reason)


def time_launches(stream, launches: Sequence, flush, *, budget_s: float = 1.0, min_samples: int = MIN_SAMPLES, max_samples: int = MAX_SAMPLES,
                  target_rse: float = TARGET_RSE, warmup: int = 3, warmup_s: float = WARMUP_SECONDS,
                  hold=None, kernel_clock=None, no_clock_reason: str = "", checker=None) -> Timing:
    """Time a launch sequence (``PreparedLaunch`` objects) on ``stream``.

    ``flush``: the L2 flush run before each sample: an ``l2flush.L2Flush``, or any object
    with its ``enqueue(sample, stream)`` and ``commands``.
    ``hold``: a ``hold.StreamHold``
    that keeps the GPU waiting while each batch is enqueued. ``kernel_clock``: a
    ``kernel_clock.KernelClock`` for CUPTI kernel durations (None: events only, for
    ``no_clock_reason``). ``checker``: a ``checked_timing.CheckedSamples`` whose prologue
    (inputs of the sample's set, fresh fills, scratch re-initialised) precedes every run and
    whose epilogue hashes every sample's outputs, judged after each batch (it raises
    ``TimingMismatch``). Warm-up runs for at least ``warmup`` sequences and ``warmup_s``
    seconds, so clocks have ramped up after the idle time of the correctness checks.
    """
    from ..device.driver import Event, check, cu

    def prepare(i: int) -> None:
        if checker is not None:
            checker.prologue(i)

    def enqueue_prologue(i: int) -> None:
        # Re-initialise scratch first, then flush: the flush must also evict the scratch
        # lines the re-init just wrote, or a kernel with a workspace (stream-K) starts warm.
        prepare(i)
        flush.enqueue(i, stream)

    def synchronize() -> None:
        check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")

    samples = SampleSet(kernel_clock, no_clock_reason)
    if samples.clock is not None:
        # One bare run of the sequence (scratch re-initialised first, outside it) names the
        # row's kernels as CUPTI sees them; any kernel the driver runs for a flush or a copy
        # is then not counted as the member's.
        prepare(0)
        synchronize()
        samples.start()
        for launch in launches:
            launch.enqueue()
        synchronize()
        samples.learned_members(len(launches))
    warm_start, i = time.perf_counter(), 0
    if checker is not None:
        warmup = max(warmup, checker.min_warmup)
    while i < warmup or time.perf_counter() - warm_start < warmup_s:
        enqueue_prologue(i)
        for launch in launches:
            launch.enqueue()
        i += 1
        if i % 16 == 0:
            synchronize()
    synchronize()
    samples.warmed_up(i, len(launches))
    if checker is not None:
        checker.judge_kept_state(i - 1)

    commands_per_launch = COMMANDS_PER_LAUNCH_TRACED if samples.clock is not None else 1
    # the flush's write, and its read kernel traced like a launch
    commands_per_flush = 1 + commands_per_launch * (flush.commands - 1)
    commands_per_sample = (2 + commands_per_flush + commands_per_launch * len(launches)
                           + (checker.commands * commands_per_launch if checker is not None else 0))
    held_batch = max(1, (MAX_HELD_COMMANDS - 1) // commands_per_sample) if hold is not None else MAX_BATCH
    if checker is not None and checker.max_batch:
        held_batch = min(held_batch, checker.max_batch)
    events = [(Event(), Event()) for _ in range(MAX_BATCH)]
    start_wall = time.perf_counter()
    sample_wall = None
    try:
        while not should_stop(samples.primary, time.perf_counter() - start_wall, budget_s, min_samples,
                              max_samples, target_rse):
            remaining = max_samples - len(samples.primary)
            k = batch_size(sample_wall, remaining) if sample_wall else min(5, remaining)
            k = min(k, held_batch)
            t0 = time.perf_counter()
            first_sample = len(samples.event_us)
            if hold is not None:
                hold.hold()
            try:
                if checker is not None:
                    checker.begin_batch()
                for j in range(k):
                    enqueue_prologue(first_sample + j)
                    start, end = events[j]
                    start.record(stream)
                    for launch in launches:
                        launch.enqueue()
                    end.record(stream)
                    if checker is not None:
                        checker.epilogue(first_sample + j, j)
            finally:
                if hold is not None:
                    hold.release()
            if hold is not None and time.perf_counter() - t0 > HELD_ENQUEUE_STALL_S:
                held_batch = max(1, k // 2)
            # A stream sync (not an event sync): every kernel of the batch has finished, so
            # CUPTI can hand over all of their records.
            synchronize()
            sample_wall = (time.perf_counter() - t0) / k
            if checker is not None:
                checker.judge_batch(first_sample, k)
            samples.add_batch([end.elapsed_ms(start) * 1000.0 for start, end in events[:k]], len(launches))
    finally:
        for start, end in events:
            start.destroy()
            end.destroy()
    return samples.timing(target_rse)
