"""Verify throughput and timing quality on a GPU.

    python benchmarks/verify_throughput.py DATASET [DATASET ...] --work DIR [--csv FILE]
    python benchmarks/verify_throughput.py --speed DATASET [DATASET ...] --work DIR [--against NAME=DIR ...]

``--speed``: per dataset, ``ptxds verify`` from scratch (default trials, timing on) twice:
``host`` (numpy's generator, references and bounds on the host: the baseline) and ``auto``
(inputs, references and bounds on the GPU where device_prepare.py can make them), each
printed as rows, wall seconds, rows per minute, the stage seconds verify reports and the
peak RSS of the GPU workers and of this process (getrusage); then the labels of the two
runs are compared row by row: statuses must be identical (the other label columns differ
by construction where the device drew other inputs, and are reported), and with
``--against NAME=DIR`` the statuses and every label column of the host run against a folder
another checkout verified.

Per dataset:
1. Throughput: kernels verified (3 trials) and timed per GPU-minute, with the driver's JIT
   only (no assembly pool) and with PTX assembled ahead in a process pool.
2. Repeatability: the dataset verified again in a new process; |delta| of per-row median
   times, split at 10 us.
Then, over the passing rows of all datasets, agreement with ``triton.testing.do_bench``
(when triton and torch are importable), the rows launched exactly as the verifier does,
with our timing measured again beside it: the primary time (CUPTI kernel durations where
cupti-python works, else CUDA events) and the event time of the same samples, with and
without the stream hold, and with do_bench's 256 MB zero flush.
Prints one table at the end; ``--csv`` keeps the per-row numbers.
"""
from __future__ import annotations

import argparse
import csv
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dataset_spec.store.shards import read_records  # noqa: E402
from verify import verify_dataset  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from verify_llm_speed import STATUS_ONLY, differences, differing_columns, labels  # noqa: E402

SMALL_US = 10.0


def timed_verify(dataset, out: Path, **kwargs) -> tuple:
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    summary = verify_dataset(dataset, out, progress=False, **kwargs)
    seconds = time.perf_counter() - start
    rows = [r for r in read_records(out) if r.trials]
    return seconds, rows, summary


def relative_deltas(first: list, second: list) -> dict:
    """build_key -> (median time of the first run, relative |delta| to the second)."""
    times = {r.build_key: r.time_us_median for r in first if r.status == "passed" and r.time_us_median}
    return {r.build_key: (times[r.build_key], abs(r.time_us_median - times[r.build_key]) / times[r.build_key])
            for r in second if r.build_key in times and r.time_us_median}


class ZeroFlush:
    """do_bench's L2 flush: zero a 256 MB buffer before each sample."""

    commands = 1

    def __init__(self, buffer):
        self.buffer = buffer

    def enqueue(self, sample, stream=None):
        self.buffer.fill_bytes(0, stream)


def timing_comparison(rows: list) -> list:
    """Per passing row: do_bench median and our timing (as in verify, without the hold, and
    with do_bench's flush), all in one process on the same loaded row."""
    try:
        import torch
        from triton.testing import do_bench
    except ImportError as exc:
        print(f"do_bench comparison skipped: {exc}")
        return []
    from verify.device.driver import Context, DeviceBuffer
    from verify.device.hold import StreamHold
    from verify.trials.inputs import make_trial_inputs
    from verify.device.kernel_clock import shared_clock
    from verify.member.row import load_row
    from verify.timing.timing import time_launches
    from verify.worker import flush_buffer

    ctx = Context(0)
    torch.cuda.init()
    stream = torch.cuda.ExternalStream(int(ctx.stream))
    flush = flush_buffer(ctx)
    zero_flush = ZeroFlush(DeviceBuffer(256 << 20))
    hold = StreamHold(ctx.stream)
    clock, no_clock_reason = shared_clock()
    if clock is None:
        print(f"CUPTI kernel clock unavailable, CUDA events only: {no_clock_reason}")
    results = []
    for row in rows:
        loaded = load_row(row, ctx.stream)
        # the inputs verify timed the row with: those of its last trial
        loaded.prepare(make_trial_inputs(row.problem, row.group_id, (row.trials or 1) - 1).storage)
        with torch.cuda.stream(stream):
            bench_us = 1000.0 * do_bench(loaded.enqueue, warmup=25, rep=200, return_mode="median")
        clock_args = {"kernel_clock": clock, "no_clock_reason": no_clock_reason}
        ours = time_launches(ctx.stream, loaded.launches, flush, hold=hold, **clock_args)
        ours_no_hold = time_launches(ctx.stream, loaded.launches, flush, **clock_args)
        ours_zero = time_launches(ctx.stream, loaded.launches, zero_flush, hold=hold, **clock_args)
        ctx.synchronize()
        loaded.free()
        results.append({"name": row.name, "group": row.group_id, "verify_us": row.time_us_median,
                        "do_bench_us": bench_us, "ours_us": ours.stats.median_us, "ours_method": ours.method,
                        "ours_events_us": ours.event_stats.median_us,
                        "ours_no_hold_us": ours_no_hold.stats.median_us,
                        "ours_zero256_us": ours_zero.stats.median_us, "samples": ours.stats.samples,
                        "fallback_reason": ours.fallback_reason})
    return results


def _median_pct(values: list) -> str:
    return f"{100 * statistics.median(values):.2f}% (max {100 * max(values):.2f}%, n={len(values)})" if values else "-"


def _ratio(values: list) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.3f} (range {min(values):.3f}-{max(values):.3f}, n={len(values)})"


