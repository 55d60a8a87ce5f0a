"""The verify schedule on CPU: groups cut into chunks of contiguous members by cost, the
largest first and the chunks shrinking toward the end of the queue; one GPU keeps every
group whole and in order; GPUs pulling from the one queue finish together (simulated on a
set like run 21's, where whole groups left one GPU with 89 of 150 rows, and on CUTLASS
`llm` groups)."""
from __future__ import annotations

import threading

import pytest

from dataset_spec.model import Buffer, KernelRecord, Launch, Problem
from verify.schedule import (ChunkQueue, estimated_seconds, measured_seconds, plan_chunks, row_costs,
                             simulate)

# Run 21 of docs/runs/: 150 rows in 17 groups of 1-16 members (Triton suite and a
# CUTLASS slice); one GPU took 89 rows when the groups were dealt out whole.
RUN21_GROUP_SIZES = [16, 16, 16, 12, 12, 12, 10, 10, 10, 8, 8, 6, 6, 4, 2, 1, 2]
ROW_S = 0.35  # run 21's one-GPU rate: 160 rows per minute


def _covers_each_row_once(plan: list, costs: list) -> None:
    for g, rows in enumerate(costs):
        chunks = sorted((c for c in plan if c.group == g), key=lambda c: c.index)
        assert [c.index for c in chunks] == list(range(len(chunks)))
        assert all(c.count == len(chunks) for c in chunks)
        assert chunks[0].start == 0 and chunks[-1].stop == len(rows)
        assert all(a.stop == b.start for a, b in zip(chunks, chunks[1:]))  # contiguous, in row order
        assert all(c.stop > c.start for c in chunks)


def test_one_gpu_keeps_groups_whole_and_in_order():
    costs = [[1.0] * 3, [5.0] * 2, [0.5]]
    plan = plan_chunks(costs, 1)
    assert [(c.group, c.start, c.stop, c.count) for c in plan] == [(0, 0, 3, 1), (1, 0, 2, 1), (2, 0, 1, 1)]
    assert [c.cost for c in plan] == [3.0, 10.0, 0.5]


def test_several_gpus_cut_largest_groups_first_with_shrinking_chunks():
    costs = [[ROW_S] * n for n in RUN21_GROUP_SIZES]
    plan = plan_chunks(costs, 2)
    _covers_each_row_once(plan, costs)
    order = []
    for chunk in plan:  # the queue holds each group's chunks together, largest groups first
        if not order or order[-1] != chunk.group:
            order.append(chunk.group)
    assert len(order) == len(costs)
    totals = [sum(costs[g]) for g in order]
    assert totals == sorted(totals, reverse=True)
    assert plan[0].cost > plan[-1].cost and plan[-1].cost <= 2 * ROW_S  # small pieces at the end
    assert any(c.count > 1 for c in plan)
    # a group larger than the GPUs' share of the work is spread from the start
    dominant = plan_chunks([[1.0] * 40, [1.0] * 5, [1.0] * 5], 4)
    assert dominant[0].group == 0 and dominant[0].count >= 4


def test_groups_named_whole_stay_whole():
    costs = [[1.0] * 8, [1.0] * 8]
    plan = plan_chunks(costs, 4, whole=[1])
    assert [c for c in plan if c.group == 1] == [next(c for c in plan if c.group == 1)]
    assert sum(1 for c in plan if c.group == 0) > 1
    _covers_each_row_once(plan, costs)


def test_pass_through_rows_ride_along_and_never_make_an_empty_chunk():
    costs = [[0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0]]
    plan = plan_chunks(costs, 3)
    _covers_each_row_once(plan, costs)
    assert all(c.cost > 0 for c in plan)


# A set like run 21's: 16 Triton groups of cheap rows, then a CUTLASS group of 16 costly
# rows listed last; and a CUTLASS `llm` set: 6 groups of 16 rows of 2.4 s (runs 24-26).
RUN21_LIKE = [[0.2] * n for n in [16, 16, 12, 12, 10, 10, 9, 9, 8, 8, 6, 6, 4, 2, 4, 2]] + [[1.85] * 16]
CUTLASS_LLM = [[2.4] * 16 for _ in range(6)]
NEW_GROUP_S = 0.3  # a GPU's first chunk of a group: it draws the inputs and computes the references


