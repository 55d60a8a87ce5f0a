"""Which GPU verifies which members: each group's rows cut into chunks of contiguous members
by estimated cost, and one shared queue that every idle GPU pulls its next chunk from.

The queue holds the largest groups first, and a chunk's target cost is the work still
queued divided among the GPUs (``remaining / (gpus * CHUNKS_PER_GPU)``, the guided
self-scheduling rule), so chunks are large while there is much to do and small near the
end: whichever GPU is free takes the next chunk (work stealing from one queue), and no GPU
is left with a large piece while the others wait. One GPU takes the groups whole and in
their order, as before. Everything here is plain data: no GPU, no thread but the queue's
lock, so the plan is tested on a CPU (``simulate`` replays it on GPUs of known speed).

Costs are seconds of a GPU thread per row: measured (``measured_seconds``: the
``gpu_seconds`` an earlier verify recorded for the same build key) where known, else
estimated from the output elements, trials and timing budget (``estimated_seconds``).
"""
from __future__ import annotations

import heapq
import math
import threading
from dataclasses import dataclass
from typing import Iterable, Optional

# The estimate's coefficients, from measured verify rates: the Triton suite at small sizes
# about 0.35 s per row with timing on one GPU (run 21: 160 rows/min), CUTLASS `llm` rows
# (8-34 M output elements, 5 trials) about 2.4 s (25 rows/min, runs 24-26).
ROW_FIXED_S = 0.1            # load, launch and judge a small row
TIMED_SHARE_OF_BUDGET = 0.25  # a passing row's timing: samples until the spread settles
ELEMENT_TRIAL_S = 1.6e-8      # per output element and trial: runs, copies, checks, hashes
CHUNKS_PER_GPU = 2            # the guided rule's divisor (2: each GPU takes about two chunks per round)
PASS_THROUGH = ("build_failed", "no_problem", "not_applicable")


def output_elements(row) -> int:
    """Elements of the row's problem's written buffers (0 where it has no problem)."""
    problem = getattr(row, "problem", None)
    if problem is None:
        return 0
    return sum(math.prod(b.shape) for b in problem.buffers if b.role in ("out", "inout"))


def estimated_seconds(row, trials: int, timing: bool, time_budget: float) -> float:
    """A GPU thread's seconds for one row, before anything was measured."""
    if getattr(row, "status", None) in PASS_THROUGH:
        return 0.0
    seconds = ROW_FIXED_S + ELEMENT_TRIAL_S * output_elements(row) * max(1, trials)
    return seconds + (TIMED_SHARE_OF_BUDGET * time_budget if timing else 0.0)


def measured_seconds(records: Iterable) -> dict:
    """{build_key: seconds} from rows an earlier verify wrote (their
    ``provenance.verify.gpu_seconds``); rows without it are left out."""
    out = {}
    for record in records:
        seconds = ((record.provenance or {}).get("verify") or {}).get("gpu_seconds")
        if isinstance(seconds, (int, float)) and seconds >= 0 and record.build_key:
            out[record.build_key] = float(seconds)
    return out


def row_costs(rows: list, measured: Optional[dict], trials_of, timing: bool, time_budget: float) -> list:
    """Per row, its measured seconds where ``measured`` has its build key, else the estimate
    (``trials_of(row)``: the trials it runs); a pass-through row costs nothing either way."""
    measured = measured or {}
    return [0.0 if row.status in PASS_THROUGH
            else measured.get(row.build_key, estimated_seconds(row, trials_of(row), timing, time_budget))
            for row in rows]


@dataclass(frozen=True)
class Chunk:
    """Rows ``start:stop`` of group ``group`` (an index into the run's groups), the
    ``index``-th of the group's ``count`` chunks."""
    group: int
    start: int
    stop: int
    index: int
    count: int
    cost: float


def plan_chunks(costs: list, gpus: int, whole: Iterable[int] = ()) -> list:
    """The queue: per group (``costs[g]``: seconds per row, in row order), chunks of
    contiguous rows. ``gpus`` <= 1: one chunk per group, in the groups' order. Else groups
    by total cost, largest first (ties keep their order), each cut where its chunk reaches
    the target ``remaining / (gpus * CHUNKS_PER_GPU)``; groups in ``whole`` stay whole (a
    group whose rows carry different problems is refused as one)."""
    if gpus <= 1:
        return [Chunk(g, 0, len(rows), 0, 1, float(sum(rows))) for g, rows in enumerate(costs)]
    whole = set(whole)
    order = sorted(range(len(costs)), key=lambda g: -sum(costs[g]))
    remaining = float(sum(sum(rows) for rows in costs))
    plan = []
    for g in order:
        rows = costs[g]
        if g in whole or len(rows) <= 1:
            cuts = [(0, len(rows))]
            remaining -= sum(rows)
        else:
            cuts, start, spent = [], 0, 0.0
            after = [0.0] * (len(rows) + 1)  # cost of the rows after each row
            for i in range(len(rows) - 1, -1, -1):
                after[i] = after[i + 1] + rows[i]
            target = remaining / (gpus * CHUNKS_PER_GPU)
            for i, cost in enumerate(rows):
                spent += cost
                if spent >= target and spent > 0 and after[i + 1] > 0:
                    cuts.append((start, i + 1))
                    remaining -= spent
                    start, spent = i + 1, 0.0
                    target = remaining / (gpus * CHUNKS_PER_GPU)
            cuts.append((start, len(rows)))
            remaining -= spent
        plan += [Chunk(g, a, b, k, len(cuts), float(sum(rows[a:b]))) for k, (a, b) in enumerate(cuts)]
    return plan


class ChunkQueue:
    """The shared queue: each GPU thread takes the next chunk when it is free."""

    def __init__(self, chunks: list):
        self.chunks = list(chunks)
        self.next = 0
        self.lock = threading.Lock()

    def take(self) -> Optional[Chunk]:
        with self.lock:
            if self.next >= len(self.chunks):
                return None
            self.next += 1
            return self.chunks[self.next - 1]

    def upcoming(self, count: int) -> list:
        """The next ``count`` chunks not taken yet (a look ahead, for prefetching)."""
        with self.lock:
            return self.chunks[self.next:self.next + count]

    def close(self) -> None:
        """No chunk is handed out after this (a GPU thread failed)."""
        with self.lock:
            self.next = len(self.chunks)


def simulate(chunks: list, speeds: list, setup: Optional[callable] = None) -> list:
    """Per GPU, the second its last chunk ends when GPUs of relative ``speeds`` pull
    ``chunks`` from one queue in order (a chunk's seconds: its cost / speed, plus
    ``setup(gpu, chunk)`` for work it adds, e.g. preparing a group new to that GPU)."""
    free = [(0.0, gpu) for gpu in range(len(speeds))]
    heapq.heapify(free)
    ends = [0.0] * len(speeds)
    for chunk in chunks:
        at, gpu = heapq.heappop(free)
        at += chunk.cost / speeds[gpu] + (setup(gpu, chunk) if setup else 0.0)
        ends[gpu] = at
        heapq.heappush(free, (at, gpu))
    return ends
