"""Kernel durations from CUPTI activity records: each launch's start and end, stamped by the GPU.

CUDA events around a sample also count the gap between the start event and the first
kernel starting (2-4 us on an H100), so a short kernel measured 1.15-1.55x its Nsight
Compute duration. CUPTI's concurrent-kernel activity records carry the GPU's own start and
end of every launch, with no event or launch gap in them.

``shared_clock()`` enables kernel activity once per process (NVIDIA's ``cupti-python``
bindings, ``pip install ptxds[cupti]``); records arrive through CUPTI's buffer callbacks
and are collected after each batch of samples. ``assemble_samples`` turns one batch's
records into per-sample durations and refuses records that do not add up, so a caller can
fall back to events instead of reporting a wrong number.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Iterable, Optional

from dataset_spec.errors import PtxdsError
from .l2flush import FLUSH_READ_ENTRY

# The entry of hold.HOLD_PTX: it spins while a batch is enqueued and is never a member's kernel.
HOLD_KERNEL_NAME = "ptxds_hold_stream"
# The entry that hashes each timed sample's outputs (checked_timing.CHECKSUM_ENTRY).
CHECKSUM_KERNEL_NAME = "ptxds_output_checksum"
# Kernels of the timer's own, never a member's: the hold, the L2 flush's read-back, the hashes.
TIMER_KERNEL_NAMES = (HOLD_KERNEL_NAME, FLUSH_READ_ENTRY, CHECKSUM_KERNEL_NAME)
FLUSH_FORCED = 1  # CUPTI_ACTIVITY_FLAG_FLUSH_FORCED


class KernelClockError(PtxdsError, RuntimeError):
    """The kernel clock cannot give this batch's durations; use CUDA events instead."""


class KernelClockUnavailable(KernelClockError):
    """CUPTI cannot be used in this process (not installed, or it refused to start)."""


class RecordMismatch(KernelClockError):
    """The batch's kernel records do not match its samples and launches."""


class RecordsMissing(RecordMismatch):
    """Fewer kernel records than launches so far; more may still be delivered."""


@dataclass(frozen=True)
class KernelActivity:
    """The fields we keep of one CUPTI kernel record (timestamps in ns)."""
    name: str
    start_ns: int
    end_ns: int
    correlation_id: int
    stream_id: int

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


def assemble_samples(records: Iterable[KernelActivity], samples: int, launches_per_sample: int,
                     after_correlation_id: int = 0, excluded_names=TIMER_KERNEL_NAMES,
                     member_names: Optional[frozenset] = None) -> list:
    """Per-sample kernel time in us of one batch: each sample is the sum of the durations of
    its ``launches_per_sample`` launches.

    Records of ``excluded_names`` (the hold kernel, the flush's read kernel), of names outside ``member_names`` when
    given (kernels the driver might run for a flush or copy), and at or below
    ``after_correlation_id`` (launched before this batch) are ignored. The rest are put in
    launch order by correlation id (CUPTI numbers API calls in the order they are made; the
    buffers may deliver them in any order) and must number exactly ``samples *
    launches_per_sample``, all on one stream, with complete timestamps.
    """
    excluded = set(excluded_names)
    members = sorted((r for r in records if r.name not in excluded and r.correlation_id > after_correlation_id
                      and (member_names is None or r.name in member_names)),
                     key=lambda r: (r.correlation_id, r.start_ns))
    expected = samples * launches_per_sample
    if len(members) < expected:
        raise RecordsMissing(f"{len(members)} kernel records for {samples} samples x {launches_per_sample} launches")
    if len(members) > expected:
        names = sorted({r.name for r in members})[:5]
        raise RecordMismatch(f"{len(members)} kernel records for {samples} samples x {launches_per_sample} "
                             f"launches (kernels seen: {', '.join(names)})")
    streams = {r.stream_id for r in members}
    if len(streams) > 1:
        raise RecordMismatch(f"the batch's kernel records are on {len(streams)} streams, expected one")
    incomplete = [r for r in members if r.start_ns <= 0 or r.end_ns < r.start_ns]
    if incomplete:
        raise RecordMismatch(f"{len(incomplete)} kernel record(s) without a complete start/end "
                             f"(e.g. {incomplete[0].name}: {incomplete[0].start_ns}..{incomplete[0].end_ns})")
    return [sum(r.duration_ns for r in members[i:i + launches_per_sample]) / 1000.0
            for i in range(0, expected, launches_per_sample)]


def _text(name) -> str:
    return name.decode(errors="replace") if isinstance(name, (bytes, bytearray)) else str(name)


def _import_cupti():
    try:
        from cupti import cupti
    except ImportError as exc:
        raise KernelClockUnavailable(f"cupti-python is not installed ({exc}); pip install 'ptxds[cupti]'") from None
    except Exception as exc:  # a broken install (missing shared library) is as good as none
        raise KernelClockUnavailable(f"cupti-python failed to import: {type(exc).__name__}: {exc}") from None
    return cupti


