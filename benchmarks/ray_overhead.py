"""Overhead of the Ray executor against the local one, on the same build.

Builds one source twice from cold compile caches -- local processes, then Ray tasks on a
local Ray with the same number of CPUs -- checks that the rows are equal, and prints wall
times and kernels per minute as a markdown table (Ray's start-up reported on its own line).

    python benchmarks/ray_overhead.py --source triton --cpus 2 --work /tmp/ray-overhead
"""
from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

from builders.base import BuildOptions
from dataset_spec.store.shards import read_records
from ptxds.executors import make_executor
from ptxds.pipeline import run_build


def rows(folder) -> set:
    return {(r.build_key, r.kernel_id, r.ptx_hash) for r in read_records(folder)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="triton")
    parser.add_argument("--arch", default="sm_80,sm_90a")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ray-overhead"))
    parser.add_argument("--ray-first", action="store_true", help="run Ray before local (for a shared machine)")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    options = BuildOptions(archs=args.arch.split(","), limit=args.limit)

    def build_local():
        return run_build(args.source, args.work / "local", options, jobs=args.cpus, progress=False,
                         cache_dir=args.work / "cache-local")

    def build_on_ray():
        import ray
        start = time.time()
        ray.init(num_cpus=args.cpus, num_gpus=0, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        startup = time.time() - start
        summary = run_build(args.source, args.work / "ray", options, executor=make_executor("ray"),
                            progress=False, cache_dir=args.work / "cache-ray")
        ray.shutdown()
        return summary, startup

    if args.ray_first:
        on_ray, startup = build_on_ray()
        local = build_local()
    else:
        local = build_local()
        on_ray, startup = build_on_ray()
    results = [("local", args.cpus, local), ("ray", args.cpus, on_ray)]

    same = rows(args.work / "local") == rows(args.work / "ray")
    print(f"\n{args.source}, {local.rows_written} rows, cold caches; rows equal: {same}")
    print("| executor | CPUs | wall s | kernels/min | vs local |")
    print("|---|---|---|---|---|")
    for name, cpus, summary in results:
        rate = 60 * summary.rows_written / summary.seconds
        print(f"| {name} | {cpus} | {summary.seconds:.1f} | {rate:.0f} | {summary.seconds / local.seconds:.2f}x |")
    print(f"| ray start-up (ray.init, local) | | {startup:.1f} | | |")


if __name__ == "__main__":
    main()