def speed(datasets: list, work: Path, against: dict) -> bool:
    """The --speed mode; True when every dataset's statuses are identical between modes
    (and against the named folders)."""
    table, same = [], True
    for dataset in datasets:
        name = Path(dataset).name
        folders = {}
        for mode in ("host", "auto"):
            out = work / f"{name}-{mode}"
            seconds, rows, summary = timed_verify(dataset, out, inputs=mode)
            folders[mode] = out
            stages = ", ".join(f"{k} {v:.1f}" for k, v in sorted(summary.stage_seconds.items(), key=lambda kv: -kv[1]))
            workers = "/".join(f"{rss:.0f}" for rss in summary.worker_peak_rss_mib) or "-"
            table.append((name, mode, len(rows), seconds, 60.0 * len(rows) / seconds if seconds else 0.0, workers,
                          summary.parent_peak_rss_mib, stages, summary.gpu_name))
            print(f"{name} {mode}: {len(rows)} rows in {seconds:.1f} s; {summary.format().splitlines()[1]}", flush=True)
        host, auto = labels(folders["host"], STATUS_ONLY), labels(folders["auto"], STATUS_ONLY)
        bad = differences(host, auto)
        same &= not bad
        print(f"{name}: statuses host vs auto: "
              f"{'identical' if not bad else f'{len(bad)} row(s) differ: {bad[:5]}'} ({len(host)} rows)")
        full_host, full_auto = labels(folders["host"]), labels(folders["auto"])
        other = differences(full_host, full_auto)
        columns = sorted(differing_columns(full_host, full_auto, other))
        print(f"{name}: other label columns host vs auto: "
              + ("identical" if not other else f"{len(other)} row(s) differ in {columns} (other inputs)"))
        if name in against:
            for columns, what in ((STATUS_ONLY, "statuses"), (None, "all label columns")):
                mine = labels(folders["host"], *([columns] if columns else []))
                theirs = labels(Path(against[name]), *([columns] if columns else []))
                bad = differences(mine, theirs)
                same &= bool(columns is None or not bad)
                print(f"{name}: {what} host vs {against[name]}: "
                      f"{'identical' if not bad else f'{len(bad)} row(s) differ'}")
    print(f"\n| dataset ({table[0][-1] if table else ''}) | inputs | rows | wall s | rows/min | worker peak RSS MiB | "
          "parent peak RSS MiB | seconds per stage |\n|---|---|---|---|---|---|---|---|")
    for name, mode, rows, seconds, per_min, workers, parent, stages, _ in table:
        print(f"| {name} | {mode} | {rows} | {seconds:.1f} | {per_min:.0f} | {workers} | {parent:.0f} | {stages} |")
    print(f"\nstatuses identical in every comparison: {'yes' if same else 'NO'}")
    return same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--work", required=True, help="scratch folder for the verified copies")
    parser.add_argument("--compare", type=int, default=16, help="rows per dataset compared with do_bench")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--speed", action="store_true",
                        help="rows/min, stages and peak RSS with host and device inputs; labels compared")
    parser.add_argument("--against", action="append", default=[], metavar="NAME=DIR",
                        help="with --speed: a folder another checkout verified from dataset NAME")
    args = parser.parse_args()
    if args.speed:
        against = dict(item.split("=", 1) for item in args.against)
        sys.exit(0 if speed(args.datasets, Path(args.work), against) else 1)
    work = Path(args.work)
    table, compared, gpu = [], [], ""
    for dataset in args.datasets:
        name = Path(dataset).name
        jit_s, jit_rows, _ = timed_verify(dataset, work / f"{name}-jit", assemble_jobs=0)
        pool_s, pool_rows, summary = timed_verify(dataset, work / f"{name}-pool")
        _, again_rows, _ = timed_verify(dataset, work / f"{name}-again")
        gpu = summary.gpu_name
        deltas = relative_deltas(pool_rows, again_rows)
        table.append((f"{name}: kernels / GPU-minute, driver JIT only", f"{len(jit_rows) / jit_s * 60:.1f} ({len(jit_rows)} rows, {jit_s:.1f} s)"))
        table.append((f"{name}: kernels / GPU-minute, assembly pool", f"{len(pool_rows) / pool_s * 60:.1f} ({len(pool_rows)} rows, {pool_s:.1f} s)"))
        table.append((f"{name}: run-to-run median abs delta, rows >= {SMALL_US:g} us", _median_pct([d for t, d in deltas.values() if t >= SMALL_US])))
        table.append((f"{name}: run-to-run median abs delta, rows < {SMALL_US:g} us", _median_pct([d for t, d in deltas.values() if t < SMALL_US])))
        passing = sorted((r for r in pool_rows if r.status == "passed"), key=lambda r: -r.time_us_median)
        half = args.compare // 2
        chosen = passing if len(passing) <= args.compare else passing[:half] + passing[-half:]
        compared += timing_comparison(chosen)
    methods = sorted({r["ours_method"] for r in compared})
    for label, key in (("verify run", "verify_us"), (f"same process, {'/'.join(methods)}", "ours_us"),
                       ("same process, events", "ours_events_us"),
                       ("without the stream hold", "ours_no_hold_us"), ("256 MB zero flush", "ours_zero256_us")):
        for size, test in ((f">= {SMALL_US:g} us", lambda r: r["do_bench_us"] >= SMALL_US),
                           (f"< {SMALL_US:g} us", lambda r: r["do_bench_us"] < SMALL_US)):
            ratios = [r[key] / r["do_bench_us"] for r in compared if test(r)]
            table.append((f"ours / do_bench ({label}), kernels {size}", _ratio(ratios)))
    if args.csv and compared:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(compared[0]))
            writer.writeheader()
            writer.writerows(compared)
    print(f"\n| measure ({gpu}) | value |\n|---|---|")
    for label, value in table:
        print(f"| {label} | {value} |")


if __name__ == "__main__":
    main()