class KernelClock:
    """Concurrent-kernel activity of this process, collected batch by batch.

    Per row: ``discard()`` drops everything recorded so far (correctness runs, earlier
    rows); ``learn_members(launches)`` takes the kernel names of one bare run of the launch
    sequence; ``batch_durations_us(samples, launches)`` flushes CUPTI and returns the
    durations of the batch just synchronised. Make one per process (``shared_clock``):
    CUPTI has one set of buffer callbacks per process.
    """

    BUFFER_BYTES = 8 << 20
    # CUPTI may hand over a finished kernel's record a little after the stream synchronises;
    # waits between flushes before the batch counts as broken, the last one forced.
    RETRY_DELAYS_S = (0.0005, 0.002, 0.01, 0.05)

    def __init__(self, cupti_module=None):
        cupti = cupti_module if cupti_module is not None else _import_cupti()
        self._cupti = cupti
        self._kernel_kind = int(cupti.ActivityKind.CONCURRENT_KERNEL)
        self._lock = threading.Lock()
        self._records: list = []
        self._callback_error = ""
        self._after = 0  # newest correlation id already accounted for
        self._member_names: Optional[frozenset] = None  # the row's kernels, as CUPTI names them
        try:
            cupti.activity_register_callbacks(self._buffer_requested, self._buffer_completed)
            # CONCURRENT_KERNEL, not KERNEL: the plain kind serialises every kernel on the GPU.
            cupti.activity_enable(cupti.ActivityKind.CONCURRENT_KERNEL)
        except Exception as exc:  # no driver, an incompatible driver, another profiler attached
            raise KernelClockUnavailable(f"CUPTI kernel activity did not start: {type(exc).__name__}: {exc}") from None

    # CUPTI calls these two, possibly from its own thread.
    def _buffer_requested(self):
        return self.BUFFER_BYTES, 0  # 0: as many records as fit

    def _buffer_completed(self, activities) -> None:
        try:
            # Copy the fields now: the record objects view CUPTI's buffer, which is reused.
            kept = [KernelActivity(_text(a.name), int(a.start), int(a.end), int(a.correlation_id), int(a.stream_id))
                    for a in activities if int(a.kind) == self._kernel_kind]
        except Exception as exc:  # raising into CUPTI would lose it; report it on the next collect
            self._callback_error = f"reading CUPTI records failed: {type(exc).__name__}: {exc}"
            return
        with self._lock:
            self._records.extend(kept)

    def collect(self, force: bool = False) -> list:
        """Flush CUPTI's buffers and take the kernel records delivered since the last call."""
        try:
            self._cupti.activity_flush_all(FLUSH_FORCED if force else 0)
        except Exception as exc:
            raise KernelClockError(f"CUPTI flush failed: {type(exc).__name__}: {exc}") from None
        with self._lock:
            records, self._records = self._records, []
        if self._callback_error:
            raise KernelClockError(self._callback_error)
        return records

    def discard(self) -> None:
        """Forget every record so far and the last row's kernel names; the caller has
        synchronised the stream."""
        records = self.collect(force=True)
        self._after = max([self._after] + [r.correlation_id for r in records])
        self._member_names = None

    def learn_members(self, launches_per_sample: int) -> None:
        """After one run of the bare launch sequence (no flush, no re-init) and a sync: its
        records name the row's kernels; later batches count only kernels of these names."""
        _, fresh = self._take_batch(1, launches_per_sample)
        self._member_names = frozenset(r.name for r in fresh if r.name not in TIMER_KERNEL_NAMES)

    def batch_durations_us(self, samples: int, launches_per_sample: int) -> list:
        """Per-sample kernel time (us) of the batch enqueued since the last call; the caller has
        synchronised the stream. Raises RecordMismatch when the records do not add up."""
        return self._take_batch(samples, launches_per_sample)[0]

    def _take_batch(self, samples: int, launches_per_sample: int) -> tuple:
        """(per-sample durations, the batch's records)."""
        records = self.collect()
        for attempt, delay in enumerate(self.RETRY_DELAYS_S + (None,)):
            try:
                durations = assemble_samples(records, samples, launches_per_sample, self._after,
                                             member_names=self._member_names)
                break
            except RecordsMissing:
                if delay is None:
                    raise
                time.sleep(delay)
                records += self.collect(force=attempt == len(self.RETRY_DELAYS_S) - 1)
        fresh = [r for r in records if r.correlation_id > self._after]
        self._after = max([self._after] + [r.correlation_id for r in fresh])
        return durations, fresh


_shared: Optional[KernelClock] = None
_unavailable = ""


def shared_clock() -> tuple:
    """(this process's KernelClock, "") made on first use, or (None, why not). A failure is
    remembered: CUPTI is tried once per process. Call with a CUDA context current."""
    global _shared, _unavailable
    if _shared is None and not _unavailable:
        try:
            _shared = KernelClock()
        except KernelClockUnavailable as exc:
            _unavailable = str(exc)
    return _shared, _unavailable
