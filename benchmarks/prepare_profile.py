"""Where a group's preparation spends its time: each distinct problem of a verified or built
dataset prepared as ``ptxds verify`` prepares it (inputs, float64 references, bounds,
coverage; on the judging GPU where prepare_device says so), once to find users' functions'
routes and fill CuPy's kernel cache, then again under cProfile with every trial evaluated
in this thread (so the profile sees all of it). Prints seconds per problem and the functions
with the most cumulative time.

    python benchmarks/prepare_profile.py DATASET [--groups 6] [--top 30]

Without a GPU the problems are prepared on the host (the profile then says where the host
path goes).
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dataset_spec.store.shards import read_records  # noqa: E402
from verify.runner import coverage_of, prepare_device, prepare_problem  # noqa: E402
from verify.trials.inputs import make_trial_inputs  # noqa: E402


class _InThisThread:
    """A stand-in for the trial threads: ``map`` runs here, so cProfile sees it."""

    @staticmethod
    def map(fn, items):
        return list(map(fn, items))


def _drawn_here(problem, group_id: str, trial: int) -> Future:
    """A host-drawn trial, drawn in this thread (as a finished Future)."""
    done = Future()
    done.set_result(make_trial_inputs(problem, group_id, trial))
    return done


def _synchronize():
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    except ImportError:
        pass


def prepare_once(problem, group_id: str, lock) -> tuple:
    """(seconds, device) of one preparation with its coverage measure."""
    device = prepare_device(problem)
    start = time.perf_counter()
    prepared = prepare_problem(problem, group_id, device=device, quiet_gpu=lock, host_trial=_drawn_here,
                               trial_pool=_InThisThread(), measure_coverage=False)
    coverage_of(prepared, lock)
    _synchronize()
    return time.perf_counter() - start, device


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--groups", type=int, default=6)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    problems = {}
    for record in read_records(args.dataset):
        if record.problem is not None and len(problems) < args.groups:
            problems.setdefault((record.group_id, record.problem.digest()), record.problem)
    lock = threading.Lock()
    print(f"{len(problems)} problems of {args.dataset}")
    for (group_id, _), problem in problems.items():
        seconds, device = prepare_once(problem, group_id, lock)
        print(f"  first  {seconds:6.2f} s  {device}  {group_id[:80]}")
    profile = cProfile.Profile()
    total = 0.0
    for (group_id, _), problem in problems.items():
        profile.enable()
        seconds, _ = prepare_once(problem, group_id, lock)
        profile.disable()
        total += seconds
        print(f"  again  {seconds:6.2f} s  {group_id[:80]}")
    print(f"again, all problems: {total:.2f} s")
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(order).print_stats(args.top)
        print("\n".join(line[:160] for line in out.getvalue().splitlines() if line.strip()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