def _efficiency(costs: list, plan: list, gpus: int) -> float:
    """A perfect split's seconds (every group prepared once) over the simulated wall time."""
    seen = set()

    def new_group(gpu, chunk):
        fresh = (gpu, chunk.group) not in seen
        seen.add((gpu, chunk.group))
        return NEW_GROUP_S if fresh else 0.0
    ideal = (sum(map(sum, costs)) + NEW_GROUP_S * len(costs)) / gpus
    return ideal / max(simulate(plan, [1.0] * gpus, new_group))


@pytest.mark.parametrize("costs,gpus,floor,whole_below", [(RUN21_LIKE, 2, 0.97, 0.7), (RUN21_LIKE, 4, 0.9, 0.45),
                                                          (CUTLASS_LLM, 2, 0.97, 1.01), (CUTLASS_LLM, 4, 0.95, 0.76)])
def test_gpus_pulling_chunks_from_one_queue_finish_together(costs, gpus, floor, whole_below):
    """Chunks pulled from one queue reach >= 97% of a perfect split on 2 GPUs and >= 90%
    on 4 (each GPU preparing every group it takes a chunk of); whole groups pulled in
    their order leave GPUs waiting (run 21's 1.55x on 2 GPUs; 6 groups on 4 GPUs: 3x)."""
    assert _efficiency(costs, plan_chunks(costs, gpus), gpus) >= floor
    assert _efficiency(costs, plan_chunks(costs, 1), gpus) < whole_below


def test_a_slower_gpu_takes_fewer_chunks_and_still_ends_with_the_others():
    costs = [[1.0] * 40, [1.0] * 30, [1.0] * 10]
    ends = simulate(plan_chunks(costs, 2), [1.0, 0.6])
    assert max(ends) - min(ends) <= 2.0  # within two rows of each other
    assert max(ends) <= 80 / 1.6 + 2.0


def _row(name: str, n: int, status: str = "built", provenance=None) -> KernelRecord:
    problem = Problem(f"vadd_{n}", "vector_add", [Buffer("x", "float32", (n,)), Buffer("y", "float32", (n,)),
                                                  Buffer("out", "float32", (n,), role="out")])
    return KernelRecord("g", "ptx", {}, name, "sm_80", ".version 8.0\n", [Launch("k", 1, 32, [])], problem,
                        build_key=name, status=status, provenance=provenance or {})


def test_estimates_grow_with_output_elements_and_trials_and_pass_through_costs_nothing():
    small, large = _row("small", 1024), _row("large", 16 << 20)
    assert estimated_seconds(large, 5, True, 1.0) > 4 * estimated_seconds(small, 5, True, 1.0)
    assert estimated_seconds(large, 5, True, 1.0) > estimated_seconds(large, 2, True, 1.0)
    assert estimated_seconds(small, 5, False, 1.0) < estimated_seconds(small, 5, True, 1.0)
    assert estimated_seconds(_row("failed", 1 << 20, status="build_failed"), 5, True, 1.0) == 0.0


def test_measured_seconds_of_an_earlier_run_replace_the_estimate():
    earlier = [_row("a", 1024, provenance={"verify": {"gpu_seconds": 3.5}}), _row("b", 1024),
               _row("c", 1024, provenance={"verify": {"gpu_seconds": "fast"}})]
    measured = measured_seconds(earlier)
    assert measured == {"a": 3.5}
    costs = row_costs([_row("a", 1024), _row("b", 1024), _row("x", 1, status="build_failed")], measured,
                      lambda row: 5, True, 1.0)
    assert costs[0] == 3.5 and costs[1] == estimated_seconds(_row("b", 1024), 5, True, 1.0) and costs[2] == 0.0


def test_every_chunk_is_taken_once_by_threads_pulling_together():
    plan = plan_chunks([[1.0] * 50, [1.0] * 20, [0.5] * 7], 4)
    queue, taken, lock = ChunkQueue(plan), [], threading.Lock()

    def pull():
        while (chunk := queue.take()) is not None:
            with lock:
                taken.append(chunk)

    threads = [threading.Thread(target=pull) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken, key=plan.index) == plan
    assert queue.take() is None and queue.upcoming(3) == []
    stopped = ChunkQueue(plan)
    stopped.close()
    assert stopped.take() is None
