"""Verify throughput and timing quality on a GPU.

    python benchmarks/verify_throughput.py DATASET --work DIR [--do-bench 24]

1. Throughput: kernels verified (3 trials) and timed per GPU-minute, with the driver's JIT
   only (no assembly pool) and with PTX assembled ahead in a process pool.
2. Repeatability: the same dataset verified twice; median |delta| of per-row median times.
3. Agreement with ``triton.testing.do_bench`` (when triton and torch are importable) on the
   same kernels, launched the same way from the rows.
Prints one table at the end.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dataset_spec.shards import read_records  # noqa: E402
from verify import verify_dataset  # noqa: E402


def timed_verify(dataset, out: Path, **kwargs) -> tuple:
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    summary = verify_dataset(dataset, out, progress=False, **kwargs)
    seconds = time.perf_counter() - start
    rows = [r for r in read_records(out) if r.trials]
    return seconds, rows, summary


def relative_deltas(first: list, second: list) -> list:
    times = {r.build_key: r.time_us_median for r in first if r.status == "passed" and r.time_us_median}
    return [abs(r.time_us_median - times[r.build_key]) / times[r.build_key]
            for r in second if r.build_key in times and r.time_us_median]


def do_bench_times(rows: list, limit: int) -> dict:
    """build_key -> do_bench median (us) for up to ``limit`` passing rows."""
    try:
        import torch
        from triton.testing import do_bench
    except ImportError as exc:
        print(f"do_bench comparison skipped: {exc}")
        return {}
    from verify.args import entry_params, pack_args
    from verify.driver import Context, DeviceBuffer, Module, PreparedLaunch
    from verify.inputs import init_array, make_trial_inputs, poison_array

    ctx = Context(0)
    torch.cuda.init()
    stream = torch.cuda.ExternalStream(int(ctx.stream))
    result = {}
    for row in [r for r in rows if r.status == "passed"][:limit]:
        module = Module.from_ptx(row.ptx)
        trial = make_trial_inputs(row.problem, row.group_id, 0)
        buffers = {}
        for buf in row.buffers():
            device = buffers[buf.name] = DeviceBuffer(buf.nbytes)
            if buf.name in trial.storage:
                device.upload(trial.storage[buf.name])
            elif buf.init is not None:
                device.upload(init_array(buf))
            else:
                device.upload(poison_array(buf.dtype, buf.shape))
        addresses = {name: b.address for name, b in buffers.items()}
        launches = []
        for launch in row.launches:
            packed = pack_args(launch, addresses, entry_params(row.ptx, launch.entry))
            launches.append(PreparedLaunch(module.function(launch.entry), launch.grid, launch.block,
                                           packed.buffer, packed.offsets, ctx.stream,
                                           launch.cluster, launch.dynamic_smem))

        def run():
            for launch in launches:
                launch.enqueue()

        with torch.cuda.stream(stream):
            result[row.build_key] = 1000.0 * do_bench(run, warmup=25, rep=200, return_mode="median")
        ctx.synchronize()
        for b in buffers.values():
            b.free()
        module.unload()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--work", required=True, help="scratch folder for the verified copies")
    parser.add_argument("--do-bench", type=int, default=24, help="rows to compare with do_bench")
    parser.add_argument("--groups", default=None)
    args = parser.parse_args()
    work = Path(args.work)
    common = dict(groups=args.groups, trials=3, timing=True)

    jit_s, jit_rows, _ = timed_verify(args.dataset, work / "jit", assemble_jobs=0, **common)
    pool_s, pool_rows, summary = timed_verify(args.dataset, work / "pool", **common)
    again_s, again_rows, _ = timed_verify(args.dataset, work / "again", **common)
    deltas = relative_deltas(pool_rows, again_rows)
    bench = do_bench_times(pool_rows, args.do_bench)
    ours = {r.build_key: r for r in pool_rows}
    ratios = [ours[k].time_us_median / v for k, v in bench.items() if ours[k].time_us_median]
    big = [ours[k].time_us_median / v for k, v in bench.items() if v >= 10.0]

    print(summary.format())
    print("\n| measure | value |\n|---|---|")
    print(f"| GPU | {summary.gpu_name} |")
    print(f"| rows verified + timed | {len(pool_rows)} |")
    print(f"| kernels / GPU-minute, driver JIT only | {len(jit_rows) / jit_s * 60:.1f} ({jit_s:.1f} s) |")
    print(f"| kernels / GPU-minute, assembly pool | {len(pool_rows) / pool_s * 60:.1f} ({pool_s:.1f} s) |")
    print(f"| kernels / GPU-minute, assembly pool, 2nd run | {len(again_rows) / again_s * 60:.1f} |")
    if deltas:
        print(f"| run-to-run median abs delta of median time | {100 * statistics.median(deltas):.2f}% "
              f"(max {100 * max(deltas):.2f}%, {len(deltas)} rows) |")
    if ratios:
        print(f"| ours / do_bench, median ratio (all {len(ratios)}) | {statistics.median(ratios):.3f} "
              f"(range {min(ratios):.3f}-{max(ratios):.3f}) |")
    if big:
        print(f"| ours / do_bench, kernels >= 10 us ({len(big)}) | median {statistics.median(big):.3f}, "
              f"worst {max(big, key=lambda x: abs(x - 1)):.3f} |")


if __name__ == "__main__":
    main()
