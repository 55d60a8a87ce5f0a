"""Kernel timing with CUDA events, samples enqueued ahead of the GPU.

Each sample is [L2 flush, scratch re-init, start event, launch sequence, end event]; the
flush and re-init sit outside the events. Samples go to the stream in batches with no host
sync between them: syncing after every sample leaves the GPU idle while Python prepares the
next launch, and the start event then measures host latency, not the kernel.
Sampling stops when the relative standard error of the median is <= 0.25%, or the time
budget or the sample cap is reached (at least ``min_samples``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from .hold import MAX_HELD_COMMANDS

# 0.25%: two runs of one row then differ by well under 1% (measured); samples are cheap
# (a 10 us kernel plus its flush costs ~50 us) next to a row's correctness checks.
TARGET_RSE = 0.0025
MIN_SAMPLES = 50
MAX_SAMPLES = 2000
BATCH_SECONDS = 0.05  # wall time one enqueued batch should cover
MAX_BATCH = 200
WARMUP_SECONDS = 0.025  # as do_bench: long enough for clocks to ramp up after idling


@dataclass
class TimingStats:
    median_us: float
    iqr_us: float
    min_us: float
    samples: int
    rse: float        # relative standard error of the median
    converged: bool   # rse reached the target


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


def time_launches(stream, launches: Sequence, flush, before: Optional[Callable[[], None]] = None,
                  budget_s: float = 1.0, min_samples: int = MIN_SAMPLES, max_samples: int = MAX_SAMPLES,
                  target_rse: float = TARGET_RSE, warmup: int = 3, warmup_s: float = WARMUP_SECONDS,
                  hold=None) -> TimingStats:
    """Time a launch sequence (``PreparedLaunch`` objects) on ``stream``.

    ``flush``: a DeviceBuffer of at least twice the L2 size, overwritten before each sample.
    ``before``: enqueues work that must precede every sample outside the timed region
    (re-initialising zero-init scratch such as semaphores). ``hold``: a ``hold.StreamHold``
    that keeps the GPU waiting while each batch is enqueued. Warm-up runs for at least
    ``warmup`` sequences and ``warmup_s`` seconds, so clocks have ramped up after the idle
    time of the correctness checks.
    """
    from .driver import Event, check, cu

    def enqueue_prologue(i: int) -> None:
        flush.fill_bytes(i & 0xFF, stream)
        if before is not None:
            before()

    warm_start, i = time.perf_counter(), 0
    while i < warmup or time.perf_counter() - warm_start < warmup_s:
        enqueue_prologue(i)
        for launch in launches:
            launch.enqueue()
        i += 1
        if i % 16 == 0:
            check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")

    commands_per_sample = 3 + len(launches) + (1 if before is not None else 0)
    held_batch = max(1, MAX_HELD_COMMANDS // commands_per_sample) if hold is not None else MAX_BATCH
    events = [(Event(), Event()) for _ in range(MAX_BATCH)]
    samples: list = []
    start_wall = time.perf_counter()
    sample_wall = None
    try:
        while not should_stop(samples, time.perf_counter() - start_wall, budget_s, min_samples, max_samples, target_rse):
            k = batch_size(sample_wall, max_samples - len(samples)) if sample_wall else min(5, max_samples - len(samples))
            k = min(k, held_batch)
            t0 = time.perf_counter()
            if hold is not None:
                hold.hold()
            try:
                for j in range(k):
                    enqueue_prologue(len(samples) + j)
                    start, end = events[j]
                    start.record(stream)
                    for launch in launches:
                        launch.enqueue()
                    end.record(stream)
            finally:
                if hold is not None:
                    hold.release()
            check(cu.cuEventSynchronize(events[k - 1][1].handle), "cuEventSynchronize")
            sample_wall = (time.perf_counter() - t0) / k
            samples.extend(end.elapsed_ms(start) * 1000.0 for start, end in events[:k])
    finally:
        for start, end in events:
            start.destroy()
            end.destroy()
    return summarise(samples, target_rse)
