"""Verify throughput at llm sizes, outputs kept on the GPU against the host path.

    python benchmarks/verify_llm_speed.py DATASET --work DIR [--modes device,host] [--against DIR]

Per mode (device: outputs stay on the GPU, judged there; host: every output downloaded
and piped to the parent), verifies DATASET from scratch (default trials, timing on) and
prints wall seconds, rows per minute, the stage seconds verify reports, the parent's and
the workers' peak RSS, then checks that every mode labels every row the same (status,
message, errors, output hash, agreement) and, with ``--against``, the same as a folder
verified before (another checkout's rows).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dataset_spec.store.shards import read_records  # noqa: E402
from verify import verify_dataset  # noqa: E402

LABELS = ("status", "status_message", "max_abs_err", "max_rel_err", "max_err_ratio", "output_hash", "trials",
          "deterministic", "trial_errors", "max_disagreement")
STATUS_ONLY = ("status",)


def _label(row, column):
    value = getattr(row, column)
    if column == "status_message" and value:  # the timing note differs from run to run, not a label
        value = "; ".join(part for part in value.split("; ") if not part.startswith("timing did not reach"))
    return value


def labels(folder: Path, columns=LABELS) -> dict:
    return {r.build_key: tuple(_label(r, c) for c in columns) for r in read_records(folder)}


def differing_columns(mine: dict, theirs: dict, keys: list) -> set:
    return {LABELS[i] for key in keys if key in mine and key in theirs
            for i, (a, b) in enumerate(zip(mine[key], theirs[key])) if a != b}


def differences(mine: dict, theirs: dict) -> list:
    return [key for key in sorted(set(mine) | set(theirs)) if mine.get(key) != theirs.get(key)]


class WorkerPeak:
    """Peak resident memory (VmHWM) of this process's spawned GPU workers, polled from /proc
    while verify runs (forked helpers share the parent's pages and are left out)."""

    def __init__(self):
        self.peak_kib, self.stop = 0, threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        me = str(os.getpid())
        while not self.stop.wait(0.25):
            for proc in Path("/proc").glob("[0-9]*"):
                try:
                    status = (proc / "status").read_text()
                    if f"PPid:\t{me}\n" not in status or b"spawn_main" not in (proc / "cmdline").read_bytes():
                        continue
                    hwm = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
                    self.peak_kib = max(self.peak_kib, int(hwm.split()[1]))
                except (OSError, StopIteration, ValueError):
                    continue

    def finish(self) -> float:
        self.stop.set()
        self.thread.join()
        return self.peak_kib / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--work", required=True, help="scratch folder for the verified copies")
    parser.add_argument("--modes", default="device,host", help="comma-separated: device, host")
    parser.add_argument("--against", default=None, help="a folder verified before: statuses must match")
    parser.add_argument("--no-timing", action="store_true")
    args = parser.parse_args()
    work = Path(args.work)
    table, folders = [], {}
    for mode in args.modes.split(","):
        out = work / f"verified-{mode}"
        shutil.rmtree(out, ignore_errors=True)
        peak = WorkerPeak()
        start = time.perf_counter()
        summary = verify_dataset(args.dataset, out, progress=False, timing=not args.no_timing,
                                 device_outputs=mode == "device")
        wall = time.perf_counter() - start
        worker_mib = peak.finish()
        rows = sum(summary.counts.values())
        stages = ", ".join(f"{k} {v:.1f}" for k, v in sorted(summary.stage_seconds.items(), key=lambda kv: -kv[1]))
        table.append((mode, rows, wall, 60.0 * rows / wall if wall else 0.0, worker_mib, stages))
        folders[mode] = out
        print(f"{mode}: {summary.format().splitlines()[1]}", flush=True)
    parent_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("\n| mode | rows | wall s | rows/min | worker peak RSS MiB | seconds per stage |\n|---|---|---|---|---|---|")
    for mode, rows, wall, per_min, worker_mib, stages in table:
        print(f"| {mode} | {rows} | {wall:.1f} | {per_min:.0f} | {worker_mib:.0f} | {stages} |")
    print(f"\npeak RSS of the parent over all modes: {parent_rss:.0f} MiB")
    modes = list(folders)
    for other in modes[1:]:
        mine, theirs = labels(folders[modes[0]]), labels(folders[other])
        bad = differences(mine, theirs)
        print(f"labels {modes[0]} vs {other}: "
              f"{'identical' if not bad else f'{len(bad)} row(s) differ in {differing_columns(mine, theirs, bad)}'}")
    if args.against:
        for mode in modes:
            bad = differences(labels(folders[mode], STATUS_ONLY), labels(Path(args.against), STATUS_ONLY))
            print(f"statuses {mode} vs {args.against}: "
                  f"{'identical' if not bad else f'{len(bad)} row(s) differ: {bad[:5]}'}")
            mine, theirs = labels(folders[mode]), labels(Path(args.against))
            full = differences(mine, theirs)
            print(f"  all label columns: "
                  f"{'identical' if not full else f'{len(full)} row(s) differ in {differing_columns(mine, theirs, full)}'}")


if __name__ == "__main__":
    main()
